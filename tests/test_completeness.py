"""marts.data_completeness: what share of the jobs, CPU hours, accesses and bytes was seen and joined.

A generated site loses a known set of job tags, file accesses and job identities on the way
(chosen here at random, recorded here); the mart must show exactly those fractions, computed here
from the rows that were loaded. Orphan tags, collector counters and a rejected record are added
with known counts. A real Slurm job run without the plugin must show as untagged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from support.airflow import AIRFLOW_PY, DRIVER, REPO, airflow_env
from support.dbt import run_dbt
from tierlens.cli import app
from tierlens.pipeline import ingest
from tierlens.records import COLLECTOR_STATS, JOB, JOB_TAG, Batch, RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

UTC = timezone.utc
SITE = demo_site(nodes_per_type=1)
OPTIONS = SyntheticOptions(days=2, seed=11, site=SITE)
DROP_TAGS, DROP_ACCESS_JOBS, DROP_IDENTITY = 0.10, 0.20, 0.15
CACHE_HOST = SITE.cache.host


def _degrade(batches, rng):
    """The site's batches with tags, whole jobs' accesses and identities removed at random."""
    job_rows = [r for b in batches if b.kind is RecordKind.JOB for r in b.table.to_pylist()]
    ids = sorted(r["job_id"] for r in job_rows)
    untagged = set(rng.choice(ids, int(len(ids) * DROP_TAGS), replace=False))
    no_access = set(rng.choice(ids, int(len(ids) * DROP_ACCESS_JOBS), replace=False))
    out, accesses = [], []
    for b in batches:
        if b.kind is RecordKind.JOB_TAG:
            keep = pa.array([j not in untagged for j in b.table["job_id"].to_pylist()])
            out.append(Batch(b.kind, b.table.filter(keep), b.source))
        elif b.kind is RecordKind.FILE_ACCESS:
            rows = []
            for r in b.table.to_pylist():
                job_id = str(100000 + int(r["unique_id"].split("-")[1].split(".")[0]))
                if job_id in no_access:
                    continue
                if r["job_identity"] is not None and rng.random() < DROP_IDENTITY:
                    r["job_identity"] = None
                rows.append(r)
            accesses += rows
            out.append(Batch(b.kind, pa.Table.from_pylist(rows, schema=b.table.schema), b.source))
        else:
            out.append(b)
    return out, job_rows, untagged, accesses


def _day(ts: datetime):
    return ts.astimezone(UTC).date()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("completeness")
    wh = root / "warehouse.duckdb"
    batches, job_rows, untagged, accesses = _degrade(list(generate(OPTIONS)), np.random.default_rng(3))
    # Two plugin spool records for jobs accounting never delivered, on the first day.
    t0 = datetime(2026, 10, 1, 6, tzinfo=UTC)
    orphans = [
        {f.name: None for f in JOB_TAG}
        | {
            "batch_system": "synthetic",
            "cluster": SITE.cluster,
            "job_id": f"orphan{i}",
            "step_id": "",
            "node": "wn-hdd-01",
            "storage_type": "hdd",
            "tagged_at": t0,
        }
        for i in range(2)
    ]
    batches.append(Batch(RecordKind.JOB_TAG, pa.Table.from_pylist(orphans, schema=JOB_TAG), "orphans"))
    # Collector counters: one socket-level row with kernel drops, one per-server row with gaps.
    stats = [
        {f.name: "" if pa.types.is_string(f.type) else 0 for f in COLLECTOR_STATS}
        | {
            "collector_host": "col1",
            "worker": 0,
            "interval_start": t0,
            "interval_end": t0 + timedelta(minutes=1),
            "server_host": server,
            "datagrams": dg,
            "kernel_drops": drops,
            "sequence_gaps": gaps,
        }
        for server, dg, drops, gaps in (("", 0, 25, 0), ("se01", 975, 0, 5))
    ]
    batches.append(Batch(RecordKind.COLLECTOR_STATS, pa.Table.from_pylist(stats, schema=COLLECTOR_STATS), "col1"))
    # One rejected job record among three from a source.
    bad = [
        {f.name: None for f in JOB}
        | {
            "batch_system": "slurm",
            "cluster": "other",
            "job_id": str(i),
            "step_id": "",
            "allocated_cores": 0 if i == 1 else 1,
        }
        for i in range(3)
    ]
    batches.append(Batch(RecordKind.JOB, pa.Table.from_pylist(bad, schema=JOB), "sacct-test.json"))
    ingest(batches, wh)
    slurm = _slurm_job_without_plugin(root, wh) if os.geteuid() == 0 else None
    proc = run_dbt(wh, root / "dbt", "build")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return dict(wh=wh, jobs=job_rows, untagged=untagged, accesses=accesses, slurm=slurm)


def _slurm_job_without_plugin(root: Path, wh: Path) -> dict:
    """A real one-node Slurm cluster with no plugin in plugstack.conf: its job has no tag."""
    from support.localcluster import LocalCluster

    why = LocalCluster.available()
    if why:
        pytest.fail(f"cannot start a Slurm cluster: {why} (deploy/ci/system-packages.txt)")
    work = Path(tempfile.mkdtemp(prefix="tierlens-completeness-", dir="/tmp"))
    os.chmod(work, 0o755)
    try:
        with LocalCluster(work / "cluster", plugstack_lines=[]) as cluster:
            # seconds of CPU: a job of 0 s elapsed has no efficiency and is not counted (int_job_tagged)
            r = cluster.run(
                ["srun", "-n1", "bash", "-c", "timeout 3 sh -c 'while :; do :; done'; echo ID:$SLURM_JOB_ID"]
            )
            job_id = r.stdout.split("ID:")[1].split()[0]
            cluster.wait_accounted(job_id)
            r = CliRunner().invoke(
                app, ["ingest", "slurm", "-w", str(wh), "--first-hours", "2"], env={"SLURM_CONF": str(cluster.conf)}
            )
            assert r.exit_code == 0, r.output + repr(r.exception)
            return {"cluster": cluster.cluster_name, "job_id": job_id}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mart(wh: Path, where: str = "true", params=None) -> list[dict]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        cur = con.execute(f"select * from marts.data_completeness where {where}", params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def _by_day(rows, measure: str, grain: str = "cluster", subject: str = SITE.cluster) -> dict:
    return {
        r["day"]: (r["numerator"], r["denominator"])
        for r in rows
        if r["measure"] == measure and r["grain"] == grain and r["subject"] == subject
    }


def test_tags_dropped_show_exactly_as_untagged_jobs_and_cpu_hours(built):
    rows = _mart(built["wh"])
    tagged, total, cpu_tagged, cpu_total = (defaultdict(float) for _ in range(4))
    for j in built["jobs"]:
        d = _day(j["end_time"])
        cpu = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        total[d] += 1
        cpu_total[d] += cpu / 3600
        if j["job_id"] not in built["untagged"]:
            tagged[d] += 1
            cpu_tagged[d] += cpu / 3600
    assert sum(total.values()) - sum(tagged.values()) == len(built["untagged"])
    assert _by_day(rows, "jobs_tagged") == {d: (tagged[d], total[d]) for d in total}
    assert _by_day(rows, "jobs_without_tag") == {d: (total[d] - tagged[d], total[d]) for d in total}
    got = _by_day(rows, "cpu_hours_tagged")
    assert set(got) == set(total)
    for d, (num, den) in got.items():
        assert num == pytest.approx(cpu_tagged[d], rel=1e-9) and den == pytest.approx(cpu_total[d], rel=1e-9)
    overall = sum(tagged.values()) / sum(total.values())
    assert overall == pytest.approx(1 - DROP_TAGS, abs=1 / sum(total.values()))
    # the two spool records without an accounting job
    orphans = _by_day(rows, "tags_without_job")
    assert sum(n for n, _ in orphans.values()) == 2


def test_accesses_and_identities_dropped_show_exactly(built):
    rows = _mart(built["wh"])
    job_day = {j["job_identity"]: _day(j["end_time"]) for j in built["jobs"]}
    with_exact, total = defaultdict(int), defaultdict(int)
    for j in built["jobs"]:
        total[_day(j["end_time"])] += 1
    exact_jobs = {a["job_identity"] for a in built["accesses"] if a["job_identity"]}
    for ident in exact_jobs:
        with_exact[job_day[ident]] += 1
    assert _by_day(rows, "jobs_with_exact_accesses") == {d: (with_exact[d], total[d]) for d in total}
    # per server and day: accesses from jobs (not the cache's own stage-in), exact = identity kept
    exact, accesses, stage_in = defaultdict(int), defaultdict(int), defaultdict(int)
    for a in built["accesses"]:
        key = (_day(a["start_time"]), a["server_host"])
        if a["client_host"] == CACHE_HOST:
            stage_in[key] += 1
            continue
        accesses[key] += 1
        exact[key] += a["job_identity"] is not None
    got = {
        (r["day"], r["subject"]): (r["numerator"], r["denominator"])
        for r in rows
        if r["grain"] == "server" and r["measure"] == "accesses_exact"
    }
    assert got == {k: (exact[k], accesses[k]) for k in accesses}
    kept = sum(exact.values()) / sum(accesses.values())
    # 3 % of the generator's accesses never carried an identity, and 15 % lost it here
    assert kept == pytest.approx((1 - 0.03) * (1 - DROP_IDENTITY), abs=0.02)
    split = defaultdict(float)
    for r in rows:
        if r["grain"] == "server" and r["measure"] in ("accesses_exact", "accesses_inferred", "accesses_unmatched"):
            split[(r["day"], r["subject"])] += r["numerator"]
    assert split == {k: float(v) for k, v in accesses.items()}
    got_stage = {
        (r["day"], r["subject"]): r["numerator"]
        for r in rows
        if r["grain"] == "server" and r["measure"] == "cache_stage_in_accesses" and r["numerator"]
    }
    assert got_stage == {k: float(v) for k, v in stage_in.items()}
    # The evidence behind each cache access's hit/miss bytes (int_file_access_reconciled): the
    # synthetic caches send no '=' record (no server_pid), so the origin's reads cannot be tied to
    # them and a cache access rests on its g-stream figures when it has them, else on nothing.
    cache_rows = [a for a in built["accesses"] if a["server_role"] == "cache"]
    assert cache_rows and all(a["server_pid"] is None for a in cache_rows)
    gstream, cache_total = defaultdict(int), defaultdict(int)
    for a in cache_rows:
        key = (_day(a["start_time"]), a["server_host"])
        cache_total[key] += 1
        gstream[key] += a["cache_hit_bytes"] is not None and a["cache_miss_bytes"] is not None
    got = {
        m: {
            (r["day"], r["subject"]): (r["numerator"], r["denominator"])
            for r in rows
            if r["grain"] == "server" and r["measure"] == m
        }
        for m in ("cache_accesses_gstream_only", "cache_accesses_reconciled")
    }
    assert got["cache_accesses_gstream_only"] == {k: (gstream[k], n) for k, n in cache_total.items()}
    assert got["cache_accesses_reconciled"] == {k: (0, n) for k, n in cache_total.items()}


def test_collector_losses_and_rejects(built):
    rows = _mart(built["wh"], "grain in ('collector', 'source') or measure = 'sequence_gaps'")
    got = {
        (r["grain"], r["subject"], r["measure"]): (r["numerator"], r["denominator"], r["detail"])
        for r in rows
        if r["measure"] in ("kernel_drops", "sequence_gaps", "rejected_records")
    }
    # of all it was sent: the 975 datagrams it received (over all servers) and the 25 the kernel dropped
    assert got[("collector", "col1", "kernel_drops")][:2] == (25, 1000)
    assert got[("server", "se01", "sequence_gaps")][:2] == (5, 980)
    assert got[("source", "sacct-test.json", "rejected_records")] == (1, 3, "job: missing or below 1 core")


def test_a_real_slurm_job_without_the_plugin_is_untagged(built):
    if built["slurm"] is None:
        pytest.skip("a real Slurm cluster needs root")
    rows = _mart(
        built["wh"], "grain = 'cluster' and subject = ? and measure = 'jobs_tagged'", [built["slurm"]["cluster"]]
    )
    con = duckdb.connect(str(built["wh"]), read_only=True)
    try:
        raw = con.execute(
            "select cluster, job_id, step_id, start_time, end_time, wall_seconds, state "
            "from raw_job where batch_system = 'slurm'"
        ).fetchall()
    finally:
        con.close()
    assert rows, f"the Slurm job is not in the completeness account; raw_job has {raw}"
    assert sum(r["numerator"] for r in rows) == 0
    assert sum(r["denominator"] for r in rows) >= 1


# --- alerts: the transform DAG on a warehouse above and below the thresholds (real Airflow) ---


def _airflow_env(base: Path) -> dict:
    af_home = base / "airflow-home"
    af_home.mkdir()
    # the DAG runs the mart and its tests; its parents are built beforehand (_parents_built)
    return airflow_env(af_home, {"TIERLENS_DBT_SELECT": "data_completeness"})


def _transform(env: dict, home: Path, warehouse: Path, **settings: str) -> dict:
    plan = {"dags": str(REPO / "dags"), "runs": [{"dag": "tierlens_transform"}]}
    run_env = {
        **env,
        "TIERLENS_HOME": str(home),
        "TIERLENS_WAREHOUSE": str(warehouse),
        **{f"TIERLENS_{k.upper()}": v for k, v in settings.items()},
    }
    r = subprocess.run(
        [str(AIRFLOW_PY), "-c", DRIVER, json.dumps(plan)],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=home,
    )
    lines = [x for x in r.stdout.splitlines() if x.startswith("DRIVER-RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-6000:] + r.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("DRIVER-RESULT "))["runs"][0]


def _warned_rows(job_rows: list[dict], untagged: set, warehouse: Path) -> dict[str, int]:
    """The rows each warn-severity completeness test must find in a warehouse at the default
    thresholds: cluster-days below 90 % tagged CPU hours from the jobs themselves, server-days
    below 80 % joined bytes and collector-days with kernel drops from the mart's counts."""
    cpu_tagged, cpu_total = defaultdict(float), defaultdict(float)
    for j in job_rows:
        cpu = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        cpu_total[_day(j["end_time"])] += cpu
        if j["job_id"] not in untagged:
            cpu_tagged[_day(j["end_time"])] += cpu
    bytes_rows = _mart(
        warehouse, "grain = 'server' and measure = 'bytes_joined' and denominator > 0 and not provisional"
    )
    drops = _mart(warehouse, "measure = 'kernel_drops' and not provisional")
    return {
        "completeness_cpu_hours_tagged_below_threshold": sum(
            1 for d, cpu in cpu_total.items() if cpu > 0 and cpu_tagged[d] / cpu < 0.90
        ),
        "completeness_bytes_joined_below_threshold": sum(
            1 for r in bytes_rows if r["numerator"] / r["denominator"] < 0.80
        ),
        "completeness_kernel_drops_above_threshold": sum(1 for r in drops if r["numerator"] > 0),
    }


