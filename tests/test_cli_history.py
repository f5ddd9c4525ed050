"""History commands as a site runs them: `tierlens transform --backfill`, raw retention, the refusal
of a full refresh over pruned raw history, and what `tierlens doctor` says about it.

Each command runs in its own process, as cron or a shell would. Expected counts come from the
Parquet files loaded and from rows this test puts in, never from what the commands print.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TIERLENS = Path(sys.executable).parent / "tierlens"


def run(*args: str, env: dict[str, str], code: int = 0) -> subprocess.CompletedProcess:
    r = subprocess.run([str(TIERLENS), *args], env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == code, f"tierlens {' '.join(args)}: {r.stdout[-3000:]}{r.stderr[-3000:]}"
    return r


def dbt_log_lines(folder: Path) -> list[str]:
    """dbt's log, oldest line first: dbt rotates it at 10 MB into dbt.log.1 (newest) .. dbt.log.5."""
    rotated = sorted(folder.glob("dbt.log.*"), key=lambda p: -int(p.suffix[1:]))
    return [line for path in [*rotated, folder / "dbt.log"] for line in path.read_text().splitlines()]


@pytest.mark.timeout(2400)
def test_backfill_by_day_retention_and_a_refused_full_refresh(tmp_path: Path) -> None:
    from tierlens.orchestration import synthetic_options, synthetic_site_files

    folder = synthetic_site_files(synthetic_options("2026-10-01", days=2, nodes_per_type=1), tmp_path / "syn")
    home = tmp_path / "home"
    wh = home / "warehouse.duckdb"
    env = {k: v for k, v in os.environ.items() if k != "TIERLENS_RAW_RETENTION_MONTHS"}
    # a parse cache of its own, empty: the first chunk parses the project whole, whatever ran before
    env |= {
        "TIERLENS_HOME": str(home),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "False",
        "TIERLENS_DBT_PARSE_CACHE": str(tmp_path / "parse-cache"),
    }
    rows = 0
    for kind in ("node", "job_tag", "job", "file_access"):
        run("load", kind, str(folder / f"{kind}.parquet"), "-w", str(wh), env=env)
        rows += pq.ParquetFile(folder / f"{kind}.parquet").metadata.num_rows
    jobs = pq.read_table(folder / "job.parquet")
    accesses = pq.read_table(folder / "file_access.parquet", columns=["end_time"])
    first_day = min(pc.min(jobs.column("end_time")).as_py(), pc.min(accesses.column("end_time")).as_py()).date()
    last_day = pc.max(accesses.column("end_time")).as_py().date()

    # back-fill the whole span a day per dbt run
    end = last_day + timedelta(days=1)
    run("transform", "-w", str(wh), "--backfill", first_day.isoformat(), end.isoformat(), "--days", "1", env=env)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert state["format_version"] == 2
    last = state["last_run"]
    assert last["success"] and last["kind"] == "backfill"
    every_test, core_tests = _tests_in_manifest(home / "dbt" / "target" / "manifest.json")
    assert (last["test_scope"], last["tests"]) == ("all", every_test)  # a back-fill runs every test
    assert last["chunks"] == last["chunks_done"] == (end - first_day).days
    assert last["rows_new"] == rows  # every loaded row was new to this first run
    con = duckdb.connect(str(wh), read_only=True)
    try:
        finished = con.execute("SELECT count(*) FROM marts.job_efficiency").fetchone()[0]
        logged = con.execute(
            "SELECT run_mode, backfill_start, backfill_end FROM intermediate.int_incremental_window ORDER BY built_at"
        ).fetchall()
    finally:
        con.close()
    assert finished > 0
    # each chunk's days reached dbt (its run log, one row per dbt run), and dbt kept its parse of
    # the project from one chunk to the next: it parsed the project whole once, for the first
    days = [first_day + timedelta(days=i) for i in range((end - first_day).days + 1)]
    assert logged == [("backfill", a, b) for a, b in zip(days, days[1:])]
    parses = [x for x in dbt_log_lines(home / "dbt" / "logs") if "partial parsing" in x.lower()]
    assert [x for x in parses if "Unable to do partial parsing" in x] == [parses[0]], parses
    assert "saved manifest not found" in parses[0]

    # three months older copies of 50 accesses: what a 1-month retention must delete, and only them;
    # and of every job with the accesses that name it (their identities too: exact matches), whose
    # figures the marts keep after retention deletes those accesses
    con = duckdb.connect(str(wh))
    try:
        con.execute("""INSERT INTO raw_file_access SELECT * REPLACE (unique_id || '-old' AS unique_id,
                         start_time - INTERVAL 90 DAY AS start_time, end_time - INTERVAL 90 DAY AS end_time)
                       FROM (SELECT * FROM raw_file_access ORDER BY unique_id LIMIT 50)""")
        con.execute("""INSERT INTO raw_job SELECT * REPLACE (job_id || '-old90' AS job_id,
                         job_identity || '-old90' AS job_identity, submit_time - INTERVAL 90 DAY AS submit_time,
                         start_time - INTERVAL 90 DAY AS start_time, end_time - INTERVAL 90 DAY AS end_time)
                       FROM raw_job""")
        con.execute("""INSERT INTO raw_job_tag SELECT * REPLACE (job_id || '-old90' AS job_id,
                         tagged_at - INTERVAL 90 DAY AS tagged_at) FROM raw_job_tag""")
        old_named = con.execute("""INSERT INTO raw_file_access SELECT * REPLACE (unique_id || '-old90' AS unique_id,
                         job_identity || '-old90' AS job_identity,
                         start_time - INTERVAL 90 DAY AS start_time, end_time - INTERVAL 90 DAY AS end_time)
                       FROM raw_file_access WHERE job_identity IS NOT NULL AND end_time IS NOT NULL
                         AND unique_id NOT LIKE '%-old'""").fetchone()[0]
        before = con.execute("SELECT count(*) FROM raw_file_access").fetchone()[0]
    finally:
        con.close()
    assert old_named > 0
    # a site's old history is in the marts before retention prunes its raw rows: back-fill those days
    old_first, old_end = first_day - timedelta(days=90), end - timedelta(days=90)
    run(
        "transform",
        "-w",
        str(wh),
        "--backfill",
        old_first.isoformat(),
        old_end.isoformat(),
        "--days",
        str((old_end - old_first).days),
        env=env,
    )
    # a duplicate outside what an hourly run rebuilds: a second copy of a file's reads on the oldest
    # day (90 days back). The hourly run's core tests check the days it rebuilt, so they pass...
    outside = _plant_copy(
        wh,
        "intermediate.int_file_reads_day_partials",
        "day = (SELECT min(day) FROM intermediate.int_file_reads_day_partials)",
        ["file_lfn", "day"],
    )
    run("transform", "-w", str(wh), env=env | {"TIERLENS_RAW_RETENTION_MONTHS": "1"})
    con = duckdb.connect(str(wh), read_only=True)
    try:
        after = con.execute("SELECT count(*) FROM raw_file_access").fetchone()[0]
        old_left = con.execute("SELECT count(*) FROM raw_file_access WHERE unique_id LIKE '%-old'").fetchone()[0]
    finally:
        con.close()
    assert (before - after, old_left) == (50 + old_named, 0)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert state["last_run"]["kind"] == "hourly" and state["last_run"]["success"]
    assert state["retention"]["months"] == 1 and state["retention"]["rows_deleted_total"] == 50 + old_named
    # the old jobs kept the files they read by exact match, whose accesses are gone: more files on
    # jobs than exact matches held, which the whole-table check must not count against the build
    con = duckdb.connect(str(wh), read_only=True)
    try:
        old_files, files, exact = con.execute(
            """SELECT (SELECT sum(files_accessed) FROM marts.job_efficiency WHERE job_id LIKE '%-old90'),
                      (SELECT sum(files_accessed) FROM marts.job_efficiency),
                      (SELECT count(*) FROM intermediate.int_file_access_by_job WHERE match_quality = 'exact')"""
        ).fetchone()
    finally:
        con.close()
    assert old_files > 0 and files > exact, (old_files, files, exact)
    assert state["retention"]["pruned_before"] is not None
    # the back-fill before it passed every test: this hourly run left the column checks out
    assert (state["last_run"]["test_scope"], state["last_run"]["tests"]) == ("core", core_tests)

    # ... but a key the run rebuilt is checked against the days a record can arrive late from: a
    # job's row left behind before the window (as when its end moved into it) fails the next
    # hourly run. The window starts max_wall_days + job_lateness_days (9) before the newest day;
    # partners are looked for 9 + 1 days before that: day - 15 is among them, day - 30 is not.
    key = ["batch_system", "cluster", "job_id", "step_id"]
    unique_job = "unique_combination_of_columns_job_efficiency_batch_system__cluster__job_id__step_id"
    newest = "day = (SELECT max(day) FROM marts.job_efficiency)"
    moved = _plant_copy(wh, "marts.job_efficiency", newest, key, "day - 15")
    run("transform", "-w", str(wh), env=env, code=1)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert state["last_run"]["test_scope"] == "core" and not state["last_run"]["success"]
    failed = _failed_tests(state)
    assert unique_job in failed, failed
    assert "unique_combination_of_columns_int_file_reads_day_partials_file_lfn__day" not in failed, failed
    _remove_copy(wh, "marts.job_efficiency", moved)
    # a partner a month back (a job id reused) is not looked for by the hourly uniqueness test; the
    # hourly cross-check of ab_comparison against job_efficiency (whole tables) still sees the
    # extra row, and the run that tests whole tables finds the duplicate key
    reused = _plant_copy(wh, "marts.job_efficiency", newest, key, "day - 30")
    run("transform", "-w", str(wh), env=env, code=1)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert state["last_run"]["test_scope"] == "core" and not state["last_run"]["success"]
    failed = _failed_tests(state)
    assert unique_job not in failed and "assert_ab_comparison_all_equals_job_efficiency" in failed, failed

    # ... until every test is due again (TIERLENS_ALL_TESTS_EVERY_HOURS, default 24): the whole
    # tables, where both duplicates fail
    state["all_tests_passed_at"] = (
        datetime.fromisoformat(state["all_tests_passed_at"]) - timedelta(hours=25)
    ).isoformat()
    (home / "warehouse.duckdb.history.json").write_text(json.dumps(state))
    run("transform", "-w", str(wh), env=env, code=1)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert state["last_run"]["test_scope"] == "all" and not state["last_run"]["success"]
    failed = _failed_tests(state)
    assert "unique_combination_of_columns_int_file_reads_day_partials_file_lfn__day" in failed, failed
    assert unique_job in failed, failed
    _remove_copy(wh, "intermediate.int_file_reads_day_partials", outside)
    _remove_copy(wh, "marts.job_efficiency", reused)
    run("transform", "-w", str(wh), env=env)
    state = json.loads((home / "warehouse.duckdb.history.json").read_text())
    assert (state["last_run"]["test_scope"], state["last_run"]["tests"]) == ("all", every_test)
    assert state["all_tests_passed_at"] == state["last_run"]["started_at"]

    # rebuilding the marts from raw now would lose the pruned history: refused, with the reason
    refused = run("transform", "-w", str(wh), "--full-refresh", env=env, code=2)
    assert "retention" in refused.stderr and "--accept-pruned-history" in refused.stderr
    # a back-fill of days raw still holds is fine
    run("transform", "-w", str(wh), "--backfill", last_day.isoformat(), end.isoformat(), env=env)

    # doctor's exit status also reflects this host's other parts (no Slurm here): read its findings
    doctor = subprocess.run(
        [str(TIERLENS), "doctor", "--json", "-w", str(wh)], env=env, capture_output=True, text=True, timeout=300
    )
    found = {(f["area"], f["check"]): f for f in json.loads(doctor.stdout)["findings"]}
    assert found[("warehouse", "last transform")]["status"] == "ok"
    assert "backfill" in found[("warehouse", "last transform")]["detail"]
    assert "deleted before" in found[("warehouse", "retention")]["detail"]
    # the old jobs stay in raw (retention deletes file accesses only); the accesses start where retention left them
    raw_history = found[("warehouse", "raw history")]["detail"]
    assert (
        f"from {first_day - timedelta(days=90)}" in raw_history and f"oldest raw file access {first_day}" in raw_history
    )
    assert "GB working file" in found[("warehouse", "size")]["detail"]
    assert "MB written" in found[("warehouse", "last publish")]["detail"]


