"""deploy/airflow/README.md's trial, as a new user types it, with a real Airflow.

The first block (standalone.sh on the synthetic site) is started the way a script starts a
service: from a parent shell that ignores SIGINT, with ``setsid ... &``. The second block, read
from the README like the first, runs in a second shell that has only ``HOME`` and a system
``PATH``: it must find the running deployment from ``TIERLENS_HOME`` alone (no ``~/airflow``),
switch both DAGs on and list them. Then the script is stopped once with SIGINT and, started
again on the same home, once with SIGTERM: each time every process it started (scheduler,
DAG processor, API server, triggerer and their workers) is gone within a bounded wait, and the
parent's ``wait`` returns.

The trial's start date is moved to a year that has not come, so switching the DAGs on schedules
nothing: what is checked here is the deployment's plumbing, not a run (test_airflow_standalone.py
runs the scheduled hour).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.airflow import AIRFLOW_VENV
from support.processes import free_port, process_state, started_by, tail
from support.standalone import in_test_paths, paused, readme_block, trial_script

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Longest wait for the DAG processor to store the DAGs after the script starts (busy 2-core host).
STARTED_S = 300
#: Longest wait for every process to be gone after one signal: airflow standalone stops its
#: components with SIGTERM and waits for them; 4 s here when the host is quiet.
STOPPED_S = 60
DAGS = ("tierlens_transform", "tierlens_ingest")
#: A system PATH, as a fresh login or systemd has it: no virtualenv on it.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def start_ignoring_sigint(home: Path, log: Path) -> tuple[subprocess.Popen, int]:
    """The trial block under a parent shell that ignores SIGINT and starts it with ``setsid ... &``;
    returns the parent and the pid of the session the block leads."""
    block = trial_script(home).replace("$(date -u +%F)", "2099-01-01")
    assert "2099-01-01" in block
    env = {
        "HOME": str(home.parent / "user"),
        "PATH": SYSTEM_PATH,
        "AIRFLOW_VENV": str(AIRFLOW_VENV),
        "AIRFLOW__API__PORT": str(free_port()),
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
    }
    parent = f"trap '' INT\nsetsid bash -e -c {shlex.quote(block)} >>{shlex.quote(str(log))} 2>&1 &\necho $!\nwait\n"
    proc = subprocess.Popen(["bash", "-c", parent], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def standalone_pid(session: int) -> int:
    """standalone.sh's process (its exec'd Python running standalone.py) in the trial's session."""
    for pid in sorted(started_by(session)):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if any(a.endswith(b"deploy/airflow/standalone.py") for a in args):
            return pid
    raise AssertionError(f"no standalone.py among {sorted(started_by(session))}")


COMPONENTS = ("scheduler", "dag-processor", "api_server", "triggerer")


def commands(pids: set[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            found.add(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def wait_until_started(db: Path, session: int, log: Path, dags_stored: bool) -> None:
    """Until every component runs (and, when ``dags_stored``, the DAG processor has stored the DAGs)."""

    def started() -> bool:
        running = commands(started_by(session))
        if not all(any(c in cmd for cmd in running) for c in COMPONENTS):
            return False
        return not dags_stored or all(paused(db, dag) is not None for dag in DAGS)

    deadline = time.monotonic() + STARTED_S
    while not started():
        assert process_state(session), f"the trial block exited\n{tail(log)}"
        assert time.monotonic() < deadline, f"not started after {STARTED_S} s\n{tail(log)}"
        time.sleep(1)


def signal_and_wait(parent: subprocess.Popen, session: int, sig: signal.Signals, log: Path) -> set[int]:
    """``sig`` to standalone.sh alone (as kill or systemd sends it); what is still running of the
    session once every process is gone or the wait is over."""
    started = started_by(session)
    os.kill(standalone_pid(session), sig)
    deadline = time.monotonic() + STOPPED_S
    while time.monotonic() < deadline and any(process_state(p) for p in started):
        time.sleep(0.5)
    left = {p for p in started if process_state(p)}
    for pid in left:  # not to leave them running when the test fails
        os.kill(pid, signal.SIGKILL)
    parent.wait(timeout=30)
    return left


def test_trial_blocks_as_written_and_stopped_by_either_signal(tmp_path: Path) -> None:
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        pytest.skip(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make airflow-venv` creates it")
    home = tmp_path / "tierlens"
    user_home = tmp_path / "user"
    user_home.mkdir()
    db = home / "airflow" / "airflow.db"  # standalone.sh's AIRFLOW_HOME under TIERLENS_HOME
    log = tmp_path / "standalone.log"

    parent, session = start_ignoring_sigint(home, log)
    try:
        wait_until_started(db, session, log, dags_stored=True)
        # the second shell: HOME and a system PATH, then only what the block exports
        second = subprocess.run(
            ["bash", "-e", "-c", in_test_paths(readme_block("dags unpause"), home)],
            env={"HOME": str(user_home), "PATH": SYSTEM_PATH, "AIRFLOW_VENV": str(AIRFLOW_VENV)},
            cwd=user_home,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        assert not (user_home / "airflow").exists(), "the second shell made its own ~/airflow"
        assert "airflow db migrate" not in second.stdout + second.stderr
        # what `dags list` printed, and what the scheduler's database says
        listed = {m[0]: m[1] for m in re.findall(r"^(tierlens_\w+)\s*\|.*\|\s*(True|False)\s*\|", second.stdout, re.M)}
        assert {dag: listed.get(dag) for dag in DAGS} == {dag: "False" for dag in DAGS}, second.stdout
        assert [paused(db, dag) for dag in DAGS] == [False, False]
        left = signal_and_wait(parent, session, signal.SIGINT, log)
        assert not left, f"still running {STOPPED_S} s after SIGINT: {sorted(left)}\n{tail(log)}"

        parent, session = start_ignoring_sigint(home, log)
        wait_until_started(db, session, log, dags_stored=False)
        left = signal_and_wait(parent, session, signal.SIGTERM, log)
        assert not left, f"still running {STOPPED_S} s after SIGTERM: {sorted(left)}\n{tail(log)}"
    finally:
        for pid in started_by(session):
            os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=30)