def _time_passes(warehouse: Path, at: datetime) -> None:
    """A job of another cluster ending at ``at``: the newest data is then that late, so the days
    before it are final (their jobs have all ended)."""
    row = {f.name: None for f in JOB} | {
        "batch_system": "slurm",
        "cluster": "later",
        "job_id": "1",
        "step_id": "",
        "allocated_cores": 1,
        "start_time": at - timedelta(hours=1),
        "end_time": at,
        "wall_seconds": 3600.0,
        "cpu_user_seconds": 60.0,
        "cpu_system_seconds": 0.0,
        "state": "COMPLETED",
    }
    ingest([Batch(RecordKind.JOB, pa.Table.from_pylist([row], schema=JOB), "later")], warehouse)


def _alert(home: Path) -> dict | None:
    found = sorted((home / "alerts" / "tierlens_transform").glob("*.json"))
    assert len(found) <= 1, found  # one file per run
    return json.loads(found[0].read_text()) if found else None


def _warned(alert: dict) -> dict[str, int]:
    """test name -> rows found, from an alert file (tests are dbt node ids: test.<project>.<name>[.<hash>])."""
    assert len(alert["tests"]) == len(alert["failures"]) == len(alert["results"]), alert
    return {t.split(".")[2]: n for t, n in zip(alert["tests"], alert["failures"])}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_transform_dag_marks_a_run_below_the_thresholds_and_fails_below_the_floor(tmp_path):
    small = SyntheticOptions(days=1, seed=2, site=SITE)
    # one file name in two folders: dbt's saved parse of one serves the other (saved_parse.py)
    complete, partial = tmp_path / "complete" / "warehouse.duckdb", tmp_path / "partial" / "warehouse.duckdb"
    complete.parent.mkdir()
    partial.parent.mkdir()
    batches = list(generate(small))
    ingest(batches, complete)
    degraded, job_rows, untagged, _ = _degrade(batches, np.random.default_rng(5))
    ingest(degraded, partial)
    for wh in (complete, partial):  # 12 days later: the site's days are final (dbt's default 7 + 2 days)
        _time_passes(wh, small.start.astimezone(UTC) + timedelta(days=12))
    for wh in (complete, partial):  # the mart's parents, so each DAG run is the mart and its tests
        proc = run_dbt(
            wh,
            tmp_path / f"dbt-{wh.parent.name}",
            "run",
            "--select",
            "+data_completeness",
            "--exclude",
            "data_completeness",
        )
        assert proc.returncode == 0, proc.stdout[-4000:]
    env = _airflow_env(tmp_path)

    clean_home = tmp_path / "clean"
    clean_home.mkdir()
    run = _transform(env, clean_home, complete)
    # python_marts: the Spark targets' task, skipped on DuckDB
    assert run["state"] == "success" and run["tasks"].pop("python_marts") == "skipped", run
    assert set(run["tasks"].values()) == {"success"}, run
    assert "completeness_alert" in run["tasks"]
    assert {n for n in _warned_rows(job_rows, set(), complete).values() if n} == set()  # the premise
    assert _alert(clean_home) is None  # above every threshold: no mark

    marked_home = tmp_path / "marked"
    marked_home.mkdir()
    run = _transform(env, marked_home, partial)
    assert run["state"] == "success", run
    assert run["tasks"]["data_completeness_build"] == "success"  # warnings do not fail the mart's task
    assert run["tasks"]["completeness_alert"] == "success"
    expected = {name: n for name, n in _warned_rows(job_rows, untagged, partial).items() if n}
    # the site lost 10 % of its tags: some day falls below 90 % of CPU hours tagged
    assert expected.get("completeness_cpu_hours_tagged_below_threshold", 0) >= 1, expected
    alert = _alert(marked_home)
    assert alert is not None and alert["format_version"] == 2, alert
    assert _warned(alert) == expected, alert
    assert len(alert["conditions"]) == sum(expected.values()) and alert["still_open"] == [], alert
    # (that the next run does not mark the same conditions again is the alert's own logic, held by
    # test_completeness_is_judged_on_closed_days_only_and_alerted_once without a DAG run)

    floor_home = tmp_path / "floor"
    floor_home.mkdir()
    # a floor at 95 % must stop the transform; the run is marked with its warnings all the same
    run = _transform(env, floor_home, partial, completeness_floor_cpu_hours_tagged="0.95")
    assert run["state"] == "failed", run
    assert run["tasks"]["data_completeness_build"] == "failed", run["tasks"]
    assert run["tasks"]["completeness_alert"] == "success", run["tasks"]
    alert = _alert(floor_home)
    assert alert is not None and _warned(alert) == expected, alert


