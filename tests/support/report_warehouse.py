"""A small warehouse by hand for the report's tests: schema ``marts`` with a few rows of known
numbers, and the raw reject/batch tables, so a test computes the report's answers independently
from the same rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

D = dt.date

# efficiency_by_group, week grain: (period_start, storage_type, ab_arm, account, job_class,
#                                   jobs, cpu_hours, wall_hours, core_wall_hours, mean_job_efficiency, jobs_above_one)
WEEK_GROUPS = [
    (D(2024, 5, 6), "hdd", "A", "atlas", "analysis", 10, 75.0, 50.0, 100.0, 0.70, 0),
    (D(2024, 5, 6), "hdd", "A", "atlas", "production", 5, 45.0, 50.0, 50.0, 0.88, 0),
    (D(2024, 5, 13), "hdd", "A", "cms", "analysis", 4, 30.0, 10.0, 40.0, 0.74, 0),
    (D(2024, 5, 6), "ssd", "B", "atlas", "analysis", 8, 90.0, 50.0, 100.0, 0.85, 0),
    (D(2024, 5, 13), "ssd", "B", "atlas", "production", 2, 26.0, 12.0, 24.0, 1.05, 1),
    (D(2024, 5, 13), "nvme", "B", "cms", "analysis", 3, 55.0, 25.0, 50.0, 1.12, 2),
    (D(2024, 5, 13), None, None, "lhcb", None, 6, 12.0, 20.0, 20.0, 0.61, 0),
]
# Day-grain rows with deliberately different numbers: the report must not add them to the weeks.
DAY_GROUPS = [
    (D(2024, 5, 6), "hdd", "A", "atlas", "analysis", 999, 1.0, 900.0, 900.0, 0.01, 0),
]


def failures(group: tuple) -> tuple[int, int]:
    """(failed_jobs, launch_failures) of a group row: failed jobs that ran are a quarter of its
    jobs; production groups also had one launch failure (FAILED, never started)."""
    jobs, job_class = group[5], group[4]
    launch = 1 if job_class == "production" else 0
    return jobs // 4 + launch, launch


# ab_comparison: (grain, start, end, jobs_a, cpu_a, wall_a, core_wall_a, jobs_b, cpu_b, wall_b, core_wall_b)
AB_ROWS = [
    # the end exclusive, as in the mart (period_last_day is the day before it)
    ("day", D(2024, 5, 6), D(2024, 5, 7), 10, 60.0, 40.0, 80.0, 12, 70.0, 40.0, 80.0),
    ("day", D(2024, 5, 7), D(2024, 5, 8), 8, 40.0, 30.0, 60.0, 9, 50.0, 30.0, 60.0),
    ("day", D(2024, 5, 8), D(2024, 5, 9), 0, None, None, None, 5, 20.0, 10.0, 20.0),
    ("week", D(2024, 5, 6), D(2024, 5, 13), 18, 100.0, 70.0, 140.0, 26, 140.0, 80.0, 160.0),
    # SLAC's whole-period numbers, on the days of the jobs below
    ("all", D(2024, 5, 6), D(2024, 5, 14), 1200, 25776.9, 34143.3, 34143.3, 1300, 28508.6, 35258.7, 35258.7),
]

# cache_hourly: (hour UTC, server, accesses, hit_accesses, gb_from_cache, gb_staged_in, gb_bypassed, gb_read)
# gb_read (what clients read) differs from hit + miss + bypass (what the cache moved), as in life;
# hit ratio by bytes is hit / (hit + miss + bypass), as marts.cache_hourly defines it.
CACHE_ROWS = [
    (dt.datetime(2024, 5, 6, 10), "xcache1", 100, 60, 300.0, 120.0, 10.0, 400.0),
    (dt.datetime(2024, 5, 6, 10), "xcache2", 50, 10, 40.0, 200.0, 0.0, 180.0),
    (dt.datetime(2024, 5, 6, 11), "xcache1", 80, 70, 500.0, 20.0, 5.0, 510.0),
    (dt.datetime(2024, 5, 6, 12), "xcache1", 40, 0, 0.0, 90.0, 0.0, 70.0),
    (dt.datetime(2024, 5, 6, 12), "xcache2", 60, 30, 150.0, 60.0, 0.0, 205.0),
]

# storage_price_performance; the last configuration is in the catalogue but not deployed.
PRICE_ROWS = [
    ("raid0-2xhdd", "raid0", "2x HDD 500GB", 2, 40.0, "GBP", 80.0, 1000.0, 0.08, 4, 120, 0.92, 7.0, 11.43),
    ("kingston-ssd", "ssd", "Kingston SSDnow", 1, 155.0, "GBP", 155.0, 128.0, 1.21, 2, 60, 0.81, 4.5, 34.44),
    ("intel-x25", "ssd", "Intel X-25", 1, 245.0, "GBP", 245.0, 160.0, 1.53, None, None, None, None, None),
]

# job_efficiency: (job_id, storage_type, ab_arm, job_class, account, cpu_s, wall_s, cores, day)
JOBS = [
    ("1", "hdd", "A", "analysis", "atlas", 3000.0, 3600.0, 1, D(2024, 5, 6)),
    ("2", "hdd", "A", "analysis", "atlas", 20000.0, 3600.0, 8, D(2024, 5, 6)),
    ("3", "ssd", "B", "production", "atlas", 4000.0, 3600.0, 1, D(2024, 5, 8)),
    ("4", "nvme", "B", "analysis", "cms", 7000.0, 1800.0, 2, D(2024, 5, 13)),
]

REJECTS = [
    ("job", "sacct", "line 3", "end_time", "end before start"),
    ("job", "sacct", "line 9", "end_time", "end before start"),
    ("file_access", "collector", "packet 12", "file_size", "negative size"),
]


def _create_marts(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SCHEMA marts")
    con.execute("""
        CREATE TABLE marts.efficiency_by_group (
            period_grain VARCHAR, period_start DATE, storage_type VARCHAR, ab_arm VARCHAR,
            account VARCHAR, job_class VARCHAR, jobs BIGINT, cpu_hours DOUBLE, wall_hours DOUBLE,
            core_wall_hours DOUBLE, efficiency DOUBLE, mean_job_efficiency DOUBLE,
            jobs_above_one BIGINT, efficiency_above_one BOOLEAN,
            failed_jobs BIGINT, launch_failures BIGINT, failed_share DOUBLE)
    """)
    for grain, rows in (("week", WEEK_GROUPS), ("day", DAY_GROUPS)):
        for row in rows:
            (start, st, arm, acct, cls, jobs, cpu, wall, cw, mean, above) = row
            failed, launch = failures(row)
            con.execute(
                "INSERT INTO marts.efficiency_by_group VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    grain,
                    start,
                    st,
                    arm,
                    acct,
                    cls,
                    jobs,
                    cpu,
                    wall,
                    cw,
                    cpu / cw,
                    mean,
                    above,
                    cpu / cw > 1,
                    failed,
                    launch,
                    failed / (jobs + launch),
                ],
            )
    con.execute("""
        CREATE TABLE marts.ab_comparison (
            period_grain VARCHAR, period_start DATE, period_end DATE, period_last_day DATE,
            jobs_a BIGINT, cpu_hours_a DOUBLE, wall_hours_a DOUBLE, core_wall_hours_a DOUBLE,
            cpu_per_wall_a DOUBLE, efficiency_a DOUBLE,
            jobs_b BIGINT, cpu_hours_b DOUBLE, wall_hours_b DOUBLE, core_wall_hours_b DOUBLE,
            cpu_per_wall_b DOUBLE, efficiency_b DOUBLE,
            efficiency_difference DOUBLE, cpu_per_wall_difference DOUBLE)
    """)
    for grain, start, end, ja, ca, wa, cwa, jb, cb, wb, cwb in AB_ROWS:
        ea = None if ca is None else ca / cwa
        eb = cb / cwb
        ra = None if ca is None else ca / wa
        rb = cb / wb
        con.execute(
            "INSERT INTO marts.ab_comparison VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                grain,
                start,
                end,
                end - dt.timedelta(days=1),
                ja,
                ca,
                wa,
                cwa,
                ra,
                ea,
                jb,
                cb,
                wb,
                cwb,
                rb,
                eb,
                None if ea is None else eb - ea,
                None if ra is None else rb - ra,
            ],
        )
    con.execute("""
        CREATE TABLE marts.cache_hourly (
            "hour" TIMESTAMPTZ, server_host VARCHAR, accesses BIGINT, hit_accesses BIGINT,
            gb_delivered_from_cache DOUBLE, gb_staged_in DOUBLE, gb_bypassed DOUBLE, gb_read DOUBLE,
            hit_ratio_requests DOUBLE, hit_ratio_bytes DOUBLE)
    """)
    for hour, server, acc, hits, gbc, gbs, gbb, gbr in CACHE_ROWS:
        con.execute(
            "INSERT INTO marts.cache_hourly VALUES (?::TIMESTAMP AT TIME ZONE 'UTC',?,?,?,?,?,?,?,?,?)",
            [hour, server, acc, hits, gbc, gbs, gbb, gbr, hits / acc, gbc / (gbc + gbs + gbb)],
        )
    con.execute("""
        CREATE TABLE marts.storage_price_performance (
            config_name VARCHAR, storage_type VARCHAR, device_model VARCHAR, devices_per_node INTEGER,
            unit_price DECIMAL(10,2), currency VARCHAR, price_per_node DOUBLE, capacity_gb_per_node DOUBLE,
            price_per_gb DOUBLE, nodes BIGINT, jobs BIGINT, efficiency DOUBLE, node_throughput DOUBLE,
            price_per_throughput DOUBLE)
    """)
    con.executemany("INSERT INTO marts.storage_price_performance VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", PRICE_ROWS)
    con.execute("""
        CREATE TABLE marts.job_efficiency (
            job_id VARCHAR, storage_type VARCHAR, ab_arm VARCHAR, job_class VARCHAR, account VARCHAR,
            efficiency DOUBLE, cpu_seconds DOUBLE, core_wall_seconds DOUBLE, wall_seconds DOUBLE,
            allocated_cores INTEGER, "day" DATE, week DATE)
    """)
    for jid, st, arm, cls, acct, cpu, wall, cores, day in JOBS:
        con.execute(
            "INSERT INTO marts.job_efficiency VALUES (?,?,?,?,?,?,?,?,?,?,?, date_trunc('week', ?::DATE))",
            [jid, st, arm, cls, acct, cpu / (wall * cores), cpu, wall * cores, wall, cores, day, day],
        )


def _create_raw(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE main.raw_rejects (record_kind VARCHAR, source VARCHAR, location VARCHAR, "
        "field VARCHAR, reason VARCHAR)"
    )
    con.executemany("INSERT INTO main.raw_rejects VALUES (?,?,?,?,?)", REJECTS)
    con.execute("CREATE TABLE main.raw_batches (batch_id VARCHAR, record_kind VARCHAR, rows BIGINT)")
    con.executemany("INSERT INTO main.raw_batches VALUES (?,?,?)", [("b1", "job", 4), ("b2", "file_access", 5)])


def make_warehouse(path: Path, *, marts: bool = True, raw: bool = True) -> Path:
    with duckdb.connect(str(path)) as con:
        if marts:
            _create_marts(con)
        if raw:
            _create_raw(con)
    return path
