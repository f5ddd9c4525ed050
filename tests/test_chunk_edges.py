"""Chunk and history edges: a back-fill's chunk size never changes a table.

The equivalence fixture's site (tests/support/equivalence.py: twelve days across a month's end,
with jobs running across every day's edge, the first day opening on jobs already running) is
rebuilt with all of its history in one chunk (the reference), with `tierlens transform
--full-refresh --days 7`, and, on a copy of the reference, with a `--backfill` of three days in
the middle of history one day per dbt run.
Every intermediate table and mart must hold the same rows (floats within 1e-9 relative); the
hourly path is compared in tests/test_incremental_equivalence.py.

Marts built from jobs that overlap in time (a job's concurrency, node occupancy per hour, and
everything filtered on full occupancy) read the jobs overlapping their window's edges as context
and write only inside it (dbt/README.md, "Chunk and history edges").
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import duckdb
import pytest

from support.equivalence import START
from support.warehouse_compare import built_tables, close, differences

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


# The first loaded day: jobs already running when the first record arrives. Their figures are
# computed here from raw_job alone, pairwise (no sweep, no hour spine), and every build must give
# them: the hourly path's first build, the one-chunk build and the 7-day chunks (the first chunk of
# each starts on the earliest day a raw job touches, its start, not the first day it ended on).
_RAN = "node is not null and start_time is not null and end_time > start_time"


def _first_day_concurrency(con: duckdb.DuckDBPyConnection, first: date) -> dict[tuple, float]:
    """Each job that started before ``first``: the seconds of every job's run on its node within
    its own run (itself included), over its wall seconds."""
    rows = con.execute(
        f"""
        with a as (select * from raw_job where {_RAN} and start_time < ?::date),
             b as (select cluster, node, start_time, end_time from raw_job where {_RAN})
        select a.batch_system, a.cluster, a.job_id, a.step_id,
               sum(epoch(least(a.end_time, b.end_time)) - epoch(greatest(a.start_time, b.start_time)))
                   / any_value(a.wall_seconds)
        from a join b
          on b.cluster = a.cluster and b.node = a.node
         and b.start_time < a.end_time and b.end_time > a.start_time
        group by all
        """,
        [first],
    ).fetchall()
    return {tuple(r[:4]): r[4] for r in rows}


def _first_day_hours(con: duckdb.DuckDBPyConnection, first: date) -> dict[tuple, float]:
    """Each node's hours from its first job's start up to the end of ``first``: the core-seconds
    of the jobs running in them (0 for an idle hour)."""
    rows = con.execute(
        f"""
        with jobs as (select * from raw_job where {_RAN}),
             spans as (
                 select cluster, node, date_trunc('hour', min(start_time) at time zone 'UTC') as first_hour
                 from jobs group by all
             ),
             hours as (
                 select cluster, node, unnest(generate_series(first_hour, ?::timestamp, interval 1 hour)) as hour
                 from spans
             )
        select h.node, h.hour, coalesce(sum(
                   j.allocated_cores * (epoch(least(j.end_time at time zone 'UTC', h.hour + interval 1 hour))
                                        - epoch(greatest(j.start_time at time zone 'UTC', h.hour)))), 0)
        from hours as h
        left join jobs as j
          on j.cluster = h.cluster and j.node = h.node
         and j.start_time at time zone 'UTC' < h.hour + interval 1 hour
         and j.end_time at time zone 'UTC' > h.hour
        group by all
        """,
        [datetime.combine(first, datetime.min.time()) + timedelta(hours=23)],
    ).fetchall()
    return {(node, hour): seconds for node, hour, seconds in rows}


@pytest.mark.parametrize("build", ["incremental", "full", "days7"])
def test_the_first_loaded_day_counts_the_jobs_already_running(equivalence, build):
    """The jobs running when the history opens share their nodes, and occupy their hours before
    and on the first day, with the same figures on every path as raw_job gives pairwise."""
    first = START.date()
    con = duckdb.connect(str(equivalence[build]), read_only=True)
    try:
        expected = _first_day_concurrency(con, first)
        got = dict(
            ((b, c, j, s), v)
            for b, c, j, s, v in con.execute(
                "select batch_system, cluster, job_id, step_id, concurrent_jobs from marts.job_io_profile "
                "where start_time < ?::date",
                [first],
            ).fetchall()
        )
        hours = _first_day_hours(con, first)
        held = {
            (node, hour): v
            for node, hour, v in con.execute(
                "select node, hour at time zone 'UTC', allocated_core_seconds from marts.node_occupancy_hourly "
                "where hour < ?::date + 1",
                [first],
            ).fetchall()
        }
    finally:
        con.close()
    # enough to mean something: jobs running into the first day on several nodes, hours before it
    assert len(expected) >= 10 and sum(1 for _, h in hours if h.date() < first) >= 5
    assert got.keys() == expected.keys()
    assert [k for k in expected if not close(got[k], expected[k])] == []
    assert held.keys() == hours.keys()
    assert [k for k in hours if not close(held[k], hours[k])] == []