def test_a_run_results_file_that_cannot_be_read_is_named_with_its_field(tmp_path):
    from tierlens.orchestration.tasks import RunResultsError, warned_tests

    path = tmp_path / "run_results.json"
    for text, where in (
        ('{"results": [', "line 1, column 14"),
        ('{"results": {}}', "field 'results'"),
        ('{"results": [{"status": "pass"}, {"status": "warn", "failures": 2}]}', "results[1].unique_id"),
        (
            '{"results": [{"status": "warn", "unique_id": "test.p.t", "failures": "2"}]}',
            "results[0].failures (test.p.t)",
        ),
    ):
        path.write_text(text)
        with pytest.raises(RunResultsError) as e:
            warned_tests(path)
        assert str(e.value).startswith(f"{path}: {where}"), e.value


# --- closed data: judged once the jobs that could add to a day have ended, alerted once -----


def _judge(wh: Path, state: Path, home: Path, run_id: str, *dbt_args: str) -> tuple[list[str], list[str]]:
    """What the transform DAG's alert does after its build, on a plain dbt build: the warned
    tests' rows read back, then the conditions new since the last alert and those still open."""
    from tierlens.orchestration import tasks

    proc = run_dbt(wh, state, *dbt_args)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    results = state / "target" / "run_results.json"
    warned, unknown = tasks.failing_rows(wh, tasks.warned_tests(results))
    assert unknown is None, unknown
    return tasks.new_conditions(home / "alerts", "tierlens_transform", run_id, warned, tasks.judged_tests(results))


