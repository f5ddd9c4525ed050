"""Site changes: the site_change record and `tierlens change`, and the before/after analysis.

Item by item: changes recorded from the command line and from a site's change log (bad lines
rejected with file and line); the change_effects statistic on arrays with a known effect and with
none over a batch of seeds; and the synthetic site with a change or a job-mix shift, end to end.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import pytest
from typer.testing import CliRunner

from tierlens.cli import app

runner = CliRunner()
UTC = timezone.utc


def _rows(wh, sql):
    con = duckdb.connect(str(wh), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


# --- 1. the record and the command ------------------------------------------------------------


def _add_pagepool_change(wh, at: str, nodes: str, *extra: str):
    return runner.invoke(
        app,
        [
            "change",
            "add",
            "GPFS pagepool 512MB -> 1GB",
            "--at",
            at,
            "--nodes",
            nodes,
            "--category",
            "filesystem",
            *extra,
            "--warehouse",
            str(wh),
        ],
    )


def test_change_add_records_scope_time_and_category(tmp_path):
    wh = tmp_path / "w.duckdb"
    r = _add_pagepool_change(wh, "2026-10-14T09:00Z", "wn01, wn02", "--by", "ifca")
    assert r.exit_code == 0, r.output
    got = _rows(
        wh,
        "select changed_at, description, category, scope_nodes, scope_storage_type, changed_by, "
        "change_id from raw_site_change",
    )
    assert len(got) == 1
    at, text, cat, nodes, st, by, cid = got[0]
    assert at == datetime(2026, 10, 14, 9, 0, tzinfo=UTC)
    assert (text, cat, nodes, st, by) == ("GPFS pagepool 512MB -> 1GB", "filesystem", ["wn01", "wn02"], None, "ifca")
    # the same change again is the same row (derived id), not a second one
    r = _add_pagepool_change(wh, "2026-10-14T10:00+01:00", "wn01,wn02")
    assert r.exit_code == 0, r.output
    assert _rows(wh, "select count(*), min(change_id) from raw_site_change") == [(1, cid)]
    listed = runner.invoke(app, ["change", "list", "--csv", "--warehouse", str(wh)])
    assert listed.exit_code == 0 and "nodes wn01,wn02" in listed.output and "2026-10-14T09:00Z" in listed.output


def test_change_add_refuses_a_bad_time_and_rejects_an_unknown_category(tmp_path):
    wh = tmp_path / "w.duckdb"
    r = runner.invoke(app, ["change", "add", "x", "--at", "yesterday", "--warehouse", str(wh)])
    assert r.exit_code == 2 and "ISO 8601" in r.output
    r = runner.invoke(
        app, ["change", "add", "x", "--at", "2026-10-01", "--category", "plumbing", "--warehouse", str(wh)]
    )
    assert r.exit_code == 1
    assert _rows(wh, "select count(*) from raw_site_change") == [(0,)]
    assert _rows(wh, "select field from raw_rejects") == [("category",)]


def test_change_log_csv_and_yaml_load_with_rejects_naming_file_and_line(tmp_path):
    wh = tmp_path / "w.duckdb"
    log_csv = tmp_path / "changes.csv"
    log_csv.write_text(
        "at,description,category,storage_type,by\n"
        "2026-10-02T10:00Z,NIC firmware,network,,alice\n"
        '2026-10-03T10:00Z,"controller cache\nwrite-back",plumbing,,bob\n'  # a two-line cell: line 3
        "notatime,whatever,other,,\n"  # line 5
        "2026-10-05T10:00,raid1 readahead 4MB,storage,raid1,carol\n"
        "2026-10-06T10:00,tape,storage,floppy,dan\n"
    )  # line 7
    log_yaml = tmp_path / "changes.yaml"
    log_yaml.write_text(
        "changes:\n"
        "  - at: 2026-10-06T08:00:00Z\n"
        "    what: xcache RAM 64GB\n"
        "    category: cache\n"
        "    arm: B\n"
        "  - at: 2026-10-07\n"  # line 6
        "    description: oops\n"
        "    colour: red\n"
    )
    r = runner.invoke(app, ["change", "load", str(log_csv), str(log_yaml), "--warehouse", str(wh)])
    assert r.exit_code == 0, r.output
    loaded = _rows(
        wh,
        "select description, category, scope_storage_type, scope_ab_arm, changed_at "
        "from raw_site_change order by changed_at",
    )
    assert loaded == [
        ("NIC firmware", "network", None, None, datetime(2026, 10, 2, 10, tzinfo=UTC)),
        ("raid1 readahead 4MB", "storage", "raid1", None, datetime(2026, 10, 5, 10, tzinfo=UTC)),
        ("xcache RAM 64GB", "cache", None, "B", datetime(2026, 10, 6, 8, tzinfo=UTC)),
    ]
    rejects = sorted(_rows(wh, "select location, field from raw_rejects where record_kind = 'site_change'"))
    assert rejects == sorted(
        [
            (f"{log_csv}:line 3", "category"),
            (f"{log_csv}:line 5", "changed_at"),
            (f"{log_csv}:line 7", "scope_storage_type"),
            (f"{log_yaml}:line 6", "colour"),
        ]
    )
    # loading the same log again changes nothing
    r = runner.invoke(app, ["change", "load", str(log_csv), str(log_yaml), "--warehouse", str(wh)])
    assert _rows(wh, "select count(*) from raw_site_change") == [(3,)]
    assert _rows(wh, "select count(*) from raw_rejects") == [(4,)]


# --- 2a. the statistic on arrays: known effect covered, null effect rarely significant ------

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from tierlens.analysis.change import ChangeParams, assign_bins, bin_labels, change_effects  # noqa: E402
from tierlens.records import SITE_CHANGE  # noqa: E402

T0 = datetime(2026, 10, 1, tzinfo=UTC)
CHANGE_AT = datetime(2026, 10, 8, tzinfo=UTC)
HOUR_US = 3_600_000_000


def _array_site(seed: int, effect: float, jobs_per_hour: int = 8, days: int = 14) -> pa.Table:
    """Jobs on 4 nodes (wn1, wn2 in scope), per-job efficiency 0.75 + an hourly shock every job
    of that hour shares + noise; in-scope jobs after the change gain ``effect``."""
    rng = np.random.default_rng(seed)
    hours = days * 24
    n = hours * jobs_per_hour
    hour = np.repeat(np.arange(hours), jobs_per_hour)
    shock = rng.normal(0, 0.03, hours)[hour]
    node = rng.choice(["wn1", "wn2", "wn3", "wn4"], n)
    end_us = int(T0.timestamp() * 1e6) + hour * HOUR_US + rng.integers(0, HOUR_US, n)
    wall = rng.uniform(600, 3 * 3600, n)
    start_us = end_us - (wall * 1e6).astype(np.int64)
    after = start_us >= int(CHANGE_AT.timestamp() * 1e6)
    eff = 0.75 + shock + rng.normal(0, 0.1, n) + np.where(after & np.isin(node, ["wn1", "wn2"]), effect, 0.0)
    cores = rng.choice([1, 4], n, p=[0.8, 0.2])
    to_ts = lambda us: pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))  # noqa: E731
    return pa.table(
        {
            "cluster": ["c"] * n,
            "node": node,
            "storage_type": ["hdd"] * n,
            "ab_arm": ["A"] * n,
            "job_class": rng.choice(["analysis", "production"], n),
            "start_time": to_ts(start_us),
            "end_time": to_ts(end_us),
            "cpu_seconds": eff * wall * cores,
            "wall_seconds": wall,
            "core_wall_seconds": wall * cores,
            "bytes_read": (rng.lognormal(np.log(5e9), 1.0, n)).astype(np.int64),
            "bytes_read_remote": pa.nulls(n, pa.int64()),
        }
    )


def _changes(*entries: dict) -> pa.Table:
    base = {f.name: None for f in SITE_CHANGE}
    return pa.Table.from_pylist([base | e for e in entries], schema=SITE_CHANGE)


NODE_CHANGE = {
    "change_id": "c1",
    "changed_at": CHANGE_AT,
    "description": "pagepool",
    "category": "filesystem",
    "scope_nodes": ["wn1", "wn2"],
}


def test_bins_have_the_labels_the_sql_macro_writes():
    assert bin_labels((1, 3, 10, 30, 100)) == ["<1 GB", "1-3 GB", "3-10 GB", "10-30 GB", "30-100 GB", ">=100 GB"]
    got = assign_bins(np.array([0, 0.999e9, 1e9, 29.9e9, 1e11, np.nan]), (1, 3, 10, 30, 100))
    assert got.tolist() == ["<1 GB", "<1 GB", "1-3 GB", "10-30 GB", ">=100 GB", "unknown"]


def test_point_estimate_is_the_difference_in_differences_of_ratios_of_sums():
    jobs = _array_site(1, 0.05)
    out = change_effects(jobs, _changes(NODE_CHANGE), ChangeParams(n_resamples=199)).to_pylist()
    row = next(r for r in out if r["row_kind"] == "change")
    d = jobs.to_pydict()
    t = CHANGE_AT.timestamp()
    w = 7 * 86400

    def eff(scope: bool, after: bool) -> float:
        num = den = 0.0
        for i in range(len(d["node"])):
            s, e = d["start_time"][i].timestamp(), d["end_time"][i].timestamp()
            window = (s >= t and e < t + w) if after else (t - w <= e < t)
            if window and (d["node"][i] in ("wn1", "wn2")) == scope:
                num += d["cpu_seconds"][i]
                den += d["core_wall_seconds"][i]
        return num / den

    expected = (eff(True, True) - eff(True, False)) - (eff(False, True) - eff(False, False))
    assert row["comparison"] == "difference-in-differences" and not row["control_missing"]
    assert row["effect_unstratified"] == pytest.approx(expected, abs=1e-12)
    assert row["efficiency_scope_after"] == pytest.approx(eff(True, True), abs=1e-12)
    assert row["effect_unstratified_ci_low"] < expected < row["effect_unstratified_ci_high"]
    assert row["conclusion"] == "efficiency higher after"
    strata = [r for r in out if r["row_kind"] == "stratum"]
    assert {r["job_class"] for r in strata} == {"analysis", "production"}
    assert sum(r["jobs_scope_before"] for r in strata) == row["jobs_scope_before"]


def test_interval_covers_a_known_effect_at_about_95_percent():
    true_effect, reps, covered = 0.03, 60, 0
    for seed in range(reps):
        out = change_effects(
            _array_site(100 + seed, true_effect, jobs_per_hour=4),
            _changes(NODE_CHANGE),
            ChangeParams(n_resamples=299, seed=seed),
        ).to_pylist()
        row = out[0]
        covered += row["effect_ci_low"] <= true_effect <= row["effect_ci_high"]
    # 95 % nominal; 60 repetitions: binomial sd ~2.8 points
    assert covered / reps >= 0.85, covered


def test_a_null_change_is_no_significant_difference_in_at_least_90_percent_of_seeds():
    reps, null = 60, 0
    for seed in range(reps):
        out = change_effects(
            _array_site(500 + seed, 0.0, jobs_per_hour=4),
            _changes(NODE_CHANGE),
            ChangeParams(n_resamples=299, seed=seed),
        ).to_pylist()
        null += out[0]["conclusion"] == "no significant difference"
    assert null / reps >= 0.90, null


def test_flags_short_window_overlap_and_missing_control():
    jobs = _array_site(3, 0.0, days=10)  # 7 days before the change, 3 after
    site_wide = {"change_id": "c2", "changed_at": CHANGE_AT, "description": "kernel update", "category": "software"}
    later = {
        "change_id": "c3",
        "changed_at": datetime(2026, 10, 9, tzinfo=UTC),
        "description": "x",
        "scope_nodes": ["wn9"],
    }
    out = {
        r["change_id"]: r
        for r in change_effects(jobs, _changes(site_wide, later), ChangeParams(n_resamples=99)).to_pylist()
        if r["row_kind"] == "change"
    }
    c2, c3 = out["c2"], out["c3"]
    assert c2["short_window"] and c2["after_days_with_data"] < 3.01
    assert c2["control_missing"] and c2["comparison"] == "before-after" and c2["jobs_control_before"] == 0
    assert c2["overlapping_changes"] == "c3" and c3["overlapping_changes"] == "c2"
    assert "site-wide change" in c2["warning"] and "overlaps change(s) c3" in c2["warning"]
    # wn9 ran nothing: no job in scope, so no conclusion
    assert c3["jobs_scope_before"] == 0 and c3["conclusion"] == "insufficient data" and not c3["enough_data"]


def test_an_incremental_build_reads_only_the_rebuilt_changes_windows_and_gives_their_rows():
    """The rows of the changes a window rebuilds, from only the jobs needed_jobs_sql selects, equal
    those computed from every job; a gap in the data before the first window must still date the
    data's first day (before_days_with_data) as a full build does."""
    from datetime import date

    from tierlens.analysis.change import jobs_needed_from, needed_jobs_sql

    jobs = _array_site(11, 0.02, jobs_per_hour=4, days=30)
    end = jobs.column("end_time").to_pylist()
    gap = [not (T0 + timedelta(days=2) <= e < T0 + timedelta(days=9)) for e in end]
    jobs = jobs.filter(pa.array(gap))
    changes = _changes(
        NODE_CHANGE | {"change_id": "c1", "changed_at": T0 + timedelta(days=14)},
        {"change_id": "c2", "changed_at": T0 + timedelta(days=15), "description": "kernel", "category": "software"},
        NODE_CHANGE | {"change_id": "c3", "changed_at": T0 + timedelta(days=25)},
    )
    p = ChangeParams(n_resamples=99)
    changes_from = date(2026, 10, 23)  # c1's windows end on 10-22: kept; c2 (10-23) and c3 rebuilt
    since = jobs_needed_from(changes, p, changes_from, None)
    assert since == T0 + timedelta(days=15 - 7)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.register("job_efficiency", jobs)
    needed = con.execute(needed_jobs_sql("job_efficiency", since)).to_arrow_table()
    con.close()
    # the jobs ending from `since` on, and the cluster's first job: counted independently
    assert needed.num_rows == sum(e >= since for e in jobs.column("end_time").to_pylist()) + 1
    assert needed.num_rows < jobs.num_rows
    full = change_effects(jobs, changes, p, changes_from, None).to_pylist()
    part = change_effects(needed, changes, p, changes_from, None).to_pylist()
    assert {r["change_id"] for r in full} == {"c2", "c3"}
    key = lambda r: (r["change_id"], r["row_kind"], r["job_class"], r["bytes_read_bin"])  # noqa: E731
    assert len(part) == len(full)
    for a, b in zip(sorted(full, key=key), sorted(part, key=key)):
        for column, value in a.items():
            if isinstance(value, float):
                assert b[column] == pytest.approx(value, rel=1e-9, abs=1e-12), column
            else:
                assert b[column] == value, column
    c2 = next(r for r in full if r["change_id"] == "c2" and r["row_kind"] == "change")
    assert c2["before_days_with_data"] == pytest.approx(7.0)
    # nothing to rebuild: no job is read
    assert jobs_needed_from(changes, p, date(2027, 1, 1), None).year == 9999
    assert jobs_needed_from(changes, p, None, None) is None


