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

import duckdb
import pytest

from support.faults import raw_duplicates
from support.warehouse_compare import differences
from tierlens.warehouse.history import load_history

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