def _cpu_tagged_by_day(job_rows: list[dict], untagged: set, upto: datetime) -> dict:
    tagged, total = defaultdict(float), defaultdict(float)
    for j in job_rows:
        if j["end_time"] is None or j["end_time"] >= upto:
            continue
        cpu = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        total[_day(j["end_time"])] += cpu
        if j["job_id"] not in untagged:
            tagged[_day(j["end_time"])] += cpu
    return {d: tagged[d] / cpu for d, cpu in total.items() if cpu > 0}


def _longer(batches, t0: datetime, by=timedelta(hours=18)):
    """Every fourth job that ends on the first day runs 18 h longer, into the next: its file
    accesses (first day) arrive a day before the job does."""
    out = []
    for b in batches:
        if b.kind is RecordKind.JOB:
            rows = b.table.to_pylist()
            for r in rows:
                if r["end_time"] and t0 <= r["end_time"] < t0 + timedelta(days=1) and int(r["job_id"]) % 4 == 0:
                    r["end_time"] += by
                    r["wall_seconds"] = (r["wall_seconds"] or 0) + by.total_seconds()
            b = Batch(b.kind, pa.Table.from_pylist(rows, schema=b.table.schema), b.source)
        out.append(b)
    return out


@pytest.mark.slow
def test_completeness_is_judged_on_closed_days_only_and_alerted_once(tmp_path):
    """Long jobs (begun in the warm-up, days before the first hour) keep a day's shares low while
    they run. Hour by hour the site's data arrives; a day is judged once the newest data passed
    its final_from (vars: jobs at most 1 day long, records on time), and each condition below a
    threshold is alerted by the first run that judges it, never again while it stays."""
    from tierlens.orchestration.intervals import interval_batches

    opts = SyntheticOptions(days=3, seed=2, site=SITE)
    t0 = opts.start.astimezone(UTC)
    batches, job_rows, untagged, _ = _degrade(_longer(list(generate(opts)), t0), np.random.default_rng(5))
    assert sum(j["start_time"] < t0 + timedelta(days=1) <= j["end_time"] for j in job_rows) > 10
    wh, home = tmp_path / "warehouse.duckdb", tmp_path / "home"
    rules = ("--vars", '{"max_wall_days": 1, "job_lateness_days": 0}')
    build = ("build", "--select", "+data_completeness", "--indirect-selection", "cautious", *rules)
    test = ("test", "--select", "data_completeness", *rules)

    # the first day alone: every day is provisional, so nothing is alerted whatever its shares
    ingest(interval_batches(batches, t0 - timedelta(days=30), t0 + timedelta(days=1)), wh)
    new, still = _judge(wh, tmp_path / "dbt", home, "run-1", *build)
    assert new == [] and still == []
    rows = [r for r in _mart(wh) if r["day"] >= t0.date()]  # before it: the warm-up's tags and accesses
    assert rows and all(r["provisional"] for r in rows)
    below = [
        r
        for r in rows
        if r["measure"] in ("cpu_hours_tagged", "bytes_joined")
        and r["denominator"]
        and r["share"] < (0.90 if r["measure"] == "cpu_hours_tagged" else 0.80)
    ]
    assert below, "the premise: a provisional day below a threshold that an hourly judge would alert"

    # two more days: cluster-days 1 and 2 and server-day 1 are final (the newest data is in day 3)
    ingest(interval_batches(batches, t0 + timedelta(days=1), t0 + timedelta(days=3)), wh)
    new, still = _judge(wh, tmp_path / "dbt", home, "run-2", *build)
    final = {(r["grain"], r["day"]) for r in _mart(wh) if not r["provisional"]}
    d1, d2 = t0.date(), t0.date() + timedelta(days=1)
    assert {d for g, d in final if g == "cluster" and d >= d1} == {d1, d2}
    assert {d for g, d in final if g == "server" and d >= d1} == {d1}
    shares = _cpu_tagged_by_day(job_rows, untagged, t0 + timedelta(days=3))
    expected = {
        f"completeness_cpu_hours_tagged_below_threshold | {d} {SITE.cluster}" for d in (d1, d2) if shares[d] < 0.90
    }
    expected |= {
        f"completeness_bytes_joined_below_threshold | {r['day']} {r['subject']}"
        for r in _mart(wh, "grain = 'server' and measure = 'bytes_joined' and denominator > 0")
        if r["day"] <= d1 and r["numerator"] / r["denominator"] < 0.80
    }
    expected |= {
        f"completeness_kernel_drops_above_threshold | {r['day']} {r['subject']}"
        for r in _mart(wh, "measure = 'kernel_drops' and numerator > 0 and not provisional")
    }
    assert expected, "the premise: a final day below a threshold"
    assert set(new) == expected and still == []

    # the next hour brings nothing new for the closed days: the same conditions, no new alert
    new, still = _judge(wh, tmp_path / "dbt", home, "run-3", *test)
    assert new == [] and set(still) == expected


