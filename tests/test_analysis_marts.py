"""The analytics marts on a hand-made warehouse built from the seed studies' own tables.

* SLAC (001): two node groups whose CPU and wall hours are the poster's A/B table over
  2013/09/04-10/07, and the 13-15 September high-cache-hit-ratio table; marts.ab_uncertainty must
  give back CPU/wall 0.75 / 0.81 and 0.21 / 0.36.
* Glasgow (000): three 8-slot nodes fully occupied at the throughput of Table 1 plus a half-empty
  tail, priced as in Table 4; storage_price_performance must give Table 4's price per throughput
  (at full occupancy) and per GB, and the occupancy marts must separate full from partial hours.
* Fermilab (003): 49 clients reading equal amounts from one server, completion times spread
  flat from 1 to 1.77 x the fastest; client_fairness must give the 1.77 ratio and Jain's index.
* SLAC algorithm 1 and 2: file_popularity's 12-hour table and rank on a few hand-made accesses.

Every expected number is computed here from the rows inserted, not read from the marts.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import numpy as np
import pytest

from support.dbt import CATALOG_KEYS, NODE_KEYS, create_raw_tables, dict_rows, insert, rows, run_dbt
from support.rows import job_row, read_access
from tierlens.records import RecordKind

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

UTC = timezone.utc
GB = 1_000_000_000
H = 3600.0

# --- SLAC A/B ----------------------------------------------------------------------------
SLAC_START = datetime(2013, 9, 4, tzinfo=UTC)
SLAC_HOURS = 33 * 24  # 2013/09/04 .. 10/07 (exclusive), the poster's 33 days
HIGH_START = datetime(2013, 9, 13, tzinfo=UTC)
HIGH_HOURS = 3 * 24  # 13-15 September
SLAC_ALL = {"A": (25776.9, 34143.3), "B": (28508.6, 35258.7)}  # CPU hours, wall hours
SLAC_HIGH = {"A": (49.5, 240.2), "B": (59.8, 166.3)}

# --- Glasgow ------------------------------------------------------------------------------
GLA_START = datetime(2010, 9, 1, tzinfo=UTC)  # first week of September 2010 (Table 3's data)
FULL_HOURS = 10
# node, storage_type, device model, throughput at full occupancy (Table 1 mean throughput)
GLA_NODES = [
    ("gla-kingston", "ssd", "Kingston SSDnow", 4.5),
    ("gla-intel", "ssd", "Intel X-25", 6.0),
    ("gla-raid0", "raid0", "HDD 250GB", 7.0),
]
# Table 4: unit price, devices, capacity per device (GB): 2xHDD(500GB) = 2 x 250 GB in RAID0.
GLA_CATALOG = [
    ("Kingston SSDnow", "ssd", "Kingston SSDnow", 1, 155.0, 128, 40.0),
    ("Intel X-25 SSD", "ssd", "Intel X-25", 1, 245.0, 160, 15.0),
    ("2xHDD(500GB)", "raid0", "HDD 250GB", 2, 40.0, 250, None),
]
GLA_TABLE4 = {"Kingston SSDnow": (34.40, 1.21), "Intel X-25 SSD": (40.80, 1.53), "2xHDD(500GB)": (11.40, 0.16)}
TAIL_HOURS = 5  # after the full period: 2 single-core jobs at efficiency 1.0 (occupancy 2/8)
BYTES_WRITTEN_PER_JOB = 20 * GB

# --- Fermilab -----------------------------------------------------------------------------
FNAL_START = datetime(2013, 10, 1, 12, 0, tzinfo=UTC)
FNAL_CLIENTS = 49
FNAL_BYTES = 2 * GB
FNAL_FASTEST_S = 100.0
FNAL_TIMES = np.linspace(1.0, 1.77, FNAL_CLIENTS) * FNAL_FASTEST_S
SMALL_BW = [8.0, 9.0, 10.0, 11.0]  # MB/s of four clients of a second server

# --- popularity ---------------------------------------------------------------------------
POP_R = datetime(2013, 11, 20, 12, 0, tzinfo=UTC)
# lfn, start offset before POP_R (hours), duration (hours), read bytes, file size
POP_ACCESSES = [
    ("/pop/f1", 1.0, 0.5, 4 * GB, 4 * GB),
    ("/pop/f1", 13.0, 0.5, 2 * GB, 4 * GB),
    ("/pop/f1", 13.5, 0.5, 2 * GB, 4 * GB),
    ("/pop/f1", 130.0, 0.5, 4 * GB, 4 * GB),  # beyond 10 periods and 5 days: not counted
    ("/pop/f2", 2.0, 2.0, GB // 10, GB),  # ends at POP_R: the reference time
    ("/pop/f2", 2.0, 0.2, GB // 10, GB),
    ("/pop/f2", 30.0, 0.2, GB // 10, GB),
    ("/pop/f3", 140.0, 0.2, GB, GB),  # only old accesses: absent
]


def _job(job_id, node, start, wall_s, cores, cpu_s, arm_tag=None, written=None):
    return job_row(
        "synthetic",
        "seed",
        job_id,
        start,
        wall_s,
        user_name="u",
        account="atlas",
        vo="atlas",
        job_class="analysis",
        partition="grid",
        node=node,
        node_list=node,
        allocated_cores=cores,
        cpu_user_seconds=cpu_s,
        cpu_system_seconds=0.0,
        bytes_written=written,
    )


def _access(uid, server, role, lfn, start, end, read, size, client="c0", hit=None, miss=None):
    return read_access(
        read,
        server_host=server,
        unique_id=uid,
        server_role=role,
        file_lfn=lfn,
        file_size_bytes=size,
        start_time=start,
        end_time=end,
        read_ops=1,
        client_host=client,
        client_pid=1,
        app_name="athena",
        cache_hit_bytes=hit,
        cache_miss_bytes=miss,
        cache_bypass_bytes=0 if role == "cache" else None,
    )


def slac_jobs() -> list[dict]:
    """One job per arm ending in each hour; hours of 13-15 Sept carry the high-hit table."""
    out = []
    for arm in ("A", "B"):
        cpu_all, wall_all = SLAC_ALL[arm]
        cpu_hi, wall_hi = SLAC_HIGH[arm]
        for h in range(SLAC_HOURS):
            end = SLAC_START + timedelta(hours=h, minutes=30)
            high = HIGH_START <= end < HIGH_START + timedelta(hours=HIGH_HOURS)
            if high:
                cpu, wall = cpu_hi / HIGH_HOURS, wall_hi / HIGH_HOURS
            else:
                n = SLAC_HOURS - HIGH_HOURS
                cpu, wall = (cpu_all - cpu_hi) / n, (wall_all - wall_hi) / n
            # vary the jobs a little around the hour's share: +/-3 % on alternate hours leaves the
            # sums unchanged (both the 72 high-hit hours and the other 720 are even in number)
            wobble = 0.03 if h % 2 else -0.03
            c = cpu * H * (1 + wobble)
            w = wall * H
            out.append(_job(f"slac{arm}{h}", f"slac-{arm.lower()}", end - timedelta(seconds=w), w, 1, c))
    return out


def slac_cache_accesses() -> list[dict]:
    out = []
    for h in range(SLAC_HOURS):
        start = SLAC_START + timedelta(hours=h, minutes=10)
        high = HIGH_START <= start < HIGH_START + timedelta(hours=HIGH_HOURS)
        hit = 9 * GB if high else 2 * GB
        out.append(
            _access(
                f"slac-c{h}",
                "ssdcache",
                "cache",
                f"/slac/{h}",
                start,
                start + timedelta(minutes=5),
                10 * GB,
                10 * GB,
                client="one-client",
                hit=hit,
                miss=10 * GB - hit,
            )
        )
    return out


def glasgow_jobs() -> list[dict]:
    out = []
    for node, _, _, throughput in GLA_NODES:
        eff = throughput / 8
        for slot in range(8):  # 8 single-core jobs fill the 8 slots for FULL_HOURS
            out.append(
                _job(
                    f"{node}-{slot}",
                    node,
                    GLA_START,
                    FULL_HOURS * H,
                    1,
                    eff * FULL_HOURS * H,
                    written=BYTES_WRITTEN_PER_JOB,
                )
            )
        for k in range(2):  # a half-empty tail: 2 of 8 slots at efficiency 1
            out.append(
                _job(
                    f"{node}-tail{k}",
                    node,
                    GLA_START + timedelta(hours=FULL_HOURS),
                    TAIL_HOURS * H,
                    1,
                    TAIL_HOURS * H,
                    written=BYTES_WRITTEN_PER_JOB,
                )
            )
    # a job across an hour boundary: 30 min in each of two tail hours, CPU shared pro rata
    out.append(
        _job(
            "gla-raid0-half", "gla-raid0", GLA_START + timedelta(hours=FULL_HOURS, minutes=30), H, 1, 0.5 * H, written=0
        )
    )
    return out


def fermilab_accesses() -> list[dict]:
    out = []
    for i, secs in enumerate(FNAL_TIMES):
        out.append(
            _access(
                f"fnal{i}",
                "lustre",
                "origin",
                f"/fnal/{i}",
                FNAL_START,
                FNAL_START + timedelta(seconds=float(secs)),
                FNAL_BYTES,
                FNAL_BYTES,
                client=f"fcl{i:02d}",
            )
        )
    for i, bw in enumerate(SMALL_BW):
        secs = 100.0
        out.append(
            _access(
                f"small{i}",
                "bluearc",
                "origin",
                f"/small/{i}",
                FNAL_START,
                FNAL_START + timedelta(seconds=secs),
                int(bw * 1e6 * secs),
                10 * GB,
                client=f"itb{i}",
            )
        )
    return out


def popularity_accesses() -> list[dict]:
    out = []
    for i, (lfn, before, dur, read, size) in enumerate(POP_ACCESSES):
        start = POP_R - timedelta(hours=before)
        out.append(
            _access(
                f"pop{i}", "origin-pop", "origin", lfn, start, start + timedelta(hours=dur), read, size, client=f"p{i}"
            )
        )
    return out


def node_rows() -> list[dict]:
    keys = NODE_KEYS
    out = [dict(zip(keys, ("seed", f"slac-{a.lower()}", "hdd", ["HDD"], 1, 8, 1.0, a))) for a in ("A", "B")]
    for node, st, model, _ in GLA_NODES:
        devices = 2 if st == "raid0" else 1
        out.append(dict(zip(keys, ("seed", node, st, [model] * devices, devices, 8, 1.0, None))))
    return out


def catalog_rows() -> list[dict]:
    return dict_rows(CATALOG_KEYS, [(n, st, m, d, p, "GBP", gb * GB, tbw) for n, st, m, d, p, gb, tbw in GLA_CATALOG])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("analysis_marts")
    warehouse = root / "warehouse.duckdb"
    create_raw_tables(warehouse)
    con = duckdb.connect(str(warehouse))
    try:
        insert(con, RecordKind.JOB, slac_jobs() + glasgow_jobs())
        insert(con, RecordKind.FILE_ACCESS, slac_cache_accesses() + fermilab_accesses() + popularity_accesses())
        insert(con, RecordKind.NODE, node_rows())
        insert(con, RecordKind.STORAGE_CATALOG, catalog_rows())
    finally:
        con.close()
    proc = run_dbt(warehouse, root / "dbt", "build", "--vars", "{high_hit_ratio: 0.7}")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return warehouse


@pytest.fixture()
def con(built):
    c = duckdb.connect(str(built), read_only=True)
    c.execute("SET TimeZone = 'UTC'")
    yield c
    c.close()


# --- SLAC ---------------------------------------------------------------------------------


def _ab(con, subset):
    return rows(
        con,
        f"""select * from marts.ab_uncertainty
        where subset = '{subset}' and grouping = 'site' and period_grain = 'all'""",
    )


def test_slac_ab_table_cpu_per_wall(con):
    (r,) = _ab(con, "all")
    assert r["cpu_hours_a"] == pytest.approx(25776.9) and r["wall_hours_a"] == pytest.approx(34143.3)
    assert r["cpu_hours_b"] == pytest.approx(28508.6) and r["wall_hours_b"] == pytest.approx(35258.7)
    assert round(r["cpu_per_wall_a"], 2) == 0.75 and round(r["cpu_per_wall_b"], 2) == 0.81
    assert r["period_start"].isoformat() == "2013-09-04" and r["period_end"].isoformat() == "2013-10-07"
    # single-core jobs: efficiency = CPU/wall; 792 hourly blocks, B clearly higher
    assert r["efficiency_difference"] == pytest.approx(r["cpu_per_wall_b"] - r["cpu_per_wall_a"])
    assert r["efficiency_ci_low"] <= r["efficiency_difference"] <= r["efficiency_ci_high"]
    assert r["efficiency_ci_low"] > 0 and r["conclusion"] == "B higher" and r["enough_data"]
    assert r["efficiency_p_value"] < 0.01
    assert r["blocks"] == r["paired_blocks"] == SLAC_HOURS


def test_slac_high_hit_ratio_period(con):
    (r,) = _ab(con, "high_hit_ratio")
    assert r["jobs_a"] == r["jobs_b"] == HIGH_HOURS
    assert r["cpu_hours_a"] == pytest.approx(49.5) and r["wall_hours_a"] == pytest.approx(240.2)
    assert r["cpu_hours_b"] == pytest.approx(59.8) and r["wall_hours_b"] == pytest.approx(166.3)
    assert round(r["cpu_per_wall_a"], 2) == 0.21 and round(r["cpu_per_wall_b"], 2) == 0.36
    assert r["period_start"].isoformat() == "2013-09-13"


def test_ab_warning_when_too_few_jobs(con):
    days = rows(
        con,
        """select * from marts.ab_uncertainty
        where subset = 'all' and grouping = 'site' and period_grain = 'day' order by period_start""",
    )
    assert len(days) == 33
    # 24 jobs per arm and day < ab_min_jobs (30): every day says it cannot conclude, and why
    assert all(not d["enough_data"] and d["conclusion"] == "insufficient data" for d in days)
    assert all("arm A has 24 jobs (< 30)" in d["warning"] for d in days)


# --- Glasgow ------------------------------------------------------------------------------


def test_glasgow_table4_prices(con):
    got = {r["config_name"]: r for r in rows(con, "select * from marts.storage_price_performance")}
    for name, (per_throughput, per_gb) in GLA_TABLE4.items():
        r = got[name]
        # Table 4 prints two decimals of values rounded to 0.1 (155 / 4.5 = 34.44 -> 34.40)
        assert r["price_per_throughput_full_occupancy"] == pytest.approx(per_throughput, abs=0.05), name
        assert round(r["price_per_gb"], 2) == per_gb, name
    throughput = {n: t for n, _, _, t in GLA_NODES}
    assert got["Kingston SSDnow"]["node_throughput_full_occupancy"] == pytest.approx(throughput["gla-kingston"])
    assert got["Kingston SSDnow"]["efficiency_full_occupancy"] == pytest.approx(4.5 / 8)


def test_price_per_efficiency_point_and_endurance(con):
    got = {r["config_name"]: r for r in rows(con, "select * from marts.storage_price_performance")}
    for name, _, _, devices, price, _, tbw in GLA_CATALOG:
        r = got[name]
        assert r["price_per_efficiency_point"] == pytest.approx(price * devices / (r["efficiency"] * 100))
        # 10 jobs x 20 GB written per node over the observed period (first start to last end)
        node = next(n for n, _, m, _ in GLA_NODES if m == next(c[2] for c in GLA_CATALOG if c[0] == name))
        span_h = FULL_HOURS + (TAIL_HOURS if node != "gla-raid0" else TAIL_HOURS)
        per_node_day = 10 * 20 / (span_h / 24)
        assert r["scratch_gb_written_per_node_day"] == pytest.approx(per_node_day)
        usable = 2 if name == "2xHDD(500GB)" else 1  # RAID0 splits writes over both disks
        assert r["gb_written_per_device_day"] == pytest.approx(per_node_day / usable)
        if tbw is None:
            assert r["expected_lifetime_years"] is None
        else:
            assert r["expected_lifetime_years"] == pytest.approx(tbw * 1000 / (per_node_day / usable) / 365.25)


def test_occupancy_on_hand_made_intervals(con):
    hours = rows(con, "select * from marts.node_occupancy_hourly where node = 'gla-raid0' order by hour")
    assert len(hours) == FULL_HOURS + TAIL_HOURS
    assert [h["fully_occupied"] for h in hours] == [True] * FULL_HOURS + [False] * TAIL_HOURS
    assert all(h["occupancy"] == pytest.approx(1.0) for h in hours[:FULL_HOURS])
    # the half job: 30 min in hours 10 and 11 -> 2.5/8 occupancy there, its CPU split 900 + 900 s
    assert hours[FULL_HOURS]["occupancy"] == pytest.approx(2.5 / 8)
    assert hours[FULL_HOURS + 1]["occupancy"] == pytest.approx(2.5 / 8)
    assert hours[FULL_HOURS + 2]["occupancy"] == pytest.approx(2 / 8)
    assert hours[FULL_HOURS]["cpu_seconds"] == pytest.approx(2 * H + 900)
    assert hours[0]["cpu_seconds"] == pytest.approx(8 * H * 7.0 / 8)

    occ = {(r["storage_type"], r["scope"]): r for r in rows(con, "select * from marts.occupancy_efficiency")}
    full, every = occ[("raid0", "fully_occupied")], occ[("raid0", "all")]
    assert full["node_hours"] == FULL_HOURS and every["node_hours"] == FULL_HOURS + TAIL_HOURS
    assert full["efficiency"] == pytest.approx(7.0 / 8)
    assert full["throughput"] == pytest.approx(7.0)
    cpu_all = 8 * FULL_HOURS * 7.0 / 8 + 2 * TAIL_HOURS + 0.5
    alloc_all = 8 * FULL_HOURS + 2 * TAIL_HOURS + 1
    assert every["efficiency"] == pytest.approx(cpu_all / alloc_all)
    assert every["throughput"] == pytest.approx(cpu_all / (FULL_HOURS + TAIL_HOURS))
    assert full["share_of_node_hours"] == pytest.approx(FULL_HOURS / (FULL_HOURS + TAIL_HOURS))
    # two SSD nodes: full-occupancy efficiency of both together
    ssd = occ[("ssd", "fully_occupied")]
    assert ssd["efficiency"] == pytest.approx((4.5 + 6.0) / 16)


# --- Fermilab -----------------------------------------------------------------------------


def test_fermilab_completion_time_ratio_and_jain(con):
    (r,) = rows(con, "select * from marts.client_fairness where server_host = 'lustre'")
    assert r["clients"] == FNAL_CLIENTS
    assert r["completion_time_ratio"] == pytest.approx(1.77)
    bw = FNAL_BYTES / 1e6 / FNAL_TIMES
    assert r["bandwidth_ratio"] == pytest.approx(1.77)
    assert r["jain_index"] == pytest.approx(bw.sum() ** 2 / (len(bw) * (bw**2).sum()))
    assert r["mean_bandwidth_mb_s"] == pytest.approx(bw.mean())
    assert r["bandwidth_cv"] == pytest.approx(bw.std() / bw.mean())
    assert r["spread_above_mean"] == pytest.approx(bw.max() / bw.mean() - 1)


def test_jain_index_from_hand_made_bandwidths(con):
    (r,) = rows(con, "select * from marts.client_fairness where server_host = 'bluearc'")
    assert r["jain_index"] == pytest.approx(38.0**2 / (4 * (64 + 81 + 100 + 121)))
    assert r["min_bandwidth_mb_s"] == pytest.approx(8.0) and r["max_bandwidth_mb_s"] == pytest.approx(11.0)
    # one client only (the SLAC cache's): no fairness group
    assert rows(con, "select * from marts.client_fairness where server_host = 'ssdcache'") == []


# --- popularity ---------------------------------------------------------------------------


def test_file_popularity_table_and_rank(con):
    got = {r["file_lfn"]: r for r in rows(con, "select * from marts.file_popularity where file_lfn like '/pop/%'")}
    assert set(got) == {"/pop/f1", "/pop/f2"}
    ref = max(POP_R - timedelta(hours=b) + timedelta(hours=d) for _, b, d, _, _ in POP_ACCESSES)
    assert got["/pop/f1"]["reference_time"] == ref
    for lfn in ("/pop/f1", "/pop/f2"):
        mine = [(b, read, size) for f, b, _, read, size in POP_ACCESSES if f == lfn]
        periods = [0] * 10
        recent = []
        for before, read, size in mine:
            age_h = (ref - (POP_R - timedelta(hours=before))).total_seconds() / H
            p = math.floor(age_h / 12) + 1
            if p <= 10:
                periods[p - 1] += 1
            if age_h < 5 * 24:
                recent.append(read / size)
        r = got[lfn]
        assert [r[f"accesses_p{p:02d}"] for p in range(1, 11)] == periods, lfn
        assert r["reads_recent"] == len(recent)
        assert r["mean_read_fraction"] == pytest.approx(sum(recent) / len(recent))
        assert r["score"] == pytest.approx(len(recent) * sum(recent) / len(recent))
    assert got["/pop/f1"]["popularity_rank"] < got["/pop/f2"]["popularity_rank"]


def test_analysis_sql_queries_run(con):
    sql_dir = Path(__file__).resolve().parents[1] / "sql"
    for name in (
        "ab_with_confidence.sql",
        "efficiency_at_full_occupancy.sql",
        "storage_endurance.sql",
        "client_fairness.sql",
        "file_popularity.sql",
    ):
        text = (sql_dir / name).read_text()
        assert text.startswith("-- Question: "), name
        assert con.execute(text).fetchall(), name
