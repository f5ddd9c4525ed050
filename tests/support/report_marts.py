"""A small warehouse with the marts the report's answers read (the A/B trial with its interval,
two site changes, a buying guide, completeness), with the long texts a real site writes (a
change's description, a node's name, a write warning), so a layout test sees tables as wide as
a real report's."""

from __future__ import annotations

from pathlib import Path

import duckdb

#: the columns of marts.hardware_options the report reads, as the mart types them
HARDWARE_OPTIONS_COLUMNS = """
    job_class VARCHAR, price_rank INTEGER, config_name VARCHAR, storage_type VARCHAR, evidence VARCHAR,
    jobs_per_node DOUBLE, cache VARCHAR, currency VARCHAR, node_config VARCHAR, cores_per_job DOUBLE,
    whole_node_price DOUBLE, price_per_node DOUBLE, price_per_gb DOUBLE, power_price_per_node_hour DOUBLE,
    efficiency DOUBLE, efficiency_low DOUBLE, efficiency_high DOUBLE, node_throughput DOUBLE,
    price_per_throughput DOUBLE, price_per_core_hour DOUBLE, price_per_core_hour_low DOUBLE,
    price_per_core_hour_high DOUBLE, interval_driver VARCHAR, ssd_lifetime_years DOUBLE,
    structural_error DOUBLE, staged_gb_per_node_hour DOUBLE, write_warning VARCHAR,
    generator_structural_error DOUBLE, published_structural_error DOUBLE, structural_error_source VARCHAR,
    under_write_read_p99_ms DOUBLE"""

#: (config, storage type, evidence, jobs/node, efficiency, low, high, price/core-h, low, high)
HARDWARE = (
    ("Enterprise NVMe (Samsung PM9A3 3.84 TB)", "nvme", "measured", 32, 0.872, 0.851, 0.893, 0.0121, 0.0118, 0.0124),
    ("RAID0 of two SATA SSDs (Kingston DC600M)", "raid0", "measured", 32, 0.845, 0.82, 0.87, 0.0126, 0.0122, 0.0130),
    # an interval past 100 %: the report shows it cut to what an efficiency can be
    ("Consumer SSD (Crucial MX500 2 TB)", "ssd", "probe", 32, 0.985, 0.943, 1.027, 0.0131, 0.0125, 0.0137),
    ("Local HDD (Seagate Exos 7E10 8 TB)", "hdd", "datasheet", 24, 0.712, 0.55, 0.87, 0.0162, 0.0133, 0.0208),
    ("NFS scratch on the site filer", "nfs", "measured", 32, 0.701, 0.69, 0.712, 0.0165, 0.0162, 0.0168),
)
NODE = "2 x AMD EPYC 7313 (32 cores), 256 GB, 1U chassis"
WRITE_WARNING = (
    "steady-state writes 180 MB/s after a 40 GB fast region, below the 310 MB/s a full node of this site's jobs "
    "writes to scratch"
)
CHANGES = (
    # id, at, description, effect, low, high, conclusion, warning
    (
        "nfs-tuning",
        "2026-10-15 06:00:00+00",
        "NFS nodes: rsize/wsize 1 MB and 16 nfsd threads on the filer",
        0.034,
        0.029,
        0.038,
        "efficiency higher after",
        None,
    ),
    (
        "hdd-readahead",
        "2026-10-22 09:30:00+00",
        "hdd read-ahead 4 MB on the worker nodes' scratch disks",
        -0.004,
        -0.013,
        0.006,
        "no significant difference",
        "overlaps the change nfs-tuning's after window; 12 jobs before (< 30)",
    ),
)
#: The A/B trial, whole site: A, B, B − A and its interval.
AB_SITE = (0.7784, 0.8408, 0.0624, 0.051, 0.073)


