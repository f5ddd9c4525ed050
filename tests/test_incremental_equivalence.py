"""Incremental dbt builds, fed twelve demo days as they would arrive (with faults), equal a full refresh.

The replay and its planted late records and kills are tests/support/equivalence.py's; every table
of the intermediate and marts schemas must equal the full refresh of the same raw records,
compared by tests/support/warehouse_compare.py. The run log int_incremental_window is compared by
its modes instead.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from support.equivalence import identity_matches, job_rows
from support.warehouse_compare import built_tables, differences

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def replayed(equivalence) -> dict[str, Any]:
    return equivalence


def test_every_intermediate_table_and_mart_equals_a_full_refresh(replayed):
    incremental, full = replayed["incremental"], replayed["full"]
    tables = built_tables(incremental)
    assert ("marts", "job_efficiency") in tables and ("intermediate", "int_file_access_by_job") in tables
    assert differences(incremental, full) == {}
    con = duckdb.connect(str(incremental), read_only=True)
    counts = {t: con.execute(f'select count(*) from "{s}"."{t}"').fetchone()[0] for s, t in tables}
    con.close()
    for name in (
        "job_efficiency",
        "int_file_access_by_job",
        "cache_hourly",
        "node_occupancy_hourly",
        "change_effects",
        "efficiency_by_group",
        "int_efficiency_day_partials",
        "int_completed_efficiency_day_partials",
        "int_occupancy_day_partials",
        "int_input_size_day_partials",
        "int_node_jobs_day_partials",
        "int_file_reads_day_partials",
        "file_reads",
        "client_fairness",
        "file_popularity",
    ):
        assert counts[name] > 0, f"{name} is empty: nothing compared"


def test_the_builds_were_incremental(replayed):
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    modes = [
        r[0]
        for r in con.execute("select run_mode from intermediate.int_incremental_window order by built_at").fetchall()
    ]
    con.close()
    # five builds, and the SIGKILLed transform before build 4 logged one more if it got that far
    assert modes[0] == "full" and set(modes[1:]) == {"incremental"} and len(modes) in (5, 6)


def test_incremental_builds_leave_no_working_tables_and_clear_old_ones(replayed):
    """Four incremental builds of the Python models (ab_uncertainty, int_ab_totals,
    change_effects) left none of their working tables, and the fifth dropped the leftovers planted
    before it, but not a table of the site's whose name only resembles one."""
    before, after = replayed["working_tables"]
    assert before == []
    assert after == ["main.site_notes__dbt_tmp_kept"]


def test_a_late_accounting_record_reaches_its_earlier_accesses(replayed):
    """The planted late job: its accesses, loaded and built before its record arrived, matched no
    job then, and are matched exactly (by identity) once it did."""
    identity = replayed["replay"].late_jobs[0]
    accesses, exact = replayed["matched_before"][identity]
    assert accesses > 0 and exact == 0
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    assert identity_matches(con, identity) == (accesses, accesses)
    con.close()


def test_a_late_cache_event_replaces_the_access_figures(replayed):
    replay = replayed["replay"]
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    for server, uid in replay.late_cache_accesses:
        raw_hit, evidence = con.execute(
            "select r.cache_hit_bytes, a.cache_evidence from main.raw_file_access r "
            "join intermediate.int_file_access_reconciled a using (server_host, unique_id) "
            "where r.server_host = ? and r.unique_id = ?",
            [server, uid],
        ).fetchone()
        assert raw_hit is not None and evidence is not None
    con.close()


def test_replay_has_a_job_taking_accesses_from_an_older_one_and_a_late_access(replayed):
    """The cases a rebuild by key must find: accesses inferred to one job at build 3 and to another
    (a job whose record came later) at the end; an access that arrived after its job's record."""
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    now = {
        (host, uid): job
        for host, uid, job in con.execute(
            "select server_host, unique_id, job_id from intermediate.int_file_access_by_job "
            "where match_quality = 'inferred'"
        ).fetchall()
    }
    late = [
        con.execute(
            "select match_quality from intermediate.int_file_access_by_job where server_host = ? and unique_id = ?",
            list(key),
        ).fetchone()
        for key in replayed["replay"].late_accesses
    ]
    con.close()
    before = {k: v for k, v in replayed["matched_before"].items() if isinstance(k, tuple)}
    taken = [k for k, job in before.items() if k in now and now[k] != job]
    assert taken, "no access changed its inferred job between build 3 and the end"
    assert late == [("inferred",)]


def test_replay_has_a_job_that_changed_node_and_one_that_stopped_having_run(replayed):
    """The revised jobs of the last day: built by build 3 in their first form (one on another
    node, one that ran) and replaced by their true records before build 4: the first on its true
    node, the second a launch failure, in neither job_efficiency nor job_io_profile."""
    revised = replayed["replay"].revised
    before = replayed["revised_before"]
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    key, first_node, true_node = revised["node"]
    assert first_node != true_node
    assert before["node"] == (1, [first_node])
    assert job_rows(con, key) == (1, [true_node])
    key, _, node = revised["ran"]
    assert before["ran"] == (1, [node])
    assert job_rows(con, key) == (0, [])
    con.close()


def test_job_io_profile_was_rebuilt_by_job(replayed):
    """Build 5 rebuilt job_io_profile by job, not its window's days: the row planted off by 1,000
    after build 4, of a job no record of build 5 can touch, came through it unchanged."""
    planted, after = replayed["io_profile_planted"]
    assert after == [(planted,)]
