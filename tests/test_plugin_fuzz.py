"""The Slurm plugin's own input under libFuzzer, AddressSanitizer and UBSan (plugins/slurm/fuzz/).

Every input that once crashed or hung a target (fuzz/regressions/) and every seed (fuzz/corpus/)
must run clean, and each target is fuzzed for a bounded time (TIERLENS_FUZZ_SECONDS, 20 s by
default) without a crash, a sanitizer report, a leak or a timeout. The runs print libFuzzer's
figures (executions, coverage, peak RSS).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugins" / "slurm"
FUZZ = PLUGIN / "fuzz"
TARGETS = ("fuzz_options", "fuzz_namespace_conf", "fuzz_mountinfo", "fuzz_sysfs")
SECONDS = int(os.environ.get("TIERLENS_FUZZ_SECONDS", "20"))
TEMPLATE = REPO / "tests" / "vectors" / "slurm_dmcrypt_on_md_raid6" / "root"


def _clang() -> str | None:
    return shutil.which("clang-14") or shutil.which("clang")


@pytest.fixture(scope="module")
def fuzzers(tmp_path_factory) -> Path:
    if not _clang() or not shutil.which("make"):
        pytest.skip("needs clang-14 and libclang-rt-14-dev (deploy/ci/system-packages.txt)")
    out = tmp_path_factory.mktemp("fuzz")
    r = subprocess.run(["make", "-C", str(PLUGIN), f"BUILD={out}", "fuzz"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _run(binary: Path, args: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        TL_FUZZ_TEMPLATE=str(TEMPLATE),
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1",
    )
    # libFuzzer's -rss_limit_mb reads getrusage's peak RSS, which Linux carries over an exec from the
    # forking process: started straight from a pytest that has grown past 2 GB, every target "runs out
    # of memory" on its first input. A shell that forks (not execs) the target gives it its own peak.
    with subprocess.Popen(
        ["sh", "-c", '"$0" "$@"; exit $?', str(binary), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the target too, not only its shell
            raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_every_target_has_seeds():
    for t in TARGETS:
        assert list((FUZZ / "corpus" / t).iterdir()), t
    assert list((FUZZ / "regressions").glob("*/*")), "the inputs that once crashed are kept"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("target", TARGETS)
def test_seeds_and_regressions_run_clean(fuzzers, target, tmp_path):
    inputs = sorted((FUZZ / "corpus" / target).iterdir()) + sorted((FUZZ / "regressions" / target).glob("*"))
    r = _run(fuzzers / target, ["-timeout=10", "-rss_limit_mb=2048", *map(str, inputs)], tmp_path, 300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "ERROR" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]


@pytest.mark.timeout(SECONDS * 4 + 300)
@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_for_a_bounded_time(fuzzers, target, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    regressions = FUZZ / "regressions" / target
    args = [
        f"-max_total_time={SECONDS}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=8192",
        "-print_final_stats=1",
        f"-artifact_prefix={tmp_path}/crash-",
        str(corpus),
        str(FUZZ / "corpus" / target),
    ]
    if regressions.is_dir():
        args.append(str(regressions))
    r = _run(fuzzers / target, args, tmp_path, SECONDS * 4 + 240)
    stats = [line for line in r.stderr.splitlines() if line.startswith("stat::")]
    print(target, *stats, sep="\n  ")
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert r.returncode == 0 and not crashes, f"{crashes}\n{r.stderr[-6000:]}"
    executed = next(int(s.split()[-1]) for s in stats if s.startswith("stat::number_of_executed_units"))
    assert executed > 0