def add_answer_marts(path: Path) -> Path:
    """Create (or replace) the answers' marts in the warehouse at ``path``; returns ``path``."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS marts")
        a, b, diff, lo, hi = AB_SITE
        con.execute(
            """CREATE OR REPLACE TABLE marts.ab_uncertainty AS SELECT * FROM (VALUES
            ('all', 'site', 'all jobs', 'all', DATE '2026-10-01', DATE '2026-10-31', 4100, 4200, 30000.0, 31000.0,
             ?, ?, ?, ?, ?, 0.001, 0.91, 1.02, 0.11, 0.08, 0.14, true, 'B higher', NULL),
            ('all', 'storage_type', 'ssd', 'all', DATE '2026-10-01', DATE '2026-10-31', 12, 15, 90.0, 120.0,
             0.75, 0.8, 0.05, -0.1, 0.2, 0.4, 0.9, 0.95, 0.05, -0.1, 0.2, false, 'insufficient data',
             'arm A has 12 jobs (< 30)')
            ) AS t(subset, grouping, group_value, period_grain, period_start, period_end, jobs_a, jobs_b,
                   core_wall_hours_a, core_wall_hours_b, efficiency_a, efficiency_b, efficiency_difference,
                   efficiency_ci_low, efficiency_ci_high, efficiency_p_value, cpu_per_wall_a, cpu_per_wall_b,
                   cpu_per_wall_difference, cpu_per_wall_ci_low, cpu_per_wall_ci_high, enough_data, conclusion,
                   warning)""",
            [a, b, diff, lo, hi],
        )
        con.execute("""CREATE OR REPLACE TABLE marts.change_effects (
            row_kind VARCHAR, change_id VARCHAR, changed_at TIMESTAMPTZ, description VARCHAR, scope VARCHAR,
            comparison VARCHAR, job_class VARCHAR, bytes_read_bin VARCHAR, jobs_scope_before BIGINT,
            jobs_scope_after BIGINT, core_hours_scope_before DOUBLE, core_hours_scope_after DOUBLE,
            efficiency_scope_before DOUBLE, efficiency_scope_after DOUBLE, efficiency_control_before DOUBLE,
            efficiency_control_after DOUBLE, effect DOUBLE, effect_ci_low DOUBLE, effect_ci_high DOUBLE,
            effect_unstratified DOUBLE, effect_unstratified_ci_low DOUBLE, effect_unstratified_ci_high DOUBLE,
            strata_core_hours_share DOUBLE, conclusion VARCHAR, conclusion_unstratified VARCHAR,
            enough_data BOOLEAN, short_window BOOLEAN, control_missing BOOLEAN, overlapping_changes VARCHAR,
            warning VARCHAR)""")
        for cid, at, desc, effect, elo, ehi, conclusion, warning in CHANGES:
            con.execute(
                "INSERT INTO marts.change_effects VALUES ('change', ?, ?, ?, 'storage type nfs', "
                "'difference in differences (control: the nodes on other storage)', NULL, NULL, 1204, 1187, "
                "10250.5, 10120.25, 0.7012, 0.7361, 0.8123, 0.8126, ?, ?, ?, ?, ?, ?, 0.97, ?, ?, ?, false, "
                "false, ?, ?)",
                [
                    cid,
                    at,
                    desc,
                    effect,
                    elo,
                    ehi,
                    effect + 0.004,
                    elo - 0.01,
                    ehi + 0.01,
                    conclusion,
                    conclusion,
                    warning is None,
                    None if warning is None else "nfs-tuning",
                    warning,
                ],
            )
        con.execute(f"CREATE OR REPLACE TABLE marts.hardware_options ({HARDWARE_OPTIONS_COLUMNS})")
        for i, (name, st, ev, n, e, elo, ehi, p, plo, phi) in enumerate(HARDWARE):
            derived = ev != "measured"
            con.execute(
                "INSERT INTO marts.hardware_options VALUES ('analysis', ?, ?, ?, ?, ?, 'none', 'GBP', ?, 1.0, "
                "11900, 412.5, 0.108, 0.052, ?, ?, ?, ?, 17.25, ?, ?, ?, 'efficiency', ?, ?, 31.5, ?, ?, ?, ?, ?)",
                [
                    i + 1,
                    name,
                    st,
                    ev,
                    n,
                    NODE,
                    e,
                    elo,
                    ehi,
                    n * e,
                    p,
                    plo,
                    phi,
                    3.4 if st in ("ssd", "nvme", "raid0") else None,
                    0.112 if derived else None,
                    WRITE_WARNING if st == "ssd" else None,
                    0.017 if derived else None,
                    0.112 if derived else None,
                    "published figures" if derived else None,
                    4.7 if ev == "probe" else None,
                ],
            )
        con.execute("""CREATE OR REPLACE TABLE marts.data_completeness AS SELECT * FROM (VALUES
            (DATE '2026-10-05', 'cluster', 't2', 'cpu_hours_tagged', 9300.0, 10000.0, 0.93, false, NULL),
            (DATE '2026-10-12', 'cluster', 't2', 'cpu_hours_tagged', 9500.0, 10000.0, 0.95, false, NULL),
            (DATE '2026-10-05', 'server', 'xcache-1', 'bytes_joined', 880.0, 1000.0, 0.88, false, NULL),
            (DATE '2026-10-12', 'server', 'xcache-1', 'bytes_joined', 910.0, 1000.0, 0.91, true, NULL),
            (DATE '2026-10-12', 'source', 'slurm', 'rejected_records', 3.0, 5000.0, 0.0006, false,
             'job: missing or below 1 core')
            ) AS t("day", grain, subject, measure, numerator, denominator, share, provisional, detail)""")
    return path
