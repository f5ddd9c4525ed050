"""Shared test set-up.

In CI (CI=true) a skipped test is a failure: an integration test that could not reach its real
component has not shown anything, and CI must not pass on it. Under pytest-xdist (make test runs
two workers) the rule runs in each worker, and the failed report is what the worker sends back.

make test runs the files on two pytest-xdist workers (``--dist loadfile``): one worker runs a
whole file, so its module fixtures are built once, and the files in SHARED_UNITS run together on
one worker. The units go longest first (``--no-loadscope-reorder`` keeps that order) so the two
workers end at about the same time. The units are decided here from the node ids, in the
scheduler, not with ``xdist_group`` marks: pytest-xdist 3.8's loadgroup marks them by rewriting
the node id, which pytest 9.2 no longer reads (pytest-xdist issue 1386), so the groups were split.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# libcachesim (the simulator's exactness reference) registers a pybind11 translator for every
# std::exception. Imported after duckdb, as collecting tests/test_sim_exact.py would, it turns each
# DuckDB error into a bare RuntimeError for the rest of the session, so code catching duckdb.Error
# or duckdb.IOException misbehaves only in the full suite. Imported first, both keep their own.
with contextlib.suppress(ImportError):
    import libcachesim  # noqa: F401

# The Slurm cluster fixtures, shared by every module that needs the real cluster.
# The equivalence fixture (one small site, one full refresh, every other build compared to it).
pytest_plugins = ["slurm_fixtures", "support.equivalence", "support.demo", "support.spark_cluster"]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# Files that share something one process at a time must hold: the session's Slurm clusters, one
# per generation (tests/slurm_fixtures.py), and this host's one installed plugin package (dpkg -i
# and --purge, which also fail on dpkg's lock if two run at once). One worker runs them, in
# pytest's order, which starts each generation's cluster once.
SHARED_UNITS = {
    "tests/test_slurm_cluster.py": "slurm",
    "tests/test_doctor.py": "slurm",
    "tests/test_matrix_slurm.py": "slurm",
    "tests/test_matrix_namespaces.py": "slurm",
    "tests/test_slurm_sacct.py": "slurm",  # its test on a real sacct uses the session's cluster
    "tests/test_slurm_private_tmp.py": "slurm",  # its own cluster, and a tmpfs mounted below /srv
    # the session's equivalence fixture, built once for the three
    "tests/test_incremental_equivalence.py": "equivalence",
    "tests/test_chunk_edges.py": "equivalence",
    "tests/test_faults.py": "equivalence",
    # the session's demo fixture (tests/support/demo.py), built once for the two
    "tests/test_demo_e2e.py": "demo",
    "tests/test_figure_agreement.py": "demo",
}

# Seconds each unit took in a serial `make test` (--durations, setup included, rounded): the order
# the two workers take them in. A unit not named here is short and goes after these, in file order.
LONGEST_FIRST = {
    "equivalence": 620,
    "tests/test_spark_equivalence.py": 680,
    "slurm": 510,
    "tests/test_damaged_state.py": 300,
    "tests/test_upgrade_midhistory.py": 200,
    "tests/test_airflow_standalone.py": 360,
    "tests/test_completeness.py": 280,
    "tests/test_cli_history.py": 400,
    "demo": 260,
    "tests/test_airflow_dags.py": 170,
    "tests/test_collector_live.py": 250,
    "tests/test_dbt_lint.py": 220,
    "tests/test_file_reads_incremental.py": 150,
    "tests/test_incremental_retention.py": 140,
    "tests/test_ingest_empty.py": 120,
    "tests/test_airflow_trial.py": 120,
    "tests/test_install_wheel.py": 185,
    "tests/test_change_effects.py": 175,
    "tests/test_sim_hardware.py": 140,
    "tests/test_full_disk.py": 150,
    "tests/test_lake.py": 125,
    "tests/test_published.py": 100,
    "tests/test_plugin_fuzz.py": 90,
    "tests/test_dbt_project.py": 70,
    "tests/test_probe.py": 60,
    "tests/test_analysis_marts.py": 60,
    "tests/test_condor_history.py": 50,
}


def unit_of(nodeid: str) -> str:
    """The unit of work one worker runs whole: the test's file, or its shared unit."""
    path = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(path, path)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadfile``: xdist's file scheduler, with the files of SHARED_UNITS as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return UnitScheduling(config, log)


