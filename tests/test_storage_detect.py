"""The storage detector against the shared vectors (tests/vectors/, format in its README).

The detector is the one in plugins/htcondor/tierlens_startd_cron.py, the file deployed to the
execution points; the Slurm plugin's C detector is checked against the same folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tierlens.probe.detect import CRON_SCRIPT, Detection, detect
from tierlens.records import STORAGE_TYPES

VECTORS = Path(__file__).parent / "vectors"
CASES = sorted(p.name for p in VECTORS.iterdir() if (p / "case.json").is_file())


def test_there_are_enough_vectors():
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES)
def test_vector(case):
    spec = json.loads((VECTORS / case / "case.json").read_text())
    expected = spec["expected"]
    assert expected["storage_type"] in STORAGE_TYPES
    got = detect(spec["scratch"], str(VECTORS / case / "root"))
    assert isinstance(got, Detection)
    assert got.storage_type == expected["storage_type"], spec.get("description")
    assert list(got.device_models) == expected["device_models"], spec.get("description")


def test_vector_symlinks_are_relative():
    for dirpath, dirnames, filenames in os.walk(VECTORS):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                assert not os.path.isabs(os.readlink(p)), p


def test_never_raises_on_nonsense(tmp_path):
    assert detect("/scratch", str(tmp_path / "does-not-exist")).storage_type == "other"
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_bytes(b"\xff\xfe\x00garbage\n")
    assert detect("relative/path", str(tmp_path)).storage_type == "other"
    assert detect("", str(tmp_path)).storage_type == "other"


def test_symlink_loop_in_scratch_gives_other(tmp_path):
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text("21 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    assert detect("/a/x", str(tmp_path)).storage_type == "other"


def test_live_system_gives_a_known_type():
    assert detect("/tmp").storage_type in STORAGE_TYPES


def test_statfs_fallback_reads_the_live_magic():
    from tierlens.probe.detect import cron

    # /proc is procfs (0x9fa0): not a scratch type, so 'other'; /dev/shm is usually tmpfs.
    assert cron._statfs_type("/proc") == "other"
    if os.path.ismount("/dev/shm"):
        assert cron._statfs_type("/dev/shm") in ("tmpfs", "other")


def test_cron_script_runs_with_the_standard_library_only(tmp_path):
    """The script as the startd runs it: a fresh interpreter, no tierlens, no site-packages."""
    case = VECTORS / "md_raid0_hdd_partitions"
    out = subprocess.run(
        [
            sys.executable,
            "-S",
            "-I",
            str(CRON_SCRIPT),
            "--scratch",
            "/scratch",
            "--ab-arm",
            "B",
            "--cache-route",
            "cache:xcache01:1094",
            "--slots",
            "64",
            "--root",
            str(case / "root"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    import classad2

    lines = out.stdout.splitlines()
    assert lines[-1] == "-"
    ad = classad2.parseOne("\n".join(lines[:-1]))
    assert ad["TierlensStorageType"] == "raid0"
    assert list(ad["TierlensScratchDevices"]) == ["ST2000NM0055-1V4104", "WDC WD2003FZEX-00SRLA0"]
    assert ad["TierlensAbArm"] == "B"
    assert ad["TierlensCacheRoute"] == "cache:xcache01:1094"
    assert ad["TierlensNodeSlots"] == 64
    assert ad["TierlensScratchPath"] == "/scratch"


def test_cron_script_output_survives_odd_strings():
    import classad2

    from tierlens.probe.detect import classad_lines

    d = Detection("ssd", ['Odd "model" \\ with ü\n'], "xfs", "/dev/sdb")
    lines = classad_lines(d, "/scr atch", None, None, 4)
    ad = classad2.parseOne("\n".join(lines[:-1]))
    assert list(ad["TierlensScratchDevices"]) == ['Odd "model" / with ü ']
    assert ad["TierlensScratchPath"] == "/scr atch"
    assert ad.eval("TierlensAbArm") is classad2.Value.Undefined


def test_cron_script_exits_zero_on_bad_arguments():
    out = subprocess.run(
        [sys.executable, "-S", "-I", str(CRON_SCRIPT), "--slots"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == 'TierlensStorageType = "other"'
    assert out.stdout.splitlines()[-1] == "-"


# ---- the Slurm plugin's private /tmp (job_container/tmpfs, namespace/tmpfs, namespace/linux) -----
# Inside the job's namespace the mount table already names the storage behind /tmp (the vectors
# slurm_private_tmp_* above, both detectors). A SPANK hook outside it sees the node's /tmp, so the
# C plugin reads Slurm's namespace configuration: these cases (plugins/slurm/tests/data/private/)
# hold a fake root with the configuration, the job's directory under the base path and the
# node's mount table, and what the plugin must decide.
REPO = Path(__file__).resolve().parents[1]
PRIVATE = REPO / "plugins" / "slurm" / "tests" / "data" / "private"
PRIVATE_CASES = sorted(p.name for p in PRIVATE.iterdir() if (p / "case.json").is_file())


@pytest.fixture(scope="module")
def tl_test(tmp_path_factory) -> Path:
    """The plugin's C test driver; needs only a C compiler (not Slurm's headers)."""
    import shutil

    for tool in ("gcc", "make"):
        if not shutil.which(tool):
            pytest.skip(f"needs {tool} (deploy/ci/system-packages.txt)")
    out = tmp_path_factory.mktemp("tl-test")
    r = subprocess.run(
        ["make", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={out}", f"{out}/tl_test"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "tl_test"


def test_there_are_private_tmp_cases():
    assert len(PRIVATE_CASES) >= 8


@pytest.mark.parametrize("case", PRIVATE_CASES)
def test_private_tmp_is_the_storage_behind_it(tl_test, case):
    spec = json.loads((PRIVATE / case / "case.json").read_text())
    r = subprocess.run(
        [
            str(tl_test),
            "private",
            str(PRIVATE / case / "root"),
            spec["conf_dir"],
            spec["scratch"],
            str(spec["job_id"]),
            spec["node"],
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = spec["expected"]
    assert (got["kind"], got["backing"]) == (want["kind"], want["backing"]), spec["description"]
    assert (got["storage_type"], got["device_models"]) == (want["storage_type"], want["device_models"])
    if want["kind"] == 2:  # the answer is the detection of the backing directory, in both detectors
        py = detect(want["backing"], str(PRIVATE / case / "root"))
        assert (py.storage_type, list(py.device_models)) == (want["storage_type"], want["device_models"])
    if want["kind"] == 0:  # not private: what the mount table says of the scratch path itself
        py = detect(spec["scratch"], str(PRIVATE / case / "root"))
        assert (py.storage_type, list(py.device_models)) == (want["storage_type"], want["device_models"])


def test_private_tmp_case_symlinks_are_relative():
    for dirpath, dirnames, filenames in os.walk(PRIVATE):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                assert not os.path.isabs(os.readlink(p)), p