# --- 2b. the synthetic site, end to end through the warehouse and dbt -----------------------

import dataclasses  # noqa: E402
from datetime import timedelta  # noqa: E402

from support.dbt import REPO, run_dbt  # noqa: E402
from tierlens.pipeline import ingest  # noqa: E402
from tierlens.records import RecordKind  # noqa: E402
from tierlens.sources.synthetic import MixShift, SyntheticChange, SyntheticOptions, demo_site, generate  # noqa: E402
from tierlens.sources.synthetic.site import contention_free_site  # noqa: E402

EDGES = (1, 3, 10, 30, 100)
HDD_CHANGE = SyntheticChange(day=7, read_speedup=3.0, storage_type="hdd", description="hdd read-ahead 4 MB")
DEMO = SyntheticOptions(days=14, seed=5, site=demo_site(nodes_per_type=1), changes=(HDD_CHANGE,))
MIX = SyntheticOptions(
    days=10,
    seed=5,
    site=contention_free_site(nodes=6),
    changes=(SyntheticChange(day=5, read_speedup=1.0, description="nothing really"),),
    mix_shift=MixShift(day=5, share_after=0.3, cpu_factor=0.15, skim_files=(50, 80)),
)


def _jobs_of(batches) -> list[dict]:
    """Finished jobs with their tag's storage type, straight from the generator's batches."""
    jobs, tags = {}, {}
    for b in batches:
        if b.kind is RecordKind.JOB:
            for r in b.table.to_pylist():
                jobs[(r["cluster"], r["job_id"])] = r
        elif b.kind is RecordKind.JOB_TAG:
            for r in b.table.to_pylist():
                tags[(r["cluster"], r["job_id"])] = r["storage_type"]
    return [
        dict(
            r,
            storage_type=tags[k],
            cpu=r["cpu_user_seconds"] + r["cpu_system_seconds"],
            core_wall=r["wall_seconds"] * r["allocated_cores"],
            bin=_bin(r["bytes_read"]),
        )
        for k, r in jobs.items()
    ]


