"""The Airflow DAGs (dags/) against a real Airflow 3 installation, on the synthetic demo site.

Airflow lives in its own virtualenv (.venv-airflow, made by `make test` through `make
airflow-venv`): its pins are not dbt's. These tests run under the main pytest and drive that
Airflow in child processes (one per test; the driver below runs `dag.test()` and prints JSON),
then check the warehouse from here, against counts computed independently by running the
synthetic generator for the same options and interval.

One module-wide set-up: a temporary AIRFLOW_HOME with SQLite (`airflow db migrate`) and a
temporary tierlens home. Then, in order: the DagBag loads with no import errors; tierlens_ingest
runs two consecutive hours (synthetic, Slurm through a fake sacct, HTCondor history, XRootD
collector batches) and reruns the first, leaving the counts unchanged; tierlens_transform runs
the dbt project through Cosmos; tierlens_report writes the report of a week, twice.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from support.airflow import AIRFLOW_PY, AIRFLOW_VENV, DBT, airflow_env, run_dags
from tierlens.records import FILE_ACCESS, RecordKind

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]

SYN = {"start": "2026-10-01", "days": 1.0, "seed": 42, "nodes_per_type": 1}
# logical dates of the two hourly runs: each run loads the hour before it
HOURS = [datetime(2026, 10, 1, 12, tzinfo=timezone.utc), datetime(2026, 10, 1, 13, tzinfo=timezone.utc)]
REPORT_DATE = datetime(2026, 10, 4, tzinfo=timezone.utc)  # a Sunday: the week before it
# the marts of the report's first figures, and the efficiency model's input
DBT_SELECT = "+efficiency_by_group,+cache_hourly,+job_io_profile"
SIM_CACHES = ["lru:500GB", "slac2:1TB"]
XROOTD_HOST = "xrootd-collector-test.example.org"
CONDOR_CLUSTER = "condortest"


FAKE_SACCT = r"""#!PYTHON
import json, os, sys
with open(os.environ["FAKE_SACCT_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
sys.stdout.write(open(os.environ["FAKE_SACCT_JSON"]).read())
"""


def _ad(cid: int, end: int) -> str:
    start = end - 3000
    return (
        f'GlobalJobId = "ap01.example.org#{cid}.0#{start - 60}"\nClusterId = {cid}\nProcId = 0\n'
        f'Owner = "alice"\nAccountingGroup = "group_atlas.prod.alice"\nQDate = {start - 60}\n'
        f'JobUniverse = 5\nTierlensCluster = "{CONDOR_CLUSTER}"\nJobStatus = 4\nExitCode = 0\n'
        f"JobStartDate = {start}\nJobCurrentStartDate = {start}\nCompletionDate = {end}\n"
        f"NumJobStarts = 1\nRequestCpus = 1\nCpusProvisioned = 1\nRemoteUserCpu = 2500.0\n"
        f"RemoteSysCpu = 100.0\nRemoteWallClockTime = 3000.0\nCommittedTime = 3000\n"
        f'LastRemoteHost = "slot1_1@wn-ssd01.example.org"\n'
        f'*** Offset = 0 ClusterId = {cid} ProcId = 0 Owner = "alice" CompletionDate = {end}\n'
    )


def _in(table: pa.Table, column: str, a: datetime, b: datetime) -> pa.Table:
    col = table.column(column)
    return table.filter(
        pc.fill_null(
            pc.and_(pc.greater_equal(col, pa.scalar(a, col.type)), pc.less(col, pa.scalar(b, col.type))), False
        )
    )


@pytest.fixture(scope="module")
def airflow(tmp_path_factory):
    if not AIRFLOW_PY.exists():
        pytest.skip(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make test` (or `make airflow-venv`) creates it")
    base = tmp_path_factory.mktemp("airflow")
    home, af_home, inputs = base / "tierlens", base / "airflow-home", base / "inputs"
    for d in (home, af_home, inputs):
        d.mkdir()
    # inputs of the real sources, for the first hour only
    a = HOURS[0] - timedelta(hours=1)
    condor = inputs / "history"
    condor.write_text(
        _ad(7001, int(a.timestamp()) + 600) + _ad(7002, int(a.timestamp()) + 3599) + _ad(7003, int(a.timestamp()) - 1)
    )  # the last ended in the hour before
    sacct = inputs / "sacct"
    sacct.write_text(FAKE_SACCT.replace("PYTHON", sys.executable))
    sacct.chmod(sacct.stat().st_mode | stat.S_IXUSR)
    xrootd = inputs / "xrootd"
    xrootd.mkdir()
    env = airflow_env(
        af_home,
        {
            "TIERLENS_HOME": str(home),
            "TIERLENS_SOURCES": "synthetic,slurm,condor,xrootd",
            "TIERLENS_SYNTHETIC_START": SYN["start"],
            "TIERLENS_SYNTHETIC_DAYS": str(SYN["days"]),
            "TIERLENS_SYNTHETIC_SEED": str(SYN["seed"]),
            "TIERLENS_SYNTHETIC_NODES_PER_TYPE": str(SYN["nodes_per_type"]),
            "TIERLENS_SLURM_SACCT": str(sacct),
            "TIERLENS_CONDOR_HISTORY": str(condor),
            "TIERLENS_CONDOR_CLUSTER": CONDOR_CLUSTER,
            "TIERLENS_XROOTD_DIR": str(xrootd),
            "TIERLENS_SIMULATE_CACHES": ",".join(SIM_CACHES),
            # dag.test() runs Cosmos' tasks one by one, a dbt process each: the DAG tests build the
            # marts behind the report's efficiency and cache figures (test_dbt_project.py builds all).
            "TIERLENS_DBT_SELECT": DBT_SELECT,
            "FAKE_SACCT_LOG": str(inputs / "sacct-calls.log"),
            "FAKE_SACCT_JSON": str(REPO / "plugins" / "slurm" / "tests" / "data" / "sacct-22.05-dbv0.0.38.json"),
        },
    )
    return {
        "env": env,
        "home": home,
        "inputs": inputs,
        "xrootd": xrootd,
        "warehouse": home / "warehouse.duckdb",
        "condor": condor,
    }


def drive(airflow, runs: list[dict] | None = None, timeout: float = 1200, **env) -> dict:
    return run_dags({**airflow["env"], **env}, airflow["home"], runs or [], timeout)


def counts(warehouse: Path) -> dict[str, int]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {
            t: con.execute(f"SELECT count(*) FROM main.{t}").fetchone()[0]
            for t in ("raw_job", "raw_job_tag", "raw_file_access", "raw_node", "raw_rejects")
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def synthetic_site():
    """The synthetic site's records for SYN, from the generator itself (not through tierlens_ingest)."""
    from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate

    opts = SyntheticOptions(
        days=SYN["days"],
        seed=SYN["seed"],
        start=datetime.fromisoformat(SYN["start"]).replace(tzinfo=timezone.utc),
        site=demo_site(nodes_per_type=SYN["nodes_per_type"]),
    )
    tables: dict[RecordKind, list[pa.Table]] = {}
    for b in generate(opts):
        tables.setdefault(b.kind, []).append(b.table)
    return {k: pa.concat_tables(v) for k, v in tables.items()}


# ---- 1. the DagBag --------------------------------------------------------------------------
def test_dagbag_loads_without_import_errors(airflow):
    out = drive(airflow, TIERLENS_DBT_SELECT="")  # the whole dbt project
    assert out["import_errors"] == {}
    dags = out["dags"]
    assert set(dags) == {"tierlens_ingest", "tierlens_transform", "tierlens_report", "tierlens_simulate"}
    assert dags["tierlens_ingest"]["tasks"] == [
        "ingest_condor",
        "ingest_slurm",
        "ingest_synthetic",
        "ingest_xrootd",
        "publish",
    ]
    assert dags["tierlens_ingest"]["outlets"] == ["tierlens_raw"]
    assert dags["tierlens_ingest"]["timetable"] == "CronDataIntervalTimetable"
    assert dags["tierlens_report"]["tasks"] == ["build", "email"]
    assert dags["tierlens_simulate"]["tasks"] == ["predict_efficiency", "replay_caches"]
    # Cosmos: one task per dbt model and per seed, each reporting the node and its tests as the
    # one build ran them; no task of a test alone
    models = {p.stem for p in (REPO / "dbt" / "models").rglob("*") if p.suffix in (".sql", ".py")}
    seeds = {p.stem for p in (REPO / "dbt" / "seeds").rglob("*.csv")}
    tasks = set(dags["tierlens_transform"]["tasks"])
    assert (
        seeds
        and {f"{n}_build" for n in models | seeds}
        | {"dbt_producer_watcher", "completeness_alert", "publish_snapshot", "python_marts"}
        == tasks
    )
    assert dags["tierlens_transform"]["timetable"] == "AssetTriggeredTimetable"
    # each of those tasks starts in the triggerer (and ends there when its node passed), but an
    # ephemeral model's: the build writes nothing for it and records no result (a CTE of the models
    # reading it), so its task is an empty one, after the build like the others
    ephemeral = {
        p.stem for p in (REPO / "dbt" / "models").rglob("*.sql") if "materialized='ephemeral'" in p.read_text()
    }
    started = dags["tierlens_transform"]["from_trigger"]
    assert ephemeral and set(started) == {f"{n}_build" for n in (models - ephemeral) | seeds}, started
    assert all(dags["tierlens_transform"]["upstream"][f"{n}_build"] == ["dbt_producer_watcher"] for n in ephemeral)
    assert all(t["round_trip"] and t["callable"] for t in started.values()), started
    assert all(not d["from_trigger"] for name, d in dags.items() if name != "tierlens_transform"), dags
    # each knows whether a test of its model runs in every build: a model whose tests are all column
    # checks (left out between the daily runs) must not wait for a result, whatever reads it
    core = dags["tierlens_transform"]["core_tests"]
    assert set(core) == set(started), core
    expected = {
        task: any(
            not test.split(".")[2].startswith(("not_null_", "accepted_range_", "accepted_values_")) for test in tests
        )
        for task, (_, tests) in core.items()
    }
    wrong = {task: flag for task, (flag, _) in core.items() if flag != expected[task]}
    assert not wrong and any(expected.values()) and not all(expected.values()), wrong
    # and waits for the build alone, not for the tasks of the models it reads: all of them start
    # in one wave once the build is over
    upstream = dags["tierlens_transform"]["upstream"]
    assert all(upstream[task] == ["dbt_producer_watcher"] for task in started), {
        task: upstream[task] for task in started if upstream[task] != ["dbt_producer_watcher"]
    }
    assert upstream["publish_snapshot"] == sorted({*started, *(f"{n}_build" for n in ephemeral)}), upstream[
        "publish_snapshot"
    ]
    # the Spark targets' Python marts only from a build whose every model passed and was recorded
    assert upstream["python_marts"] == ["publish_snapshot"], upstream["python_marts"]


def test_the_render_saves_the_parse_the_hourly_build_reuses(airflow, tmp_path):
    """Cosmos' render (`dbt ls`) saves dbt's parse of the project in its cache, and the build
    starts from it: an hourly build (core tests: transform.CORE_SCOPE in its environment, the
    column checks left out) must find it valid, or dbt parses the whole project again (a minute on
    two cores). dbt says so itself: the vars hash it saved, and its log of the next parse."""
    from tierlens.orchestration import settings
    from tierlens.transform import CORE_SCOPE

    saved = airflow["env"]["AIRFLOW__COSMOS__CACHE_DIR"] + "/tierlens_transform/target/partial_parse.msgpack"
    if not Path(saved).exists():  # run alone: render the whole project first
        assert drive(airflow, TIERLENS_DBT_SELECT="")["import_errors"] == {}
    project = tmp_path / "dbt"
    shutil.copytree(REPO / "dbt", project, ignore=shutil.ignore_patterns("target", "logs", ".user.yml"))
    # into the copy as Cosmos hands it to a build (its own function: it rewrites the saved paths)
    put = "import sys; from pathlib import Path; from cosmos.cache import _copy_partial_parse_to_project as c; c(*map(Path, sys.argv[1:]))"
    r = subprocess.run([str(AIRFLOW_PY), "-c", put, saved, str(project)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    rendered = vars_hash(project / "target" / "partial_parse.msgpack")
    # the producer's parse: Cosmos' profile flags, the DAG's dbt
    # environment and the build's run parameters
    env = {k: v for k, v in airflow["env"].items() if not k.startswith(("AIRFLOW", "TIERLENS_"))}
    env |= settings.dbt_env() | {"TIERLENS_WAREHOUSE": str(airflow["warehouse"])} | CORE_SCOPE.environment()
    flags = ["--profiles-dir", str(project), "--profile", "tierlens", "--target", "duckdb"]
    r = subprocess.run(
        [str(DBT), "parse", "--project-dir", str(project), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=project,
    )
    log = (project / "logs" / "dbt.log").read_text()
    assert r.returncode == 0, r.stdout[-3000:]
    assert "Unable to do partial parsing" not in log, [x for x in log.splitlines() if "partial pars" in x.lower()]
    assert "Partial parsing enabled" in log
    assert vars_hash(project / "target" / "partial_parse.msgpack") == rendered


def vars_hash(partial_parse: Path) -> str:
    """The vars hash dbt keeps in its saved parse (``state_check.vars_hash``)."""
    import msgpack

    saved = msgpack.unpackb(partial_parse.read_bytes(), strict_map_key=False)
    return saved["state_check"]["vars_hash"]["checksum"]


# ---- 2. ingest: two hours, then the first again -----------------------------------------------
def test_ingest_hours_load_what_they_should_and_reruns_change_nothing(airflow, synthetic_site):
    intervals = [(h - timedelta(hours=1), h) for h in HOURS]
    # collector batches: file accesses of a second server, three in the first hour, one in the
    # hour after the second (not loaded)
    first = _in(synthetic_site[RecordKind.FILE_ACCESS], "end_time", *intervals[0]).slice(0, 3)
    later = (HOURS[1], HOURS[1] + timedelta(hours=1))
    outside = _in(synthetic_site[RecordKind.FILE_ACCESS], "end_time", *later).slice(0, 1)
    extra = pa.concat_tables([first, outside])
    extra = extra.set_column(
        extra.schema.get_field_index("server_host"), "server_host", pa.array([XROOTD_HOST] * extra.num_rows)
    )
    pq.write_table(extra.cast(FILE_ACCESS), airflow["xrootd"] / "file_access-test-000000.parquet")

    runs = [{"dag": "tierlens_ingest", "logical_date": h.isoformat()} for h in HOURS]
    out = drive(airflow, runs)
    for run, (a, b) in zip(out["runs"], intervals):
        assert run["state"] == "success", run
        assert (run["start"], run["end"]) == (a.isoformat(), b.isoformat())
        assert set(run["tasks"].values()) == {"success"}, run["tasks"]

    a, b = intervals[0][0], intervals[1][1]
    jobs = _in(synthetic_site[RecordKind.JOB], "end_time", a, b)
    keys = set(jobs.column("job_id").to_pylist())
    tags = synthetic_site[RecordKind.JOB_TAG].filter(
        pc.is_in(synthetic_site[RecordKind.JOB_TAG]["job_id"], pa.array(sorted(keys)))
    )
    accesses = _in(synthetic_site[RecordKind.FILE_ACCESS], "end_time", a, b)
    expected = {
        "raw_job": jobs.num_rows + 2,
        "raw_job_tag": tags.num_rows,  # + 2 condor jobs (no tags)
        "raw_file_access": accesses.num_rows + 3,  # + 3 collector rows of the first hour
        "raw_node": synthetic_site[RecordKind.NODE].num_rows,
        "raw_rejects": 0,
    }
    assert jobs.num_rows > 10 and accesses.num_rows > 100  # the hours are not empty
    got = counts(airflow["warehouse"])
    assert got == expected

    con = duckdb.connect(str(airflow["warehouse"]), read_only=True)
    try:
        condor = con.execute(
            "SELECT split_part(job_id, '#', 2) FROM main.raw_job WHERE batch_system = 'htcondor' ORDER BY 1"
        ).fetchall()
        xrd = con.execute("SELECT count(*) FROM main.raw_file_access WHERE server_host = ?", [XROOTD_HOST]).fetchone()
    finally:
        con.close()
    assert [c[0] for c in condor] == ["7001.0", "7002.0"] and xrd == (3,)
    # sacct was asked for exactly the run's hour (its capture's jobs ended in another month)
    calls = [json.loads(x) for x in (airflow["inputs"] / "sacct-calls.log").read_text().splitlines()]
    assert len(calls) == 2 and all("--starttime" in c and "--endtime" in c for c in calls)

    again = drive(airflow, runs[:1])
    assert again["runs"][0]["state"] == "success"
    assert counts(airflow["warehouse"]) == expected


# ---- 3. transform: the dbt project through Cosmos ---------------------------------------------
def test_transform_builds_the_marts(airflow):
    before = counts(airflow["warehouse"])
    assert before["raw_job"] > 0, "runs after the ingest test"
    out = drive(airflow, [{"dag": "tierlens_transform"}])
    run = out["runs"][0]
    assert run["state"] == "success", run
    # on DuckDB the build ran the Python marts itself: their Spark-only task skips
    assert run["tasks"].pop("python_marts") == "skipped", run["tasks"]
    assert set(run["tasks"].values()) == {"success"}, run["tasks"]
    con = duckdb.connect(str(airflow["warehouse"]), read_only=True)
    try:
        jobs = con.execute("SELECT count(*) FROM marts.job_efficiency").fetchone()[0]
        raw = con.execute("SELECT count(*) FROM main.raw_job WHERE step_id = ''").fetchone()[0]
    finally:
        con.close()
    assert jobs == raw
    assert {
        "job_efficiency_build",
        "efficiency_by_group_build",
        "cache_hourly_build",
        "stg_job_build",
        "dbt_producer_watcher",
        "completeness_alert",
        "publish_snapshot",
    } <= set(run["tasks"])
    # readers' copy (tierlens sql, the report) holds what the transform built
    con = duckdb.connect(str(airflow["home"] / "published" / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM marts.job_efficiency").fetchone()[0] == jobs
    finally:
        con.close()
    assert counts(airflow["warehouse"]) == before
    history = json.loads((airflow["home"] / "warehouse.duckdb.history.json").read_text())
    assert history["last_run"]["test_scope"] == "all"  # the first run: every test is due

    # the next hour: every test passed an hour ago, so the build leaves the column checks out;
    # the tasks of models whose only tests are column checks still report their model
    again = drive(airflow, [{"dag": "tierlens_transform"}])["runs"][0]
    assert again["state"] == "success", again
    assert again["tasks"].pop("python_marts") == "skipped", again["tasks"]
    assert set(again["tasks"].values()) == {"success"}, again["tasks"]
    later = json.loads((airflow["home"] / "warehouse.duckdb.history.json").read_text())
    assert later["last_run"]["test_scope"] == "core"
    assert later["all_tests_passed_at"] == history["last_run"]["started_at"]


# ---- 4. report: a week, twice -----------------------------------------------------------------
def test_report_writes_the_interval_folder_and_reruns_replace_it(airflow):
    before = counts(airflow["warehouse"])
    runs = [{"dag": "tierlens_report", "logical_date": REPORT_DATE.isoformat()}] * 2
    out = drive(airflow, runs)
    folders = []
    for run in out["runs"]:
        assert run["state"] == "success", run
        assert run["tasks"] == {"build": "success", "email": "skipped"}  # no recipients configured
        a, b = datetime.fromisoformat(run["start"]), datetime.fromisoformat(run["end"])
        assert b - a == timedelta(days=7)
        folders.append(airflow["home"] / "reports" / f"{a:%Y-%m-%d}_{b:%Y-%m-%d}")
    assert folders[0] == folders[1]
    html = folders[0] / "report.html"
    assert html.exists() and "<html" in html.read_text().lower()
    assert list(folders[0].glob("*.csv"))
    assert [p.name for p in (airflow["home"] / "reports").iterdir()] == [folders[0].name]
    assert counts(airflow["warehouse"]) == before


# ---- 5. simulate: the week's accesses through two caches, twice --------------------------------
def test_simulate_writes_one_run_per_configuration_and_reruns_replace_them(airflow):
    before = counts(airflow["warehouse"])
    runs = [{"dag": "tierlens_simulate", "logical_date": REPORT_DATE.isoformat()}] * 2
    out = drive(airflow, runs)
    seen = []
    for run in out["runs"]:
        assert run["state"] == "success", run
        assert run["tasks"] == {"replay_caches": "success", "predict_efficiency": "success"}, run
        con = duckdb.connect(str(airflow["warehouse"]), read_only=True)
        try:
            seen.append(
                (
                    con.execute(
                        "SELECT policy, capacity_bytes, requests FROM sim_cache_runs ORDER BY policy"
                    ).fetchall(),
                    con.execute("SELECT count(*) FROM sim_cache_hourly").fetchone()[0],
                    con.execute("SELECT run_id, jobs FROM sim_efficiency_runs").fetchall(),
                    con.execute(
                        "SELECT cache, count(*) FROM marts.efficiency_what_if GROUP BY cache ORDER BY cache"
                    ).fetchall(),
                    con.execute("SELECT count(*) FROM marts.efficiency_measured_vs_predicted").fetchone()[0],
                )
            )
            analysis_jobs = con.execute(
                "SELECT count(*) FROM marts.job_io_profile WHERE job_class = 'analysis' AND state = 'COMPLETED' "
                "AND cpu_seconds > 0 AND end_time >= ? AND end_time < ?",
                [REPORT_DATE - timedelta(days=7), REPORT_DATE],
            ).fetchone()[0]
        finally:
            con.close()
    assert seen[0] == seen[1]
    runs_, hourly, eff_runs, what_if, compared = seen[0]
    # one efficiency run over the week's completed analysis jobs, replaced by the rerun
    assert len(eff_runs) == 1 and eff_runs[0][1] == analysis_jobs > 0
    # six storage types x 3 jobs-per-node settings, for no cache and each configured cache
    assert what_if == sorted([("none", 18), ("lru:0.5TB", 18), ("slac2:1TB", 18)])
    assert compared > 0
    assert [(p, c) for p, c, _ in runs_] == [("lru", 500 * 10**9), ("slac2", 10**12)]
    # the accesses loaded by the ingest test were opened in the simulated week
    assert all(0 < n <= before["raw_file_access"] for _, _, n in runs_) and hourly > 0
    assert counts(airflow["warehouse"]) == before


# ---- 6. the report as a browser draws it ------------------------------------------------------
CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
# no network (there is none), no sandbox (root in CI), nothing in the background
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
]
PROBE = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images].map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]);
  document.body.setAttribute('data-probe', JSON.stringify(imgs));
});</script>"""


def render(html: Path, screenshot: Path, profile: Path) -> list[list]:
    """Each <img> of ``html`` as headless Chromium drew it: [alt, complete, width, height]; and a
    screenshot of the page. The page is probed through a copy with a script that writes what the
    browser decoded into the DOM."""
    import html as htmllib
    import re

    probe = html.with_name("render-probe.html")
    probe.write_text(html.read_text().replace("</body>", PROBE + "</body>"))
    base = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    try:
        dom = subprocess.run([*base, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    m = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert m, dom.stderr[-3000:]
    shot = subprocess.run(
        [*base, f"--screenshot={screenshot}", "--window-size=1280,2000", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-3000:]
    return json.loads(htmllib.unescape(m.group(1)))


def test_report_draws_in_headless_chromium(airflow, tmp_path):
    if CHROMIUM is None:
        pytest.skip("no chromium (Debian package `chromium`, listed in deploy/ci/system-packages.txt)")
    reports = sorted((airflow["home"] / "reports").glob("*/report.html"))
    assert reports, "runs after the report test"
    html = reports[-1]
    artifacts = Path(os.environ.get("TIERLENS_TEST_ARTIFACTS", REPO / ".tierlens" / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "airflow-report.png"
    images = render(html, shot, tmp_path / "chromium-profile")
    embedded = html.read_text().count("<img ")
    assert len(images) == embedded
    for alt, complete, width, height in images:
        assert complete and width > 100 and height > 100, (alt, width, height)
    assert shot.stat().st_size > 10_000  # a drawn page, not a blank one
