"""Chunk and history edges: a back-fill's chunk size never changes a table.

The equivalence fixture's site (tests/support/equivalence.py: a month with jobs running across
every day's edge, the first day opening on jobs already running) is rebuilt with all of its history
in one chunk (the reference), with `tierlens transform --full-refresh --days 7`, and, on a copy of
the reference, with a `--backfill` of three days in the middle of history one day per dbt run.
Every intermediate table and mart must hold the same rows (floats within 1e-9 relative); the
hourly path is compared in tests/test_incremental_equivalence.py.

Marts built from jobs that overlap in time (a job's concurrency, node occupancy per hour, and
everything filtered on full occupancy) read the jobs overlapping their window's edges as context
and write only inside it (dbt/README.md, "Chunk and history edges").
"""

from __future__ import annotations

import duckdb
import pytest

from support.warehouse_compare import built_tables, differences

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("other", ["days7", "days1"])
def test_every_table_equals_the_one_chunk_build(equivalence, other):
    tables = built_tables(equivalence["full"])
    assert ("marts", "job_io_profile") in tables and ("marts", "node_occupancy_hourly") in tables
    assert differences(equivalence[other], equivalence["full"]) == {}


def test_the_chunks_cut_through_running_jobs(equivalence):
    """The comparison can fail: jobs run across the edges of the middle back-fill's days, so a chunk
    that did not read them as context would count fewer concurrent jobs there."""
    first, end = equivalence["middle"]
    con = duckdb.connect(str(equivalence["full"]), read_only=True)
    across = con.execute(
        "select count(*) from marts.job_io_profile where start_time < ?::date and end_time > ?::date",
        [end, end],
    ).fetchone()[0]
    con.close()
    assert across > 0, f"no job runs across {end}"


def _job(db, key: tuple[str, str, str]) -> tuple[int, list]:
    """(rows of the job in job_efficiency, its concurrent_jobs in job_io_profile)."""
    where = "where batch_system = ? and cluster = ? and job_id = ?"
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(f"select count(*) from marts.job_efficiency {where}", list(key)).fetchone()[0]
        concurrent = [
            c for (c,) in con.execute(f"select concurrent_jobs from marts.job_io_profile {where}", list(key)).fetchall()
        ]
        return rows, concurrent
    finally:
        con.close()


def _rejects(db, job_id: str) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "select field, reason from raw_rejects where record_kind = 'job' and raw_record like ?",
            [f'%"job_id":"{job_id}"%'],
        ).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("build", ["incremental", "full", "days7"])
def test_a_job_ending_before_it_starts_is_a_reject_on_every_path(equivalence, build):
    """The loader keeps it as a reject naming the field, once; no mart counts it."""
    key = equivalence["replay"].skewed["ends_before_start"]
    assert _job(equivalence[build], key) == (0, [])
    assert _rejects(equivalence[build], key[2]) == [("end_time", "before start_time")]


@pytest.mark.parametrize("build", ["incremental", "full", "days7"])
def test_a_job_from_a_node_clock_ahead_is_filed_under_its_own_times(equivalence, build):
    key = equivalence["replay"].skewed["clock_ahead"]
    rows, concurrent = _job(equivalence[build], key)
    assert rows == 1 and len(concurrent) == 1