def _plant_copy(wh: Path, table: str, where: str, key: list[str], day: str = "day") -> str:
    """Insert a second copy of one row of ``table`` matching ``where``, its day column set to the SQL
    ``day``; a condition that the copy meets (its ``key`` columns and its day)."""
    con = duckdb.connect(str(wh))
    try:
        columns = ", ".join(key)
        row = con.execute(
            f"SELECT {columns}, CAST({day} AS DATE) FROM {table} WHERE {where} ORDER BY ALL LIMIT 1"
        ).fetchone()
        assert row is not None, f"no row of {table} where {where}"
        con.execute(
            f"INSERT INTO {table} SELECT * REPLACE (${len(key) + 1} AS day) FROM {table} "
            f"WHERE {' AND '.join(f'{c} = ${i + 1}' for i, c in enumerate(key))} LIMIT 1",
            list(row),
        )
        return " AND ".join(f"{c} = '{v}'" for c, v in zip([*key, "day"], row))
    finally:
        con.close()


def _remove_copy(wh: Path, table: str, copy: str) -> None:
    """Delete one row meeting ``copy`` (_plant_copy's condition)."""
    con = duckdb.connect(str(wh))
    try:
        assert (
            con.execute(f"DELETE FROM {table} WHERE rowid = (SELECT max(rowid) FROM {table} WHERE {copy})").fetchone()[
                0
            ]
            == 1
        )
    finally:
        con.close()


def _failed_tests(state: dict) -> set[str]:
    """The dbt tests the last run reports failing (``test.<package>.<name>.<hash>: fail: ...``)."""
    return {f.split(":")[0].split(".")[2] for f in state["last_run"]["failures"] if f.startswith("test.")}


def _tests_in_manifest(manifest: Path) -> tuple[int, int]:
    """Every data test dbt parsed, and those that are not a column check (not_null, accepted_range,
    accepted_values), by the test each one instantiates as dbt's manifest records it."""
    nodes = json.loads(manifest.read_text())["nodes"].values()
    tests = [n for n in nodes if n["resource_type"] == "test"]
    column = {"not_null", "accepted_range", "accepted_values"}
    return len(tests), sum((n.get("test_metadata") or {}).get("name") not in column for n in tests)