def _bin(b) -> str:
    labels = ["<1 GB", "1-3 GB", "3-10 GB", "10-30 GB", "30-100 GB", ">=100 GB"]
    return "unknown" if b is None else labels[sum(b >= e * 1e9 for e in EDGES)]


def _window(jobs, at: datetime, days: float, after: bool, pred=lambda j: True) -> list[dict]:
    w = timedelta(days=days)
    if after:
        return [j for j in jobs if pred(j) and j["start_time"] >= at and j["end_time"] < at + w]
    return [j for j in jobs if pred(j) and at - w <= j["end_time"] < at]


def _eff(jobs) -> float:
    return sum(j["cpu"] for j in jobs) / sum(j["core_wall"] for j in jobs)


@pytest.fixture(scope="module")
def synthetic_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("change_effects")
    wh = root / "warehouse.duckdb"
    demo_batches = list(generate(DEMO))
    mix_batches = list(generate(MIX))
    ingest(demo_batches + mix_batches, wh)
    # models only: the claims are the mart's figures; the project's tests run in test_dbt_project.py,
    # the demo and the equivalence fixture
    proc = run_dbt(wh, root / "dbt", "build", "--exclude-resource-type", "test")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    without = _jobs_of(generate(dataclasses.replace(DEMO, changes=())))
    return wh, _jobs_of(demo_batches), without, _jobs_of(mix_batches)


