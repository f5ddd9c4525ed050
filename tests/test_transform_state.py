"""What `tierlens transform` keeps between runs besides the warehouse: dbt's saved parse (which
must not outlive a move of the project) and which tests an hourly run is due to run."""

from __future__ import annotations

import csv
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from tierlens.resources import dbt_project_dir
from tierlens.transform import COLUMN_CHECKS, PARSED_PROJECT_FILE, is_column_check, run_dbt, scope_of_tests

NOW = datetime(2026, 11, 26, 12, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("passed_ago", "every_hours", "expected"),
    [
        (None, 24, "all"),  # never passed: the first run runs every test
        (timedelta(hours=1), 24, "core"),
        (timedelta(hours=23), 24, "core"),
        # hourly runs start a minute or two apart: 23 h 58 min after the last one is its next slot
        (timedelta(hours=23, minutes=58), 24, "all"),
        (timedelta(hours=30), 24, "all"),
        (timedelta(minutes=5), 0, "all"),  # 0: every run runs every test
        (timedelta(hours=2), 1, "all"),
    ],
)
def test_every_test_runs_when_its_interval_is_up(passed_ago, every_hours, expected) -> None:
    passed = None if passed_ago is None else (NOW - passed_ago).isoformat()
    assert scope_of_tests(passed, every_hours, NOW) == expected


def test_column_checks_are_recognised_by_the_name_dbt_gives_them() -> None:
    assert {c: is_column_check(f"test.tierlens.{c}_job_efficiency_job_id.5d17cdab86") for c in COLUMN_CHECKS} == {
        c: True for c in COLUMN_CHECKS
    }
    for other in (
        "test.tierlens.unique_combination_of_columns_job_efficiency_job_id.07c4ef1a9c",
        "test.tierlens.assert_rows_conserved",
        "test.tierlens.relationships_stg_job_tag_node__node.1234",
        "model.tierlens.not_null",
    ):
        assert not is_column_check(other), other


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_a_moved_project_is_parsed_again(tmp_path: Path) -> None:
    """dbt's saved parse holds the project's absolute paths: after the project moves (a new
    checkout, a reinstall elsewhere) the next run must parse again, not look for the old files."""
    first = tmp_path / "install-1" / "dbt"
    shutil.copytree(dbt_project_dir(), first, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    warehouse, state = tmp_path / "warehouse.duckdb", tmp_path / "state"
    duckdb.connect(str(warehouse)).close()

    seeded = run_dbt(warehouse, state, "seed", project_dir=first)
    assert seeded.success, seeded.failures
    assert (state / "target" / "partial_parse.msgpack").exists()

    moved = tmp_path / "install-2" / "dbt"
    moved.parent.mkdir()
    first.rename(moved)  # the old folder is gone, as after an upgrade into a new one
    again = run_dbt(warehouse, state, "seed", project_dir=moved)
    assert again.success, again.failures
    assert str(moved.resolve()) in (state / "target" / PARSED_PROJECT_FILE).read_text()

    with (moved / "seeds" / "storage_catalog.csv").open() as f:
        rows = sum(1 for _ in csv.DictReader(f))
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM seeds.storage_catalog").fetchone()[0] == rows
    finally:
        con.close()


def _parse_lines(state: Path) -> list[str]:
    return [x for x in (state / "logs" / "dbt.log").read_text().splitlines() if "partial pars" in x.lower()]


def test_a_new_home_starts_from_the_hosts_saved_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home's first run takes the parse another home's run left in the host's cache (dbt opens the
    warehouse by its file name in its folder, so the connection dbt hashes is the same), and it
    builds its own warehouse with it; with the cache turned off a home parses the project whole."""
    from tierlens.saved_parse import CACHE_VARIABLE

    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "parse-cache"))
    warehouses = {}
    for site in ("site-a", "site-b", "site-c"):
        path = tmp_path / site / "warehouse.duckdb"
        path.parent.mkdir()
        duckdb.connect(str(path)).close()
        warehouses[site] = path

    def seed(site: str) -> list[str]:
        result = run_dbt(warehouses[site], warehouses[site].parent / "dbt", "seed")
        assert result.success, result.failures
        return _parse_lines(warehouses[site].parent / "dbt")

    first = seed("site-a")
    assert any("saved manifest not found" in x for x in first), first
    second = seed("site-b")
    assert second and not any("Unable to do partial parsing" in x for x in second), second
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    assert any("saved manifest not found" in x for x in seed("site-c")), "the cache turned off"

    with (dbt_project_dir() / "seeds" / "storage_catalog.csv").open() as f:
        rows = sum(1 for _ in csv.DictReader(f))
    for site, path in warehouses.items():  # each run loaded its own warehouse, once
        con = duckdb.connect(str(path), read_only=True)
        try:
            assert con.execute("SELECT count(*) FROM seeds.storage_catalog").fetchone()[0] == rows, site
        finally:
            con.close()