def test_a_condition_that_clears_and_comes_back_is_alerted_again(tmp_path):
    from tierlens.orchestration.tasks import CONDITIONS_FORMAT_VERSION, WarnedTest, new_conditions, open_conditions_file

    a = "test.tierlens.completeness_cpu_hours_tagged_below_threshold"
    b = "test.tierlens.completeness_kernel_drops_above_threshold"
    warned = [
        WarnedTest(a, 1, "Got 1 result", rows=("2026-10-01 c1",)),
        WarnedTest(b, 1, "", rows=("2026-10-01 col1",)),
    ]
    ka, kb = (
        "completeness_cpu_hours_tagged_below_threshold | 2026-10-01 c1",
        "completeness_kernel_drops_above_threshold | 2026-10-01 col1",
    )
    assert new_conditions(tmp_path, "d", "r1", warned, [a, b]) == ([ka, kb], [])
    assert new_conditions(tmp_path, "d", "r2", warned, [a, b]) == ([], [ka, kb])
    # a passed, b did not run (a partial build): a's condition cleared, b's is kept
    assert new_conditions(tmp_path, "d", "r3", [], [a]) == ([], [])
    # a's came back (under a changed threshold: another hash, the same test)
    warned[0] = WarnedTest(a + ".0123abcd", 1, "", rows=("2026-10-01 c1",))
    assert new_conditions(tmp_path, "d", "r4", warned, [a, b]) == ([ka], [kb])
    doc = json.loads(open_conditions_file(tmp_path, "d").read_text())
    assert doc["format_version"] == CONDITIONS_FORMAT_VERSION and doc["open"][ka]["first_alerted_run"] == "r4"
    open_conditions_file(tmp_path, "d").write_text('{"format_version": 99, "open": {}}')
    with pytest.raises(ValueError, match="format_version"):
        new_conditions(tmp_path, "d", "r5", warned, [a])