def _mart(wh, cluster: str) -> list[dict]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        cur = con.execute(
            "select * from marts.change_effects where cluster = ? order by row_kind, job_class, bytes_read_bin",
            [cluster],
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_synthetic_change_is_recovered_within_its_interval(synthetic_build):
    wh, with_change, without_change, _ = synthetic_build
    rows = _mart(wh, "t2demo")
    row = next(r for r in rows if r["row_kind"] == "change")
    at = datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=HDD_CHANGE.day)
    hdd = lambda j: j["storage_type"] == "hdd"  # noqa: E731
    assert row["changed_at"] == at and row["scope"] == "storage type hdd"
    assert row["comparison"] == "difference-in-differences"
    assert row["jobs_scope_after"] == len(_window(with_change, at, 7, True, hdd))
    # The true effect: the hdd jobs after the change against the same site run without it.
    after_with = _window(with_change, at, 7, True, hdd)
    after_without = _window(without_change, at, 7, True, hdd)
    truth = _eff(after_with) - _eff(after_without)
    assert truth > 0.05  # the change is big enough to matter
    assert row["effect_unstratified_ci_low"] <= truth <= row["effect_unstratified_ci_high"], (truth, row)
    # Stratified: the same truth per stratum, weighted as the mart weighs (in-scope core-hours, both windows).
    used = [
        r
        for r in rows
        if r["row_kind"] == "stratum"
        and min(r["jobs_scope_before"], r["jobs_scope_after"], r["jobs_control_before"], r["jobs_control_after"]) >= 5
    ]
    scope_jobs = _window(with_change, at, 7, True, hdd) + _window(with_change, at, 7, False, hdd)
    weight = {
        (r["job_class"], r["bytes_read_bin"]): sum(
            j["core_wall"] for j in scope_jobs if (j["job_class"], j["bin"]) == (r["job_class"], r["bytes_read_bin"])
        )
        for r in used
    }
    total = sum(weight.values())
    truth_std = 0.0
    for (jc, b), w in weight.items():
        pick = lambda j: j["job_class"] == jc and j["bin"] == b  # noqa: E731
        cf = [j for j in after_without if pick(j)]
        if cf:
            truth_std += w / total * (_eff([j for j in after_with if pick(j)]) - _eff(cf))
    assert row["effect_ci_low"] <= truth_std <= row["effect_ci_high"], (truth_std, row)
    assert row["conclusion"] == "efficiency higher after"


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_a_job_mix_shift_is_no_effect_once_stratified(synthetic_build):
    wh, _, _, mix_jobs = synthetic_build
    rows = _mart(wh, "t2mix")
    row = next(r for r in rows if r["row_kind"] == "change")
    at = datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=5)
    before, after = _window(mix_jobs, at, 7, False), _window(mix_jobs, at, 7, True)
    # unstratified: the plain before/after difference of all jobs, shown beside the stratified one
    assert row["effect_unstratified"] == pytest.approx(_eff(after) - _eff(before), abs=1e-9)
    assert row["conclusion_unstratified"] == "efficiency lower after"
    assert row["conclusion"] == "no significant difference", row
    assert row["effect_ci_low"] <= 0 <= row["effect_ci_high"]
    # the skims (>= 100 GB) exist only after the shift: outside the strata, and the share says so
    skim_hours = sum(j["core_wall"] for j in after if j["bin"] == ">=100 GB")
    assert skim_hours > 0
    assert row["strata_core_hours_share"] <= 1 - skim_hours / sum(j["core_wall"] for j in before + after) + 1e-9
    assert row["control_missing"] and row["short_window"]  # site-wide; 5 of 7 days each side


