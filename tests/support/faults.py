"""Killing tierlens at random points: the machinery the fault tests and bench/fault_soak.py share.

A step runs as a child process in its own process group, so a SIGKILL takes dbt (which tierlens
starts as its own child) down with it, as a crash of the machine or an OOM kill of the group would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

#: the tierlens command of the running virtualenv
TIERLENS = [str(Path(sys.executable).parent / "tierlens")]
#: a step left unkilled that has not finished in this long is hung, not slow
STEP_TIMEOUT_SECONDS = 1800.0


#: dbt's own setting (``--exclude-resource-type``, read from the environment of the dbt that
#: tierlens starts): a build of the models and seeds without the project's data and unit tests
WITHOUT_DBT_TESTS = {"DBT_EXCLUDE_RESOURCE_TYPES": "test unit_test"}


def tierlens_env(home: Path, dbt_tests: bool = True) -> dict[str, str]:
    """The environment of a tierlens command whose home (dbt state, history) is ``home``.

    ``dbt_tests=False``: its transforms build without the dbt project's tests. For a test whose
    claim is that tables equal others': dbt's tests only read the tables (no test stores its
    failures, dbt/dbt_project.yml), so the tables are the same, and a build skips ~680 queries.
    tests/test_dbt_project.py and the hourly tests keep running them."""
    env = dict(os.environ, TIERLENS_HOME=str(home))
    return env if dbt_tests else env | WITHOUT_DBT_TESTS


def run_step(argv: list[str], env: dict[str, str], kill_after: float | None = None) -> tuple[str, float]:
    """Run ``argv`` in its own process group; SIGKILL the group after ``kill_after`` seconds.
    Returns ("ok" | "killed" | "finished-before-kill" | "failed (code): output", seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=STEP_TIMEOUT_SECONDS if kill_after is None else kill_after)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return ("killed" if kill_after is not None else "failed (timeout)"), time.perf_counter() - start
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return f"failed ({proc.returncode}): {out.decode(errors='replace')[-2000:]}", seconds
    return ("finished-before-kill" if kill_after is not None else "ok"), seconds


@dataclass
class KillTally:
    """Kill points tried, and how many hit a running step (a kill after the step ended is tried,
    not landed), per step name."""

    tried: int = 0
    landed: dict[str, int] = field(default_factory=dict)
    finished_before_kill: int = 0
    failures: list[str] = field(default_factory=list)
    #: seconds spent in the killed runs, per step name (what the faults cost the fixture)
    seconds: dict[str, float] = field(default_factory=dict)

    def kill(self, name: str, argv: list[str], env: dict[str, str], after: float) -> None:
        """One kill point: ``argv`` SIGKILLed ``after`` seconds in (a failure is recorded, not raised)."""
        self.tried += 1
        status, took = run_step(argv, env, kill_after=after)
        self.seconds[name] = self.seconds.get(name, 0.0) + took
        if status == "killed":
            self.landed[name] = self.landed.get(name, 0) + 1
        elif status == "finished-before-kill":
            self.finished_before_kill += 1
        else:
            self.failures.append(f"{name} (killed after {after:.1f} s): {status[:500]}")


def raw_duplicates(warehouse: Path) -> dict[str, int]:
    """Natural keys held more than once, per raw table ({} when every record is held once)."""
    from tierlens.records import SPECS

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        out = {}
        for spec in SPECS.values():
            key = ", ".join(spec.natural_key)
            n = con.execute(
                f"SELECT count(*) FROM (SELECT {key} FROM {spec.kind.table} GROUP BY ALL HAVING count(*) > 1)"
            ).fetchone()[0]
            if n:
                out[spec.kind.table] = n
        return out
    finally:
        con.close()
