"""Shared test set-up.

In CI (CI=true) a skipped test is a failure: an integration test that could not reach its real
component has not shown anything, and CI must not pass on it.
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