# --- 3. efficiency against job input size (IFCA's table) -------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_efficiency_by_input_size_is_the_ratio_of_sums_per_bin_and_window(synthetic_build):
    wh, _, _, mix_jobs = synthetic_build
    con = duckdb.connect(str(wh), read_only=True)
    try:
        got = con.execute("""
            select period, bytes_read_bin, job_class, sum(jobs), sum(cpu_hours) / sum(core_wall_hours)
            from marts.efficiency_by_input_size
            where storage_type = 'other' and period in ('all', 'before synthetic-t2mix-1', 'after synthetic-t2mix-1')
            group by all""").fetchall()
    finally:
        con.close()
    at = datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=5)
    expected_sets = {
        "all": mix_jobs,
        "before synthetic-t2mix-1": _window(mix_jobs, at, 7, False),
        "after synthetic-t2mix-1": _window(mix_jobs, at, 7, True),
    }
    expected = {}
    for period, jobs in expected_sets.items():
        for j in jobs:
            key = (period, j["bin"], j["job_class"])
            n, c, w = expected.get(key, (0, 0.0, 0.0))
            expected[key] = (n + 1, c + j["cpu"], w + j["core_wall"])
    assert {(p, b, jc) for p, b, jc, _, _ in got} == set(expected)
    for p, b, jc, n, eff in got:
        en, ec, ew = expected[(p, b, jc)]
        assert n == en and eff == pytest.approx(ec / ew, rel=1e-9)
    # IFCA's finding in the synthetic site: the skims (largest bin) are the least efficient analysis jobs
    after = {b: e for p, b, jc, _, e in got if p == "after synthetic-t2mix-1" and jc == "analysis"}
    assert after[">=100 GB"] == min(after.values())


