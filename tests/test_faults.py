"""SIGKILL anywhere in the hourly cycle: nothing lost, nothing counted twice.

The equivalence fixture (tests/support/equivalence.py) kills, at points drawn from a seeded
generator, an hour's `tierlens load`, a plain `tierlens transform`, `--full-refresh --days 7`, a
`--backfill --days 1`, the publish and retention, and runs each again to the end. Here: every
kill point was tried on a running step, the recovered warehouses equal the reference (full
refresh) table for table, and the raw tables hold each record once. The equality of the hourly and
chunked builds themselves is asserted in tests/test_incremental_equivalence.py and
tests/test_chunk_edges.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

from support.equivalence import RETENTION_CUTOFF
from support.faults import raw_duplicates
from support.warehouse_compare import differences
from tierlens.warehouse.history import ACCESS_GRAIN_TABLES, load_history, retention_cutoff

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KILLED_STEPS = ("load", "transform", "transform --full-refresh", "transform --backfill", "publish", "retention")


def test_every_kind_of_step_was_killed_while_running(equivalence):
    kills = equivalence["kills"]
    assert kills.failures == []
    assert sorted(kills.landed) == sorted(KILLED_STEPS), kills


@pytest.mark.parametrize("name", ["incremental", "days7", "days1"])
def test_raw_tables_hold_each_record_once(equivalence, name):
    assert raw_duplicates(equivalence[name]) == {}


def test_the_snapshot_published_after_a_killed_publish_equals_a_full_refresh(equivalence):
    published = equivalence["published"]
    assert published != equivalence["incremental"], "nothing was published"
    assert differences(published, equivalence["full"]) == {}


def _raw_accesses_only_on_one_side(a, b) -> int:
    con = duckdb.connect(str(a), read_only=True)
    con.execute(f"attach '{b}' as other (read_only)")
    try:
        return con.execute(
            "select (select count(*) from (from raw_file_access except all from other.raw_file_access)) "
            "+ (select count(*) from (from other.raw_file_access except all from raw_file_access))"
        ).fetchone()[0]
    finally:
        con.close()


def test_retention_killed_then_run_again_equals_retention_left_alone(equivalence):
    reference, faulted = equivalence["retention"]["reference"], equivalence["retention"]["faulted"]
    done = load_history(reference).retention
    assert done.rows_deleted_total > 0, "retention deleted nothing: nothing to kill it in"
    assert _raw_accesses_only_on_one_side(reference, faulted) == 0
    assert differences(reference, faulted) == {}
    # what a later back-fill is refused for: the days retention deleted, recorded however it was killed
    assert load_history(faulted).retention.pruned_before == done.pruned_before


# Retention at a month boundary. The rule (dbt/README.md, "Chunk and history edges"): the cutoff
# is midnight UTC of the newest access's day-of-month, ``months`` calendar months back, clamped to
# the last day of a shorter month; accesses that ended before it leave raw and the access-grain
# tables, every other table keeps its rows.
@pytest.mark.parametrize(
    ("newest", "months", "cutoff"),
    [
        (datetime(2026, 12, 1, 6, tzinfo=UTC), 1, datetime(2026, 11, 1, tzinfo=UTC)),
        (datetime(2027, 3, 31, 23, 59, tzinfo=UTC), 1, datetime(2027, 2, 28, tzinfo=UTC)),
        (datetime(2028, 3, 31, tzinfo=UTC), 1, datetime(2028, 2, 29, tzinfo=UTC)),
        (datetime(2027, 1, 15, 12, tzinfo=UTC), 1, datetime(2026, 12, 15, tzinfo=UTC)),
        (datetime(2027, 1, 31, tzinfo=UTC), 13, datetime(2025, 12, 31, tzinfo=UTC)),
    ],
)
def test_the_retention_cutoff_counts_calendar_months(newest, months, cutoff):
    assert retention_cutoff(newest, months) == cutoff


def _count(db, sql: str, args: list) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, args).fetchone()[0]
    finally:
        con.close()


def test_retention_at_a_month_boundary_removes_the_earlier_month_and_nothing_else(equivalence):
    """Cut at November 1st inside the history: raw keeps exactly the accesses that ended on or after
    it, the access-grain tables lose exactly their October rows, every other table equals the full
    refresh; and retention applied to the full refresh gives the same warehouse."""
    retained, full = equivalence["retention"]["reference"], equivalence["full"]
    before = "select count(*) from raw_file_access where end_time < ?"
    october = _count(full, before, [RETENTION_CUTOFF])
    november = _count(full, "select count(*) from raw_file_access where end_time >= ?", [RETENTION_CUTOFF])
    assert october > 0 and november > 0, "the cutoff does not fall inside the history"
    assert _count(retained, before, [RETENTION_CUTOFF]) == 0
    assert _count(retained, "select count(*) from raw_file_access", []) == november
    assert load_history(retained).retention.pruned_before == RETENTION_CUTOFF.isoformat()
    pruned = {
        f"{schema}.{table}": _count(
            full, f'select count(*) from "{schema}"."{table}" where end_time < ?', [RETENTION_CUTOFF]
        )
        for schema, table in ACCESS_GRAIN_TABLES
    }
    assert all(pruned.values())
    assert differences(retained, full) == pruned
    assert _raw_accesses_only_on_one_side(retained, equivalence["retention"]["full"]) == 0
    assert differences(retained, equivalence["retention"]["full"]) == {}
