"""Shared test set-up.

In CI (CI=true) a skipped test is a failure: an integration test that could not reach its real
component has not shown anything, and CI must not pass on it. Under pytest-xdist (make test runs
two workers) the rule runs in each worker, and the failed report is what the worker sends back.

make test runs the files on two pytest-xdist workers with ``--dist loadgroup``: every test file is
its own group (one worker runs it, so its module fixtures are built once), unless its tests carry an
explicit ``xdist_group`` mark: "slurm" holds everything that starts the session's Slurm clusters or
installs the plugin's package on the host (one package, one worker). The groups run longest
first (``--no-loadscope-reorder`` keeps this order) so both workers end at about the same time.
"""

from __future__ import annotations

import contextlib
import os

import pytest

# libcachesim (the simulator's exactness reference) registers a pybind11 translator for every
# std::exception. Imported after duckdb, as collecting tests/test_sim_exact.py would, it turns each
# DuckDB error into a bare RuntimeError for the rest of the session, so code catching duckdb.Error
# or duckdb.IOException misbehaves only in the full suite. Imported first, both keep their own.
with contextlib.suppress(ImportError):
    import libcachesim  # noqa: F401

# The Slurm cluster fixtures, shared by every module that needs the real cluster.
pytest_plugins = ["slurm_fixtures"]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# Seconds each group took in a serial `make test` (--durations, setup included, rounded): the order
# the two workers take them in. A group not named here is short and goes after these, in file order.
LONGEST_FIRST = {
    "tests/test_spark_equivalence.py": 650,
    "slurm": 600,
    "tests/test_incremental_equivalence.py": 370,
    "tests/test_airflow_standalone.py": 350,
    "tests/test_completeness.py": 330,
    "tests/test_cli_history.py": 270,
    "tests/test_demo_e2e.py": 240,
    "tests/test_airflow_dags.py": 200,
    "tests/test_install_wheel.py": 185,
    "tests/test_change_effects.py": 175,
    "tests/test_sim_hardware.py": 140,
    "tests/test_published.py": 100,
    "tests/test_plugin_fuzz.py": 90,
    "tests/test_dbt_project.py": 70,
    "tests/test_probe.py": 60,
    "tests/test_analysis_marts.py": 60,
    "tests/test_condor_history.py": 50,
}


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark else item.nodeid.split("::")[0]


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test without an explicit xdist_group runs in its file's group (xdist reads the mark later)."""
    if item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest groups first; a stable sort, after pytest's own ordering by session fixtures, so the
    tests of one group keep the order that builds each Slurm generation's cluster once."""
    items.sort(key=lambda item: -LONGEST_FIRST.get(_group(item), 0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """No test writes to the developer's own tierlens home."""
    monkeypatch.setenv("TIERLENS_HOME", str(tmp_path / "tierlens-home"))
    monkeypatch.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
