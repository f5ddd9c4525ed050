"""The dbt project (dbt/) on a small hand-made warehouse whose answers are known.

Builds the raw tables of records.py in a DuckDB file under tmp_path, inserts a few jobs, tags,
file accesses, nodes and catalog rows with round numbers, runs ``dbt build`` the way tierlens
does (subprocess, TIERLENS_WAREHOUSE, target/log paths outside the source tree), and checks the
marts against values computed here independently.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from support.dbt import CATALOG_KEYS, NODE_KEYS, REPO, create_raw_tables, dict_rows, insert, rows, run_dbt
from support.rows import job_row, read_access
from tierlens.records import RecordKind

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

UTC = timezone.utc
HDD = "Seagate ST500DM002"
SSD = "Kingston SV300S37A120G"
NVME = "Samsung MZQL2960HCJR"
GB = 1_000_000_000


def t(day: int, hour: int, minute: int = 0, month: int = 3) -> datetime:
    return datetime(2024, month, day, hour, minute, tzinfo=UTC)


# --- the hand-made site -------------------------------------------------------------------
# Week 1 is Mon 2024-03-04 .. Sun 03-10, week 2 starts Mon 03-11.

NODES = [
    # cluster, node, storage_type, device_models, device_count, job_slots, nic_gbps, ab_arm
    ("gla", "wn-hdd-01", "hdd", [HDD], 1, 8, 1.0, "A"),
    ("gla", "wn-r0-01", "raid0", [HDD, HDD], 2, 8, 10.0, "B"),
    ("gla", "wn-ssd-01", "ssd", [SSD], 1, 8, 1.0, None),
]

# job_id, step_id, node, account, partition, job_class, start, wall_s, cores, cpu_user, cpu_sys, ended
JOBS = [
    ("1001", "", "wn-hdd-01", "atlasprod", "grid", None, t(4, 9), 3600, 8, 20000.0, 880.0, True),
    ("1002", "", "wn-hdd-01", "atlas", "grid", None, t(4, 10), 7200, 4, 14000.0, 400.0, True),
    ("1003", "", "wn-r0-01", "atlas", "grid", "analysis", t(5, 12), 1000, 1, 1200.0, 50.0, True),  # 1.25
    ("1004", "", "wn-r0-01", "atlas", "grid", None, t(11, 6), 3600, 8, 25000.0, 920.0, True),
    ("1005", "", "wn-ssd-01", "cms", "prod_queue", None, t(6, 0), 1800, 2, 2000.0, 160.0, True),
    ("1006", "", "wn-x-99", None, "grid", None, t(6, 23, 30), 3600, 1, 1800.0, 0.0, True),
    ("1007", "", "wn-hdd-01", "atlas", "grid", None, t(11, 10), None, 8, None, None, False),  # running
    ("1008", "", "wn-hdd-01", "atlas", "grid", None, t(11, 11), 0, 8, 0.0, 0.0, True),  # wall 0
    ("1009", "batch", "wn-r0-01", "atlas", "grid", None, t(5, 13), 1800, 2, 3000.0, 0.0, True),
]
FINISHED = {"1001", "1002", "1003", "1004", "1005", "1006", "1009"}

# job_id, step_id, node, storage_type, device_models, ab_arm, cache_route
TAGS = [
    ("1001", "", "wn-hdd-01", "hdd", [HDD], "A", "cache:xcache01:1094"),
    ("1003", "", "wn-r0-01", "raid0", [HDD, HDD], "B", "direct"),
    ("1004", "", "wn-r0-01", "raid0", [HDD, HDD], "B", None),
    ("1005", "", "wn-ssd-01", "ssd", [SSD], None, None),
    ("1007", "", "wn-hdd-01", "hdd", [HDD], "A", None),
    ("1009", "", "wn-r0-01", "raid0", [HDD, HDD], "B", None),  # whole-job tag, job row is step 'batch'
    ("2000", "", "wn-nv-01", "nvme", [NVME], None, None),  # job not loaded yet: a warning only
]

# What int_job_tagged must derive: storage_type, ab_arm, job_class
EXPECTED_TAGGING = {
    "1001": ("hdd", "A", "production"),  # account contains 'prod'
    "1002": ("hdd", "A", "analysis"),  # untagged: node inventory gives storage and arm
    "1003": ("raid0", "B", "analysis"),
    "1004": ("raid0", "B", "analysis"),
    "1005": ("ssd", "none", "production"),  # partition contains 'prod'; no arm anywhere
    "1006": ("unknown", "none", "analysis"),  # node in no inventory, no tag
    "1009": ("raid0", "B", "analysis"),  # step falls back to the whole-job tag
}

# server_host, unique_id, role, identity, start, end, read_bytes_at_close, hit, miss, bypass
ACCESSES = [
    ("xcache01", "a1", "cache", "synthetic.gla.1001", t(4, 9, 10), t(4, 9, 40), 1 * GB, 1 * GB, 0, 0),
    ("xcache01", "a2", "cache", "synthetic.gla.1001", t(4, 9, 20), t(4, 9, 50), 1 * GB, GB // 2, GB // 2, 0),
    ("xcache01", "a3", "cache", None, t(4, 9, 30), t(4, 9, 59), 2 * GB, 0, 0, 2 * GB),
    ("xcache01", "a4", "cache", "synthetic.gla.1004", t(11, 6, 10), t(11, 7, 30), 3 * GB, 3 * GB, 0, 0),
    # The user had set XRD_MONINFO; the Slurm plugin appended the identity after a comma.
    (
        "origin01",
        "a5",
        "origin",
        "my-analysis,synthetic.gla.1003",
        t(5, 12, 1),
        t(5, 12, 10),
        GB // 2,
        None,
        None,
        None,
    ),
    ("xcache01", "a6", "cache", "synthetic.gla.9999", t(11, 7, 0), t(11, 7, 45), 1 * GB, 0, 1 * GB, 0),
    ("xcache02", "a7", "cache", "synthetic.gla.1009", t(5, 13, 5), None, 0, 0, 0, 0),  # never closed
]

# Loaded into raw_storage_catalog: overrides the seed's 'Consumer SSD', adds 'Spare RAID5'.
RAW_CATALOG = [
    ("Consumer SSD", "ssd", SSD, 1, 150.0, "GBP", 120 * GB, 40.0),
    ("Spare RAID5", "raid5", "WDC WD40EFRX", 4, 100.0, "GBP", 4000 * GB, None),
]
SEED_CATALOG = {  # config_name: storage_type, device_model, devices, unit_price, capacity GB
    "1xHDD": ("hdd", HDD, 1, 40.0, 500),
    "2xHDD RAID0": ("raid0", HDD, 2, 40.0, 500),
    "2xHDD RAID1": ("raid1", HDD, 2, 40.0, 500),
    "Consumer SSD": ("ssd", SSD, 1, 155.0, 120),
    "Enterprise NVMe": ("nvme", NVME, 1, 245.0, 960),
}


def job_rows() -> list[dict]:
    rows = []
    for job_id, step, node, account, part, jclass, start, wall, cores, user, sys_, ended in JOBS:
        rows.append(
            job_row(
                "synthetic",
                "gla",
                job_id,
                start,
                wall if ended else None,
                step_id=step,
                user_name="alice",
                account=account,
                vo="atlas",
                job_class=jclass,
                partition=part,
                node=node,
                node_list=node,
                submit_time=start - timedelta(minutes=5),
                allocated_cores=cores,
                cpu_user_seconds=user,
                cpu_system_seconds=sys_,
                bytes_read=10 * GB,
                bytes_written=GB,
            )
        )
    return rows


def tag_rows() -> list[dict]:
    return [
        dict(
            batch_system="synthetic",
            cluster="gla",
            job_id=j,
            step_id=s,
            node=n,
            storage_type=st,
            device_models=dm,
            scratch_path="/scratch",
            ab_arm=arm,
            cache_route=route,
            tagged_at=t(4, 0),
            tagger="synthetic",
        )
        for j, s, n, st, dm, arm, route in TAGS
    ]


def access_rows() -> list[dict]:
    rows = []
    for host, uid, role, ident, start, end, read, hit, miss, bypass in ACCESSES:
        cache = role == "cache"
        rows.append(
            read_access(
                read,
                server_host=host,
                unique_id=uid,
                server_role=role,
                file_lfn=f"/atlas/{uid}.root",
                file_size_bytes=4 * GB,
                start_time=start,
                end_time=end,
                read_single_average_bytes=1e6,
                read_ops=read // 10**6,
                client_host="wn-hdd-01",
                client_pid=4242,
                app_name="athena",
                job_identity=ident,
                cache_hit_bytes=hit if cache else None,
                cache_miss_bytes=miss if cache else None,
                cache_bypass_bytes=bypass if cache else None,
                close_seen=end is not None,
            )
        )
    return rows


# A Slurm 24.11 launch failure as `sacct --json` prints it (data_parser v0.0.42): FAILED, time.start
# NO_VAL, elapsed 0, no steps, "None assigned" nodes. Loaded through the real sacct parser.
LAUNCH_FAILURE_DOC = REPO / "tests" / "data" / "sacct_24.11_launch_failure.json"


def launch_failure_rows() -> list[dict]:
    from tierlens.sources.slurm.sacct import parse_json_document

    rows, _, rejects = parse_json_document(LAUNCH_FAILURE_DOC.read_text(), LAUNCH_FAILURE_DOC.name)
    assert not rejects and len(rows) == 1
    return rows


# A cache whose origin is monitored too: xcache03 (pid 777, from its '=' record) stages a file in
# from origin02, whose f-stream shows the read from host xcache03, pid 777. The g-stream calls the
# access a hit (a first read it waited for); the origin's record says it was fetched. On 03-08,
# when no job ran, from a client host no job ran on.
FILL_LFN = "/atlas/fill.root"


def fill_rows() -> list[dict]:
    base = access_rows()[0]
    cache = dict(
        base,
        server_host="xcache03",
        unique_id="c1",
        file_lfn=FILL_LFN,
        start_time=t(8, 10),
        end_time=t(8, 10, 5),
        job_identity=None,
        client_host="ui01",
        server_pid=777,
        cache_hit_bytes=GB,
        cache_miss_bytes=0,
        cache_bypass_bytes=0,
    )
    origin = dict(
        base,
        server_host="origin02",
        unique_id="o1",
        server_role="origin",
        file_lfn=FILL_LFN,
        start_time=t(8, 10, 1),
        end_time=t(8, 10, 4),
        job_identity=None,
        client_host="xcache03",
        client_pid=777,
        app_name="xrootd",
        cache_hit_bytes=None,
        cache_miss_bytes=None,
        cache_bypass_bytes=None,
    )
    return [cache, origin]


def node_rows() -> list[dict]:
    return dict_rows(NODE_KEYS, NODES)


def catalog_rows() -> list[dict]:
    return dict_rows(CATALOG_KEYS, RAW_CATALOG)


def build_warehouse(path: Path) -> None:
    create_raw_tables(path)
    con = duckdb.connect(str(path))
    try:
        insert(con, RecordKind.JOB, job_rows() + launch_failure_rows())
        insert(con, RecordKind.JOB_TAG, tag_rows())
        insert(con, RecordKind.FILE_ACCESS, access_rows() + fill_rows())
        insert(con, RecordKind.NODE, node_rows())
        insert(con, RecordKind.STORAGE_CATALOG, catalog_rows())
        con.execute("""INSERT INTO raw_rejects VALUES
            ('b1', 'job', 'sacct.json', 'sacct.json:line 7', 'allocated_cores', 'missing or below 1 core', '{}', now()),
            ('b1', 'job', 'sacct.json', 'sacct.json:line 9', 'allocated_cores', 'missing or below 1 core', '{}', now()),
            ('b2', 'file_access', 'collector', 'udp:offset 100', 'start_time', 'missing', '{}', now())""")
    finally:
        con.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dbt_project")
    warehouse = root / "warehouse.duckdb"
    build_warehouse(warehouse)
    proc = run_dbt(warehouse, root / "dbt", "build")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return warehouse, proc.stdout


@pytest.fixture()
def con(built):
    warehouse, _ = built
    c = duckdb.connect(str(warehouse), read_only=True)
    c.execute("SET TimeZone = 'UTC'")
    yield c
    c.close()


# --- independent computations ---------------------------------------------------------------


def finished_jobs() -> list[dict]:
    out = []
    for r in job_rows():
        if r["job_id"] not in FINISHED:
            continue
        storage, arm, jclass = EXPECTED_TAGGING[r["job_id"]]
        cpu = r["cpu_user_seconds"] + r["cpu_system_seconds"]
        core_wall = r["wall_seconds"] * r["allocated_cores"]
        day = r["end_time"].date()
        out.append(
            dict(
                r,
                storage_type=storage,
                ab_arm=arm,
                job_class=jclass,
                cpu=cpu,
                core_wall=core_wall,
                eff=cpu / core_wall,
                day=day,
                week=day - timedelta(days=day.weekday()),
            )
        )
    return out


# --- the build ------------------------------------------------------------------------------


def test_build_passes_with_schemas_named_exactly(built, con):
    _, stdout = built
    schemas = {r[0] for r in con.execute("select distinct table_schema from information_schema.tables").fetchall()}
    assert {"staging", "intermediate", "marts", "seeds", "main"} <= schemas
    assert not any(s.startswith("main_") for s in schemas)
    marts = {
        r[0]
        for r in con.execute("select table_name from information_schema.tables where table_schema = 'marts'").fetchall()
    }
    assert marts == {
        "job_efficiency",
        "efficiency_by_group",
        "ab_comparison",
        "cache_hourly",
        "storage_price_performance",
        # analytics depth (tests/test_analysis_marts.py checks their numbers)
        "ab_uncertainty",
        "node_occupancy_hourly",
        "occupancy_efficiency",
        "client_fairness",
        "file_popularity",
        # XRootD accesses per job and per file
        "job_data_access",
        "file_reads",
        # the efficiency model's input and its predictions (empty until a simulation)
        "job_io_profile",
        "efficiency_measured_vs_predicted",
        "efficiency_what_if",
        # site operations: changes before/after (tests/test_change_effects.py)
        "change_effects",
        "efficiency_by_input_size",
        "data_completeness",
        # the buying guide (empty until `simulate efficiency --candidates`)
        "hardware_options",
    }
    # The tag of job 2000 (not loaded) is reported as a warning, not a failure.
    assert "WARN" in stdout and "stg_job_tag_job_exists_in_stg_job" in stdout


def test_job_efficiency(con):
    got = {r["job_id"]: r for r in rows(con, "select * from marts.job_efficiency")}
    expected = {j["job_id"]: j for j in finished_jobs()}
    assert set(got) == set(expected)  # running job 1007 and wall-0 job 1008 are out
    for job_id, e in expected.items():
        g = got[job_id]
        assert (g["storage_type"], g["ab_arm"], g["job_class"]) == EXPECTED_TAGGING[job_id], job_id
        assert g["cpu_seconds"] == pytest.approx(e["cpu"])
        assert g["core_wall_seconds"] == pytest.approx(e["core_wall"])
        assert g["efficiency"] == pytest.approx(e["eff"])
        assert g["efficiency_above_one"] == (e["eff"] > 1)
        assert g["day"] == e["day"] and g["week"] == e["week"]
    # An efficiency above 1 is kept, not clipped, and flagged.
    assert got["1003"]["efficiency"] == pytest.approx(1.25)
    assert got["1003"]["efficiency_above_one"] is True
    assert got["1006"]["day"] == date(2024, 3, 7)  # ended 00:30 UTC the next day
    assert got["1004"]["week"] == date(2024, 3, 11)
    assert got["1001"]["cache_route"] == "cache:xcache01:1094"
    # Exactly joined file accesses.
    assert (got["1001"]["files_accessed"], got["1001"]["bytes_read_remote"]) == (2, 2 * GB)
    assert (got["1003"]["files_accessed"], got["1003"]["bytes_read_remote"]) == (1, GB // 2)
    assert (got["1004"]["files_accessed"], got["1004"]["bytes_read_remote"]) == (1, 3 * GB)
    assert (got["1009"]["files_accessed"], got["1009"]["bytes_read_remote"]) == (1, 0)
    assert (got["1002"]["files_accessed"], got["1002"]["bytes_read_remote"]) == (0, 0)


def test_launch_failure_counts_as_failed_not_in_efficiency(con):
    [failure] = launch_failure_rows()
    assert failure["start_time"] is None and failure["wall_seconds"] == 0 and failure["state"] == "FAILED"
    tagged = rows(con, "select * from intermediate.int_job_tagged where job_id = '700'")
    assert [(r["ran"], r["failed"], r["cpu_seconds"], r["core_wall_seconds"]) for r in tagged] == [(False, True, 0, 0)]
    assert rows(con, "select * from marts.job_efficiency where job_id = '700'") == []
    # every failed job of int_job_tagged once in the day rows, once in the week rows
    for grain in ("day", "week"):
        [total] = rows(
            con,
            "select sum(failed_jobs) as failed, sum(launch_failures) as launch, sum(jobs) as jobs "
            f"from marts.efficiency_by_group where period_grain = '{grain}'",
        )
        assert (total["failed"], total["launch"], total["jobs"]) == (1, 1, len(FINISHED))


def test_completeness_counts_cache_accesses_by_their_evidence(con):
    got = {
        (r["day"], r["subject"], r["measure"]): (r["numerator"], r["denominator"])
        for r in rows(con, "select * from marts.data_completeness where grain = 'server' and measure like 'cache_%'")
    }

    # cache accesses per server, all days: xcache01 a1 a2 a3 a4 a6 (g-stream), xcache02 a7 (g-stream,
    # its zero figures included), xcache03 c1 (the origin's record beside the g-stream: 'both')
    def total(subject, measure):
        return tuple(sum(v[i] for (_, s, m), v in got.items() if s == subject and m == measure) for i in (0, 1))

    assert total("xcache01", "cache_accesses_gstream_only") == (5, 5)
    assert total("xcache01", "cache_accesses_reconciled") == (0, 5)
    assert total("xcache02", "cache_accesses_gstream_only") == (1, 1)
    assert total("xcache03", "cache_accesses_reconciled") == (1, 1)
    assert total("xcache03", "cache_accesses_gstream_only") == (0, 1)
    assert total("origin02", "cache_stage_in_accesses") == (1, 1)  # the fill, outside the join shares


def test_file_access_match_quality(con):
    got = {r["unique_id"]: r for r in rows(con, "select * from intermediate.int_file_access_by_job")}
    assert {u: r["match_quality"] for u, r in got.items()} == {
        "a1": "exact",
        "a2": "exact",
        "a3": "inferred",
        "a4": "exact",
        "a5": "exact",
        "a6": "unmatched",
        "a7": "exact",
        "c1": "unmatched",
        "o1": "unmatched",
    }
    assert got["a7"]["step_id"] == "batch"
    # a3 has no identity: job 1001 ran on its client host wn-hdd-01 while it was open, and its
    # exactly matched accesses a1 and a2 came from the same client pid at the same time.
    assert (got["a3"]["job_id"], got["a3"]["match_method"], got["a3"]["match_candidates"]) == ("1001", "host_pid", 1)
    # a6 names job 9999, which is not loaded: never re-assigned by inference.
    assert got["a6"]["job_id"] is None and got["a6"]["match_method"] is None


def test_efficiency_by_group_matches_hand_computation(con):
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for j in finished_jobs():
        dims = (j["storage_type"], j["ab_arm"], j["account"] or "unknown", j["job_class"])
        groups[("day", j["day"], *dims)].append(j)
        groups[("week", j["week"], *dims)].append(j)
    # the launch failure: no tag, no node, account atlas, partition grid; ended 2024-03-06 (a Wednesday)
    [failure] = launch_failure_rows()
    end_day = failure["end_time"].date()
    failure_dims = ("unknown", "none", failure["account"], "analysis")
    failure_keys = {
        ("day", end_day, *failure_dims),
        ("week", end_day - timedelta(days=end_day.weekday()), *failure_dims),
    }
    got = {
        (r["period_grain"], r["period_start"], r["storage_type"], r["ab_arm"], r["account"], r["job_class"]): r
        for r in rows(con, "select * from marts.efficiency_by_group")
    }
    assert set(got) == set(groups) | failure_keys
    for key in failure_keys:
        g = got[key]
        assert key not in groups  # a group of the launch failure alone
        assert (g["jobs"], g["failed_jobs"], g["launch_failures"], g["failed_share"]) == (0, 1, 1, 1.0)
        assert (g["cpu_hours"], g["core_wall_hours"], g["efficiency"], g["mean_job_efficiency"]) == (0, 0, None, None)
    for key, jobs in groups.items():
        g = got[key]
        assert (g["failed_jobs"], g["launch_failures"], g["failed_share"]) == (0, 0, 0.0)  # every job COMPLETED
        eff = sum(j["cpu"] for j in jobs) / sum(j["core_wall"] for j in jobs)
        assert g["jobs"] == len(jobs)
        assert g["cpu_hours"] == pytest.approx(sum(j["cpu"] for j in jobs) / 3600)
        assert g["wall_hours"] == pytest.approx(sum(j["wall_seconds"] for j in jobs) / 3600)
        assert g["core_wall_hours"] == pytest.approx(sum(j["core_wall"] for j in jobs) / 3600)
        assert g["efficiency"] == pytest.approx(eff)
        assert g["mean_job_efficiency"] == pytest.approx(sum(j["eff"] for j in jobs) / len(jobs))
        assert g["jobs_above_one"] == sum(j["eff"] > 1 for j in jobs)
        assert g["efficiency_above_one"] == (eff > 1)
    # The raid0/B/atlas/analysis group in week 1: jobs 1003 (1.25) and 1009.
    week1 = got[("week", date(2024, 3, 4), "raid0", "B", "atlas", "analysis")]
    assert week1["efficiency"] == pytest.approx((1250 + 3000) / (1000 + 3600))
    assert week1["jobs_above_one"] == 1
    day = got[("day", date(2024, 3, 5), "raid0", "B", "atlas", "analysis")]
    assert day["jobs"] == 2


def test_ab_comparison(con):
    got = {(r["period_grain"], r["period_start"]): r for r in rows(con, "select * from marts.ab_comparison")}
    a = [j for j in finished_jobs() if j["ab_arm"] == "A"]
    b = [j for j in finished_jobs() if j["ab_arm"] == "B"]
    all_row = got[("all", date(2024, 3, 4))]
    assert all_row["period_end"] == date(2024, 3, 12)
    assert (all_row["jobs_a"], all_row["jobs_b"]) == (2, 3)
    eff_a = sum(j["cpu"] for j in a) / sum(j["core_wall"] for j in a)
    eff_b = sum(j["cpu"] for j in b) / sum(j["core_wall"] for j in b)
    cpw_a = sum(j["cpu"] for j in a) / sum(j["wall_seconds"] for j in a)
    cpw_b = sum(j["cpu"] for j in b) / sum(j["wall_seconds"] for j in b)
    assert eff_a == pytest.approx(0.6125)
    assert all_row["cpu_hours_a"] == pytest.approx(9.8)
    assert all_row["wall_hours_a"] == pytest.approx(3.0)
    assert all_row["core_wall_hours_a"] == pytest.approx(16.0)
    assert all_row["efficiency_a"] == pytest.approx(eff_a)
    assert all_row["efficiency_b"] == pytest.approx(eff_b)
    assert all_row["cpu_per_wall_a"] == pytest.approx(cpw_a)
    assert all_row["efficiency_difference"] == pytest.approx(eff_b - eff_a)
    assert all_row["cpu_per_wall_difference"] == pytest.approx(cpw_b - cpw_a)
    # Periods: days with arm jobs (03-04 A only, 03-05 B only, 03-11 B only), two weeks, all.
    assert sorted(k for k in got if k[0] == "day") == [
        ("day", date(2024, 3, 4)),
        ("day", date(2024, 3, 5)),
        ("day", date(2024, 3, 11)),
    ]
    d = got[("day", date(2024, 3, 4))]
    assert d["period_end"] == date(2024, 3, 5)
    assert (d["jobs_b"], d["cpu_hours_b"], d["efficiency_b"], d["efficiency_difference"]) == (0, 0, None, None)
    w = got[("week", date(2024, 3, 4))]
    assert w["period_end"] == date(2024, 3, 11)
    assert (w["jobs_a"], w["jobs_b"]) == (2, 2)


def test_ab_comparison_arm_names_are_vars(built, tmp_path):
    warehouse, _ = built
    copy = tmp_path / "warehouse.duckdb"  # same file name: dbt-duckdb names the catalog after it
    shutil.copy(warehouse, copy)
    proc = run_dbt(copy, tmp_path / "dbt", "run", "--select", "ab_comparison", "--vars", "{arm_a: 'B', arm_b: 'none'}")
    assert proc.returncode == 0, proc.stdout[-4000:]
    c = duckdb.connect(str(copy), read_only=True)
    try:
        r = rows(c, "select * from marts.ab_comparison where period_grain = 'all'")[0]
    finally:
        c.close()
    assert (r["jobs_a"], r["jobs_b"]) == (3, 2)  # 'none': jobs 1005 and 1006


def test_cache_hourly(con):
    got = {(r["hour"], r["server_host"]): r for r in rows(con, "select * from marts.cache_hourly")}
    assert set(got) == {(t(4, 9), "xcache01"), (t(11, 7), "xcache01"), (t(5, 13), "xcache02"), (t(8, 10), "xcache03")}
    h = got[(t(8, 10), "xcache03")]  # the origin's record wins over the g-stream's "hit"
    assert (h["accesses"], h["hit_accesses"], h["gb_delivered_from_cache"], h["gb_staged_in"]) == (1, 0, 0, 1.0)
    h = got[(t(4, 9), "xcache01")]
    assert (h["accesses"], h["hit_accesses"]) == (3, 1)
    assert h["gb_delivered_from_cache"] == pytest.approx(1.5)
    assert h["gb_staged_in"] == pytest.approx(0.5)
    assert h["gb_bypassed"] == pytest.approx(2.0)
    assert h["gb_read"] == pytest.approx(4.0)
    assert h["hit_ratio_requests"] == pytest.approx(1 / 3)
    assert h["hit_ratio_bytes"] == pytest.approx(1.5 / 4.0)
    h = got[(t(11, 7), "xcache01")]  # a4 (a hit) and a6 (a miss)
    assert (h["accesses"], h["hit_accesses"], h["hit_ratio_requests"]) == (2, 1, 0.5)
    assert h["hit_ratio_bytes"] == pytest.approx(0.75)
    h = got[(t(5, 13), "xcache02")]  # unclosed, placed by its start; no outcome bytes
    assert (h["accesses"], h["hit_ratio_requests"], h["hit_ratio_bytes"]) == (1, 0.0, None)


def test_storage_price_performance(con):
    got = {r["config_name"]: r for r in rows(con, "select * from marts.storage_price_performance")}
    assert set(got) == set(SEED_CATALOG) | {"Spare RAID5"}
    # The warehouse's catalog row wins over the seed's.
    assert got["Consumer SSD"]["unit_price"] == 150.0
    assert got["2xHDD RAID1"]["price_per_gb"] == pytest.approx(80 / 500)  # Glasgow Table 4: 0.16
    assert got["2xHDD RAID0"]["capacity_gb_per_node"] == pytest.approx(1000)
    assert got["Spare RAID5"]["capacity_gb_per_node"] == pytest.approx(12000)

    def measured(node: str) -> tuple[float, float, float]:
        jobs = [j for j in finished_jobs() if j["node"] == node]
        hours = (max(j["end_time"] for j in jobs) - min(j["start_time"] for j in jobs)).total_seconds() / 3600
        cpu_hours = sum(j["cpu"] for j in jobs) / 3600
        return len(jobs), sum(j["cpu"] for j in jobs) / sum(j["core_wall"] for j in jobs), cpu_hours / (1 * hours)

    for config, node, price in [
        ("1xHDD", "wn-hdd-01", 40.0),
        ("2xHDD RAID0", "wn-r0-01", 80.0),
        ("Consumer SSD", "wn-ssd-01", 150.0),
    ]:
        jobs, eff, throughput = measured(node)
        g = got[config]
        assert g["price_per_node"] == pytest.approx(price)
        assert (g["nodes"], g["jobs"]) == (1, jobs), config
        assert g["efficiency"] == pytest.approx(eff)
        assert g["node_throughput"] == pytest.approx(throughput)
        assert g["price_per_throughput"] == pytest.approx(price / throughput)
    # 1xHDD: jobs 1001+1002 delivered 9.8 core-hours in 3 hours on one node.
    assert got["1xHDD"]["node_throughput"] == pytest.approx(9.8 / 3)
    assert got["Consumer SSD"]["price_per_throughput"] == pytest.approx(150 / 1.2)
    # No node with finished jobs: measurements stay NULL (the NVMe node only has a tag).
    for config in ("2xHDD RAID1", "Enterprise NVMe", "Spare RAID5"):
        g = got[config]
        assert (g["nodes"], g["jobs"], g["efficiency"], g["node_throughput"], g["price_per_throughput"]) == (
            None,
            None,
            None,
            None,
            None,
        ), config


def test_node_hourly_occupancy(con):
    got = {
        r["hour"]: r
        for r in rows(con, "select * from intermediate.int_node_hourly where node = 'wn-hdd-01' order by hour")
    }
    # 1001: 8 cores 09:00-10:00; 1002: 4 cores 10:00-12:00; 8 slots.
    assert sorted(got) == [t(4, 9), t(4, 10), t(4, 11)]
    assert [got[h]["occupancy"] for h in sorted(got)] == pytest.approx([1.0, 0.5, 0.5])
    r0 = rows(con, "select * from intermediate.int_node_hourly where node = 'wn-r0-01' order by hour")
    assert r0[0]["hour"] == t(5, 12) and r0[0]["allocated_core_seconds"] == pytest.approx(1000)
    assert r0[-1]["hour"] == t(11, 6)
    assert len(r0) == 6 * 24 + 6 - 12 + 1  # every hour 03-05 12:00 .. 03-11 06:00, idle ones 0
    assert sum(r["jobs"] == 0 for r in r0) == len(r0) - 3


def test_sql_queries_run(built, con):
    sql_dir = REPO / "sql"
    files = sorted(sql_dir.glob("*.sql"))
    names = {f.name for f in files}
    assert {
        "efficiency_by_storage_type.sql",
        "ab_summary.sql",
        "worst_groups_this_week.sql",
        "cache_hit_ratio_daily.sql",
        "price_per_throughput.sql",
        "rejects_summary.sql",
        "jobs_above_one.sql",
    } <= names
    for f in files:
        text = f.read_text()
        assert text.startswith("-- Question: "), f.name
        con.execute(text).fetchall()
    rejects = rows(con, (sql_dir / "rejects_summary.sql").read_text())
    assert any(r.get("rejects") == 2 for r in rejects)
    above = rows(con, (sql_dir / "jobs_above_one.sql").read_text())
    assert [r["job_id"] for r in above] == ["1003"]
