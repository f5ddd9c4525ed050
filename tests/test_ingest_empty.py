"""An ingest interval that loads nothing says so and why (task log and the task's result), and the
synthetic site starts where the schedule does, so the deploy README's example loads data."""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta, timezone

import duckdb
import pyarrow.compute as pc
import pytest

from support.dbt import run_dbt
from tierlens.ingest import slurm, synthetic, xrootd
from tierlens.orchestration.settings import setting
from tierlens.sources.synthetic.generate import generate
from tierlens.sources.synthetic.stored import synthetic_options

DAY = datetime(2026, 11, 20, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def options():
    return synthetic_options(DAY.date().isoformat(), days=1, seed=3, nodes_per_type=1)


#: the same simulation as the interval load's options
SOURCE = synthetic.SyntheticSourceOptions(DAY.date().isoformat(), days=1, seed=3, nodes_per_type=1)


def _jobs_ending(options, start: datetime, end: datetime) -> int:
    """Jobs (and steps) of the simulation ending in [start, end), counted from the generator."""
    n = 0
    for b in generate(options):
        if b.kind.value == "job":
            col = b.table["end_time"]
            n += (
                pc.sum(
                    pc.fill_null(pc.and_(pc.greater_equal(col, start), pc.less(col, end)), False).cast("int64")
                ).as_py()
                or 0
            )
    return n


def test_synthetic_start_follows_start_date_unless_set(monkeypatch):
    monkeypatch.delenv("TIERLENS_SYNTHETIC_START", raising=False)
    assert setting("synthetic_start") == ""  # the DAG then uses start_date
    monkeypatch.setenv("TIERLENS_SYNTHETIC_START", "2026-10-01")
    assert setting("synthetic_start") == "2026-10-01"


def test_the_first_hour_of_the_synthetic_site_loads_and_an_hour_outside_says_why(tmp_path, options, caplog):
    wh, cache = tmp_path / "warehouse.duckdb", tmp_path / "synthetic"
    first = (DAY, DAY + timedelta(hours=1))
    caplog.set_level(logging.INFO, logger="tierlens.ingest")
    source = dataclasses.replace(SOURCE, cache_dir=str(cache))
    loaded = synthetic.load_interval(wh, *first, source)
    expected = _jobs_ending(options, *first)
    assert expected > 0 and loaded["rows_loaded"]["job"] == expected and "loaded_nothing" not in loaded
    con = duckdb.connect(str(wh), read_only=True)
    assert con.execute("SELECT count(*) FROM raw_job").fetchone()[0] == expected
    con.close()

    before = (DAY - timedelta(days=2), DAY - timedelta(days=2) + timedelta(hours=1))
    empty = synthetic.load_interval(wh, *before, source)
    assert "outside its window" in empty["loaded_nothing"] and "2026-11-20 00:00" in empty["loaded_nothing"]
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "synthetic loaded nothing" in warned[0].getMessage()
    assert "outside its window" in warned[0].getMessage()

    # the warehouse keeps both intervals, and data_completeness counts the empty one by its reason
    con = duckdb.connect(str(wh), read_only=True)
    kept = con.execute(
        "SELECT interval_start, records, outcome, reason FROM raw_source_interval ORDER BY interval_start"
    ).fetchall()
    con.close()
    brought = sum(n for kind, n in loaded["rows_in"].items() if kind in ("job", "job_tag", "file_access"))
    assert brought > expected  # the jobs, their tags and their accesses
    assert [(r[0], r[1], r[2]) for r in kept] == [(before[0], 0, "outside_window"), (first[0], brought, "loaded")]
    assert kept[0][3] == empty["loaded_nothing"]
    proc = run_dbt(wh, tmp_path / "dbt", "build", "--select", "+data_completeness", "--indirect-selection", "cautious")
    assert proc.returncode == 0, proc.stdout[-5000:]
    con = duckdb.connect(str(wh), read_only=True)
    rows = con.execute(
        "SELECT day, subject, detail, numerator, denominator FROM marts.data_completeness "
        "WHERE measure = 'intervals_loaded_nothing'"
    ).fetchall()
    con.close()
    assert rows == [(before[0].date(), "synthetic", "outside_window", 1, 1)]


def test_an_xrootd_folder_missing_or_empty_is_named(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    folder = tmp_path / "batches"
    missing = xrootd.load_interval(wh, DAY, DAY + timedelta(hours=1), xrootd.XrootdOptions(str(folder)))
    assert f"no folder {folder}" in missing["loaded_nothing"]
    folder.mkdir()
    empty = xrootd.load_interval(wh, DAY, DAY + timedelta(hours=1), xrootd.XrootdOptions(str(folder)))
    assert "no file_access-*.parquet files" in empty["loaded_nothing"] and str(folder) in empty["loaded_nothing"]
    con = duckdb.connect(str(wh), read_only=True)
    assert con.execute("SELECT source, outcome, reason FROM raw_source_interval").fetchall() == [
        ("xrootd", "not_found", empty["loaded_nothing"])
    ]  # the rerun of the interval replaced its row
    con.close()


def test_a_source_that_cannot_be_read_is_recorded_unreachable_and_fails(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    with pytest.raises(Exception) as failed:
        options = slurm.SlurmOptions(sacct=str(tmp_path / "no-such-sacct"))
        slurm.load_interval(wh, DAY, DAY + timedelta(hours=1), options)
    con = duckdb.connect(str(wh), read_only=True)
    kept = con.execute("SELECT source, records, outcome, reason FROM raw_source_interval").fetchall()
    con.close()
    assert len(kept) == 1 and kept[0][:3] == ("slurm", 0, "unreachable") and str(failed.value)[:40] in kept[0][3]