# The terminal size a test process started with. Under xdist the workers inherit the controller's
# environment at spawn, and by then the controller's has gained COLUMNS=80 and LINES=24 (a serial
# run has neither); the one rich console then stays 80 wide for the whole worker, and a test that
# gives the CLI a narrower terminal fails. The controller passes its values at start to the workers.
TERMINAL_VARS = ("COLUMNS", "LINES")
_TERMINAL = pytest.StashKey[dict]()


def pytest_configure(config: pytest.Config) -> None:
    given = getattr(config, "workerinput", {}).get("tierlens_terminal")
    if given is None:  # the controller, or a run without xdist
        config.stash[_TERMINAL] = {k: os.environ.get(k) for k in TERMINAL_VARS}
        return
    for k, v in given.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["tierlens_terminal"] = node.config.stash[_TERMINAL]


# Where make test's time goes, per unit: its worker, when it started and ended (seconds after the
# first test began) and its tests' own seconds. LONGEST_FIRST is kept from this table, and the idle
# end of a worker shows as the gap between its last unit and the other's. Collected in the process
# that writes the terminal (the controller under xdist), from the reports' own start/stop times.
@dataclass
class UnitTime:
    worker: str
    first: float
    last: float
    seconds: float = 0.0


_UNIT_TIMES: dict[str, UnitTime] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    times = _UNIT_TIMES
    unit = unit_of(report.nodeid)
    worker = getattr(getattr(report, "node", None), "gateway", None)
    got = times.setdefault(unit, UnitTime(worker.id if worker else "-", report.start, report.stop))
    got.first, got.last = min(got.first, report.start), max(got.last, report.stop)
    got.seconds += report.duration


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    times = _UNIT_TIMES
    if not times or getattr(config, "workerinput", None) is not None:
        return
    began = min(t.first for t in times.values())
    terminalreporter.write_sep("=", "units: worker, start and end (s after the first test), seconds of their tests")
    for unit, t in sorted(times.items(), key=lambda kv: -kv[1].seconds)[:40]:
        terminalreporter.write_line(
            f"{t.seconds:8.1f} s  {t.worker:>4}  {t.first - began:7.0f}-{t.last - began:<7.0f} {unit}"
        )
    for worker in sorted({t.worker for t in times.values()}):
        mine = [t for t in times.values() if t.worker == worker]
        busy = sum(t.seconds for t in mine)
        end = max(t.last for t in mine) - began
        terminalreporter.write_line(
            f"worker {worker}: {len(mine)} units, {busy:.0f} s of tests, last ended at {end:.0f} s"
        )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest units first; a stable sort, after pytest's own ordering by session fixtures, so the
    tests of one unit keep the order that builds each Slurm generation's cluster once."""
    items.sort(key=lambda item: -LONGEST_FIRST.get(unit_of(item.nodeid), 0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"
    if report.failed:
        _attach_cluster_logs(item, report)


KEPT_LOGS = Path("/var/tmp/tierlens-failed-test-logs")


def _attach_cluster_logs(item: pytest.Item, report: pytest.TestReport) -> None:
    """A failing test on a local Slurm cluster shows its daemons' last log lines, and keeps the
    whole log folder under KEPT_LOGS: the cluster's own folder is gone once the session ends, and
    the failures it explains (accounting lag, a plugin that did not run) seldom come back on demand."""
    cluster = getattr(item, "funcargs", {}).get("cluster")
    logs = getattr(cluster, "workdir", None)
    if logs is None or not (logs := Path(logs) / "log").is_dir():
        return
    kept = KEPT_LOGS / re.sub(r"[^\w.-]+", "_", f"{item.nodeid}-{report.when}-{int(time.time())}")
    shutil.copytree(logs, kept, dirs_exist_ok=True)
    for name in ("slurmdbd.log", "slurmctld.log", "slurmd.log"):
        log = logs / name
        if log.is_file():
            tail = log.read_text(errors="replace").splitlines()[-40:]
            report.sections.append((f"{name} (last 40 lines; all logs kept in {kept})", "\n".join(tail)))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """No test writes to the developer's own tierlens home."""
    monkeypatch.setenv("TIERLENS_HOME", str(tmp_path / "tierlens-home"))
    monkeypatch.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
