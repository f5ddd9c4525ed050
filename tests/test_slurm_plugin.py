"""The Slurm SPANK plugin's C code: it builds against spank.h with -Werror, exports the SPANK
entry points, and its detector passes every shared vector (tests/vectors/) under valgrind with
no error and no leak; its unit tests (arm hash, XRD_MONINFO, JSON, safe spool writes) too."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tierlens.sources.slurm.spool import arm_for_job

REPO = Path(__file__).resolve().parents[1]
PLUGIN_DIR = REPO / "plugins" / "slurm"
VECTORS = REPO / "tests" / "vectors"
CASES = sorted(p.name for p in VECTORS.iterdir() if (p / "case.json").is_file())
VALGRIND = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=all", "--quiet"]


def _need(*tools: str) -> None:
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (deploy/ci/system-packages.txt)")


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    _need("gcc", "make")
    if not Path("/usr/include/slurm/spank.h").exists():
        pytest.skip("needs /usr/include/slurm/spank.h (libslurm-dev)")
    out = tmp_path_factory.mktemp("slurm-build")
    r = subprocess.run(["make", "-C", str(PLUGIN_DIR), f"BUILD={out}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_plugin_exports_the_spank_entry_points(build):
    syms = subprocess.run(
        ["nm", "-D", "--defined-only", str(build / "tierlens_spank.so")], capture_output=True, text=True, check=True
    ).stdout
    for name in (
        "plugin_name",
        "plugin_type",
        "plugin_version",
        "slurm_spank_init",
        "slurm_spank_user_init",
        "slurm_spank_task_post_fork",
        "slurm_spank_exit",
    ):
        assert f" {name}\n" in syms, name
    undefined = subprocess.run(
        ["nm", "-D", "--undefined-only", str(build / "tierlens_spank.so")], capture_output=True, text=True, check=True
    ).stdout
    assert "malloc" not in undefined and "calloc" not in undefined, "the plugin allocates nothing"


def test_c_unit_tests_under_valgrind(build):
    _need("valgrind")
    r = subprocess.run([*VALGRIND, str(build / "tl_test"), "unit"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all unit checks passed" in r.stdout


@pytest.mark.parametrize("case", CASES)
def test_c_detector_vector_under_valgrind(build, case):
    _need("valgrind")
    spec = json.loads((VECTORS / case / "case.json").read_text())
    r = subprocess.run(
        [*VALGRIND, str(build / "tl_test"), "detect", str(VECTORS / case / "root"), spec["scratch"]],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["storage_type"] == spec["expected"]["storage_type"], (spec["description"], got)
    assert got["device_models"] == spec["expected"]["device_models"], (spec["description"], got)


def test_c_detector_on_the_live_system_agrees_with_statfs_types(build):
    """/dev/shm is tmpfs on every Linux; /proc is not a block device: never a crash."""
    for path, expected in (("/dev/shm", "tmpfs"), ("/proc/self", "other")):
        r = subprocess.run([str(build / "tl_test"), "detect", "/", path], capture_output=True, text=True)
        assert r.returncode == 0 and json.loads(r.stdout)["storage_type"] == expected


def test_arm_hash_is_the_same_in_c_and_python(build):
    """arm=hash:A,B,C in the plugin and arm_for_job() in Python pick the same arm for every job."""
    ids = [str(i) for i in range(1, 200)] + ["4294967294", "123456789"]
    for n in (2, 3):
        r = subprocess.run([str(build / "tl_test"), "arm", str(n), *ids], capture_output=True, text=True, check=True)
        arms = [chr(ord("A") + k) for k in range(n)]
        assert [arms[int(x)] for x in r.stdout.split()] == [arm_for_job(i, arms) for i in ids]
    # both arms occur: a hashed trial really splits the jobs
    assert {arm_for_job(i, ["A", "B"]) for i in ids} == {"A", "B"}