# --- 5. the report: change timeline, before/after table, IFCA's plot ---------------------------


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_report_shows_the_changes_and_efficiency_by_input_size(synthetic_build, tmp_path):
    import csv

    from tierlens.report import build_report

    wh = synthetic_build[0]
    result = build_report(wh, tmp_path / "report")
    for section in ("changes", "input_size"):
        assert section in result.sections and section not in result.no_data
    with (tmp_path / "report" / "change_effects.csv").open() as fh:
        rows = {r["change_id"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"synthetic-t2demo-1", "synthetic-t2mix-1"}
    mart = {r["change_id"]: r for c in ("t2demo", "t2mix") for r in _mart(wh, c) if r["row_kind"] == "change"}
    for cid, r in rows.items():
        assert float(r["effect"]) == pytest.approx(mart[cid]["effect"], rel=1e-12)
        assert r["conclusion"] == mart[cid]["conclusion"]
    html = result.html_path.read_text(encoding="utf-8")
    assert "Site changes: efficiency before and after" in html and "Efficiency against job input size" in html
    assert "hdd read-ahead 4 MB" in html


def test_synthetic_change_option_parses_and_refuses_bad_text():
    c = SyntheticChange.parse("day=14,storage_type=raid1,read_speedup=1.3")
    assert (c.day, c.storage_type, c.read_speedup, c.nodes) == (14.0, "raid1", 1.3, None)
    assert SyntheticChange.parse("day=3,nodes=wn-hdd-01+wn-hdd-02").nodes == ("wn-hdd-01", "wn-hdd-02")
    for bad in ("storage_type=raid1", "day=1,speed=2", "day=1,raid1"):
        with pytest.raises(ValueError, match="--change"):
            SyntheticChange.parse(bad)
    r = runner.invoke(app, ["demo", "--change", "day=1,speed=2", "--days", "1"])
    assert r.exit_code == 2 and "unknown key" in r.output


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_sql_did_last_weeks_change_help(synthetic_build):
    wh = synthetic_build[0]
    con = duckdb.connect(str(wh), read_only=True)
    try:
        cur = con.execute((REPO / "sql" / "did_last_weeks_change_help.sql").read_text())
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()
    # both changes (day 7 of t2demo, day 5 of t2mix) are within 7 days of the latest one
    mart = {r["description"]: r for c in ("t2demo", "t2mix") for r in _mart(wh, c) if r["row_kind"] == "change"}
    assert [r["description"] for r in rows] == sorted(mart, key=lambda d: mart[d]["changed_at"], reverse=True)
    for r in rows:
        assert r["conclusion"] == mart[r["description"]]["conclusion"]
        assert r["effect"] == pytest.approx(round(mart[r["description"]]["effect"], 3))