# --- the report: a one-line verdict per week at the top, and the completeness section --------


def test_report_opens_with_the_verdict_per_week(built, tmp_path):
    import csv

    from tierlens.report import build_report

    result = build_report(built["wh"], tmp_path / "report")
    assert result.sections[0] == "verdict" and "completeness" in result.sections
    assert "verdict" not in result.no_data and "completeness" not in result.no_data
    with (tmp_path / "report" / "verdict.csv").open() as fh:
        weeks = {r["week_start"]: r for r in csv.DictReader(fh)}
    tagged, total = defaultdict(float), defaultdict(float)
    for j in built["jobs"]:
        d = _day(j["end_time"])
        week = (d - timedelta(days=d.weekday())).isoformat()
        cpu = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        total[week] += cpu
        if j["job_id"] not in built["untagged"]:
            tagged[week] += cpu
    for week, cpu in total.items():
        # the Slurm job (if any) ran today, in another week than the synthetic October
        assert float(weeks[week]["cpu_hours_tagged"]) == pytest.approx(tagged[week] / cpu, rel=1e-9)
        share = f"{tagged[week] / cpu * 100:.1f} % of CPU hours tagged"
        assert weeks[week]["verdict"].startswith(share)
    html = result.html_path.read_text(encoding="utf-8")
    assert html.index("How much of the data is behind these figures") < html.index("Summary")
    assert "of bytes joined to jobs" in html and "Data completeness" in html


# --- sql/: where to look ----------------------------------------------------------------------


def _sql(wh: Path, name: str) -> list[dict]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        cur = con.execute((REPO / "sql" / name).read_text())
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def test_sql_names_the_nodes_that_send_untagged_jobs(built):
    rows = {
        (r["cluster"], r["node"]): r
        for r in _sql(built["wh"], "nodes_sending_untagged_jobs.sql")
        if r["cluster"] == SITE.cluster
    }
    last = max(j["end_time"] for j in built["jobs"])
    recent = [j for j in built["jobs"] if j["end_time"] >= last - timedelta(days=7)]
    untagged, jobs = defaultdict(int), defaultdict(int)
    for j in recent:
        jobs[j["node"]] += 1
        untagged[j["node"]] += j["job_id"] in built["untagged"]
    expected = {(SITE.cluster, n): u for n, u in untagged.items() if u}
    assert {k: r["untagged_jobs"] for k, r in rows.items()} == expected
    for (_, node), r in rows.items():
        assert r["jobs"] == jobs[node]


def test_sql_names_the_servers_whose_accesses_match_no_job(built):
    rows = {r["server"]: r for r in _sql(built["wh"], "servers_with_unmatched_accesses.sql")}
    accesses = defaultdict(int)
    last = {}
    for a in built["accesses"]:
        last[a["server_host"]] = max(last.get(a["server_host"], _day(a["start_time"])), _day(a["start_time"]))
    for a in built["accesses"]:
        if a["client_host"] != CACHE_HOST and _day(a["start_time"]) >= last[a["server_host"]] - timedelta(days=6):
            accesses[a["server_host"]] += 1
    assert {s: r["accesses"] for s, r in rows.items() if s in accesses} == {s: float(n) for s, n in accesses.items()}
    for r in rows.values():
        if r["accesses"] is not None:  # a server known only from collector counters has no accesses
            assert r["accesses_unmatched"] <= r["accesses"]
