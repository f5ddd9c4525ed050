"""The same dbt project on a Spark cluster and on DuckDB, from the same Parquet lake, gives the same marts.

A small synthetic site (one day) is ingested into a DuckDB file, exported as a lake and built
by dbt-duckdb from it: the reference. Meanwhile a real Spark standalone cluster starts
(tests/support/spark_cluster.py: a master, two one-core workers and the Thrift server, each its
own JVM, the metastore in Derby), and dbt-spark's thrift method (target spark_thrift) builds on it
as a site's hourly cycle would:

* the whole project, with our own tests, from the site as it stood at REPLAY_CUTOFF (jobs
  running then have their file accesses in the lake but not yet their accounting record), while
  a worker is SIGKILLed with tasks running and then comes back;
* the Thrift server restarted on the same metastore;
* two hours. The first hour's records are loaded into the warehouse, appended to the lake by the
  ingest's publish, and the incremental models and what they read built incrementally. The second
  runs through Airflow (``dag.test()`` in the Airflow virtualenv): tierlens_ingest loads it and
  appends it to the lake, and tierlens_transform with dbt_target spark_thrift builds the whole
  project on the cluster, records the run and computes the Python marts by their CLI twins.

Every mart and intermediate table is then compared row for row with the reference: the Spark
tables are read from the Parquet files the cluster wrote, the DuckDB ones from the DuckDB file.
Rows are matched by sorting on all their non-float values; integers, strings, booleans, dates,
timestamps and lists must be equal, floats within the tolerance TOLERANCE states for that very
column (a float column the mapping does not name fails the test, so a new one needs a stated
tolerance). The run log and the partitions written show that the hours' builds rebuilt only their
window, and the lake's partitions that each hour's append wrote only the hour's.

marts.ab_uncertainty (a dbt Python model; dbt-spark cannot run those outside Databricks) is not
built by dbt on Spark: `tierlens ab-uncertainty`, and the transform DAG's python_marts task,
compute it from the cluster's job_efficiency and cache_hourly, and both are compared to
dbt-duckdb's model here too.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.airflow import airflow_env, run_dags
from tierlens.orchestration.publish import begin_transform, finish_transform, publish
from tierlens.pipeline import ingest
from tierlens.records import Batch, RecordKind
from tierlens.sources.synthetic.stored import batches as stored_batches, synthetic_options
from tierlens.transform import run_dbt
from tierlens.warehouse import export_lake
from tierlens.warehouse.history import load_history

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "dbt" / "models"
# One day of a site with one node per storage type: ~2,000 jobs and ~17,000 file accesses,
# enough for every mart to have rows (cache hours, fairness windows, A/B arms, prices). As the
# ingest DAG's synthetic source names it (its settings), so that the DAG's hour reads the same
# stored simulation.
SITE = dict(start="2026-10-01", days=1.0, seed=23, nodes_per_type=1)

# Relative tolerance per float column, per table: |spark - duckdb| <= tol * max(1, |duckdb|).
# Why not 0: the engines add a column's values in different orders (partitioned aggregation in
# Spark), and float addition is not associative; at this data size the drift is ~1e-13.
# 1e-9 is the default bound for sums, ratios and averages of them. Looser bounds are stated where
# the value is a ratio of small differences or a statistic over a resampling.
SUM = 1e-9
#: A job's remote bytes split by path (staged in or read directly) and by where they came from,
#: as int_job_remote_bytes computes them and job_io_profile carries them.
REMOTE_BYTES = (
    "remote_bytes",
    "stage_in_bytes",
    "direct_read_bytes",
    "origin_bytes",
    "cache_hit_bytes",
    "cache_miss_bytes",
    "stage_origin_bytes",
    "stage_cache_hit_bytes",
    "stage_cache_miss_bytes",
    "direct_origin_bytes",
    "direct_cache_hit_bytes",
    "direct_cache_miss_bytes",
)
TOLERANCE: dict[str, dict[str, float]] = {
    "int_job_tagged": {
        "cpu_user_seconds": 0.0,
        "cpu_system_seconds": 0.0,
        "wall_seconds": 0.0,
        "cpu_seconds": 0.0,
        "core_wall_seconds": 0.0,
    },
    "int_job_remote_bytes": {
        c: SUM
        for c in (
            "mean_read_fraction",
            *REMOTE_BYTES,
        )
    },
    "int_node_config": {"nic_gbps": 0.0},
    "int_file_access_by_job": {
        "read_single_average_bytes": 0.0,
        "read_vector_average_bytes": 0.0,
        "write_average_bytes": 0.0,
    },
    "int_file_access_reconciled": {
        "read_single_average_bytes": 0.0,
        "read_vector_average_bytes": 0.0,
        "write_average_bytes": 0.0,
    },
    "int_node_hourly": {
        "allocated_core_seconds": SUM,
        "cpu_seconds": SUM,
        "capacity_core_seconds": 0.0,
        "occupancy": SUM,
    },
    "job_efficiency": {
        "cpu_user_seconds": 0.0,
        "cpu_system_seconds": 0.0,
        "cpu_seconds": 0.0,
        "wall_seconds": 0.0,
        "core_wall_seconds": 0.0,
        "efficiency": 0.0,
    },
    "efficiency_by_group": {
        "cpu_hours": SUM,
        "wall_hours": SUM,
        "core_wall_hours": SUM,
        "efficiency": SUM,
        "mean_job_efficiency": SUM,
        "failed_share": 0.0,
    },
    "ab_comparison": {
        f"{c}_{arm}": SUM
        for c in ("cpu_hours", "wall_hours", "core_wall_hours", "cpu_per_wall", "efficiency")
        for arm in "ab"
    }
    | {"efficiency_difference": 1e-7, "cpu_per_wall_difference": 1e-7},
    "cache_hourly": {
        "gb_delivered_from_cache": SUM,
        "gb_staged_in": SUM,
        "gb_bypassed": SUM,
        "gb_read": SUM,
        "hit_ratio_requests": SUM,
        "hit_ratio_bytes": SUM,
    },
    "client_fairness": {
        "gb_read": SUM,
        "mean_bandwidth_mb_s": SUM,
        "stddev_bandwidth_mb_s": 1e-7,
        "bandwidth_cv": 1e-7,
        "spread_above_mean": 1e-7,
        "spread_below_mean": 1e-7,
        "min_bandwidth_mb_s": SUM,
        "max_bandwidth_mb_s": SUM,
        "p10_bandwidth_mb_s": SUM,
        "p90_bandwidth_mb_s": SUM,
        "completion_time_ratio": SUM,
        "bandwidth_ratio": SUM,
        "jain_index": SUM,
    },
    "file_popularity": {"mean_read_fraction": SUM, "score": SUM},
    "file_reads": {"mean_read_fraction": SUM, "total_read_fraction": SUM},
    "job_data_access": {"read_fraction": SUM, "mean_read_fraction": SUM, "cache_hit_ratio_bytes": SUM},
    "node_occupancy_hourly": {
        "allocated_cores": SUM,
        "allocated_core_seconds": SUM,
        "capacity_core_seconds": 0.0,
        "occupancy": SUM,
        "cpu_seconds": SUM,
        "efficiency": SUM,
    },
    "occupancy_efficiency": {
        "share_of_node_hours": SUM,
        "allocated_core_hours": SUM,
        "cpu_hours": SUM,
        "mean_occupancy": SUM,
        "efficiency": SUM,
        "throughput": SUM,
        "jobs_per_node_hour": SUM,
    },
    "storage_price_performance": {
        c: SUM
        for c in (
            "unit_price",
            "price_per_node",
            "capacity_gb_per_node",
            "price_per_gb",
            "efficiency",
            "node_throughput",
            "price_per_throughput",
            "price_per_efficiency_point",
            "efficiency_full_occupancy",
            "node_throughput_full_occupancy",
            "price_per_throughput_full_occupancy",
            "endurance_tbw",
            "scratch_gb_written_per_node_day",
            "gb_written_per_device_day",
            "expected_lifetime_years",
        )
    },
    # Per-day partial sums the marts above add up.
    "int_efficiency_day_partials": {
        c: SUM for c in ("cpu_seconds", "wall_seconds", "core_wall_seconds", "efficiency_sum")
    },
    "int_completed_efficiency_day_partials": {c: SUM for c in ("cpu_seconds", "core_wall_seconds")},
    "int_occupancy_day_partials": {c: SUM for c in ("allocated_core_seconds", "cpu_seconds", "occupancy_sum")},
    "int_input_size_day_partials": {c: SUM for c in ("cpu_seconds", "core_wall_seconds", "efficiency_sum")},
    "int_node_jobs_day_partials": {c: SUM for c in ("cpu_seconds", "core_wall_seconds")},
    "int_file_reads_day_partials": {"read_fraction_sum": SUM},
    # The efficiency model's input (sums of per-access byte shares, overlaps) and its predictions,
    # which both engines copy from the same simulator tables in the lake.
    "job_io_profile": {
        c: SUM
        for c in (
            "cpu_seconds",
            "wall_seconds",
            "efficiency",
            "io_wait_seconds",
            "scratch_read_bytes",
            *REMOTE_BYTES,
            "concurrent_jobs",
            "concurrent_cores",
        )
    },
    "int_latest_efficiency_predictions": {
        c: 0.0
        for c in (
            "jobs_per_node",
            "mean_concurrent_jobs",
            "predicted_efficiency",
            "efficiency_low",
            "efficiency_high",
            "loo_predicted_efficiency",
            "predicted_mean_wall_seconds",
            "jobs_per_node_hour",
            "structural_error",
        )
    },
    "efficiency_measured_vs_predicted": {
        c: SUM
        for c in (
            "measured_efficiency",
            "predicted_efficiency",
            "efficiency_low",
            "efficiency_high",
            "loo_predicted_efficiency",
            "prediction_error",
            "loo_prediction_error",
            "mean_concurrent_jobs",
        )
    },
    "efficiency_what_if": {
        c: 0.0
        for c in (
            "jobs_per_node",
            "predicted_efficiency",
            "efficiency_low",
            "efficiency_high",
            "predicted_mean_wall_seconds",
            "jobs_per_node_hour",
        )
    },
    # Bootstrap and permutation statistics (seeded) over inputs equal to ~1e-13: the resampling
    # is the same, so they agree far inside 1e-6; the point estimates inside SUM.
    "ab_uncertainty": {
        c: SUM
        for c in (
            "cpu_hours_a",
            "cpu_hours_b",
            "wall_hours_a",
            "wall_hours_b",
            "core_wall_hours_a",
            "core_wall_hours_b",
            "efficiency_a",
            "efficiency_b",
            "cpu_per_wall_a",
            "cpu_per_wall_b",
        )
    }
    | {
        c: 1e-6
        for c in (
            "efficiency_difference",
            "efficiency_ci_low",
            "efficiency_ci_high",
            "efficiency_p_value",
            "cpu_per_wall_difference",
            "cpu_per_wall_ci_low",
            "cpu_per_wall_ci_high",
        )
    },
}

# The hourly replay on the cluster: the first lake holds what had arrived by REPLAY_CUTOFF
# (mid-day of the site's one day); then two hours arrive, each loaded, appended to the lake and
# built. The first hour is loaded and built here, with these vars: cache events and accesses
# arrive as the access closes, so access_lateness_days 0 is the truth for this lake and leaves the
# day before the cutoff's day out of the window of the access-grain models (a partition the
# incremental builds must leave untouched); the job lookbacks stay the defaults. The second runs
# through Airflow as a site's would: tierlens_ingest (the synthetic source, its data interval from
# AIRFLOW_INGEST_SCHEDULE: the rest of the site) and the tierlens_transform run it triggers, on
# the cluster with the project's own vars.
REPLAY_CUTOFF = dt.datetime(2026, 10, 1, 12, 0, tzinfo=dt.timezone.utc)
FIRST_HOUR = (REPLAY_CUTOFF, REPLAY_CUTOFF + dt.timedelta(hours=1))
#: A daily interval from 13:00: the run for [13:00, 13:00 the next day) loads every record left
#: (the site's last arrives before midnight).
AIRFLOW_INGEST_SCHEDULE = "0 13 * * *"
AIRFLOW_INTERVAL = (FIRST_HOUR[1], FIRST_HOUR[1] + dt.timedelta(days=1))
REPLAY_VARS = "{access_lateness_days: 0}"
#: When a record reaches the warehouse: a job's when it ends, an access's when it closes, a tag
#: at the job's start (the columns, first not null, per raw table and record kind).
ARRIVAL: dict[RecordKind, tuple[str, ...]] = {
    RecordKind.JOB: ("end_time",),
    RecordKind.FILE_ACCESS: ("end_time", "start_time"),
    RecordKind.JOB_TAG: ("tagged_at",),
    RecordKind.SITE_CHANGE: ("recorded_at",),
    RecordKind.COLLECTOR_STATS: ("interval_end",),
}

#: The incremental run log: a row per build, and the cluster builds three times to DuckDB's once.
#: test_the_hourly_builds_were_incremental reads it instead of comparing it.
RUN_LOG = "int_incremental_window"


def _sql_models(layer: str) -> list[str]:
    """The layer's models that build a table or view: an ephemeral one is a CTE of the models
    reading it, on both engines, and compared through them."""
    return sorted(p.stem for p in (MODELS / layer).glob("*.sql") if "materialized='ephemeral'" not in p.read_text())


MARTS = _sql_models("marts")
INTERMEDIATE = [m for m in _sql_models("intermediate") if m != RUN_LOG]


def _incremental_models() -> dict[str, tuple[str, bool]]:
    """Models built with incremental_by_day: name -> (layer, stays a table on Spark). A model whose
    rows move between days (a row_key, or rebuilt by file) stays a table on Spark
    (macros/incremental_spark.sql); the others are partitioned by their day there."""
    found = {}
    for layer in ("intermediate", "marts"):
        for path in sorted((MODELS / layer).glob("*.sql")):
            sql = path.read_text()
            if "config(**incremental_by_day(" in sql:
                call = sql.split("config(**incremental_by_day(", 1)[1].split(")) }}", 1)[0]
                found[path.stem] = (layer, "row_key=" in call or "rebuild_by='file'" in call)
    return found


INCREMENTAL = _incremental_models()

#: dbt's own generic data tests, left out of the Spark build: their SQL is dbt-spark's, not ours,
#: and what they check of the data follows from the row-for-row equality with the DuckDB build,
#: which runs them. Our own generic tests (dbt/macros/*_tests.sql) and the singular ones do run on
#: Spark: their SQL is ours and must work on both engines.
DBT_OWN_DATA_TESTS = ("not_null", "unique", "accepted_values")
#: Our generic tests (dbt/macros/generic_tests.sql) on the models Spark builds, and the singular ones
#: (the completeness tests are on marts Spark sites do not build).
OUR_TESTS = {"accepted_range", "unique_combination_of_columns", "key_exists_in", "expression_is_true", "singular"}
#: accepted_range runs on Spark on this model's columns only. Its ~190 tests are one template with
#: other bounds, and they took a third of the cluster's first build (80 of 220 s on two cores);
#: the data they bound is what the row-for-row comparison checks.
RANGE_TESTS_ON = "model.tierlens.cache_hourly"
#: What the first hour builds, tests left out (they ran in the first build): the access-grain
#: models (accesses move between days there, so theirs are the partitions a window must leave
#: alone) with what they read and the run log. The second hour's transform builds the project.
FIRST_HOUR_SELECT = ["+cache_hourly", "+int_file_access_by_job", RUN_LOG]


@pytest.fixture(scope="module")
def builds(starting_spark_cluster, tmp_path_factory) -> dict[str, Any]:
    """The reference: the site ingested into DuckDB, exported as a lake and built by dbt-duckdb
    from it, while the cluster's JVMs start (``starting_spark_cluster`` is asked for first)."""
    root = tmp_path_factory.mktemp("spark-equivalence")
    # each DuckDB warehouse in a folder of its own under one file name: dbt's saved parse of one
    # serves the next (pipelines/tierlens/saved_parse.py)
    source = root / "source" / "warehouse.duckdb"
    source.parent.mkdir()
    # stored where the ingest DAG's synthetic source keeps it when the home is ``root``
    batches = list(stored_batches(synthetic_options(**SITE), root / "synthetic"))
    ingest(batches, source)
    predict_efficiency(source, root / "dbt-source")
    lake = root / "lake"
    export_lake(source, lake)

    duck = root / "from-lake" / "warehouse.duckdb"
    duck.parent.mkdir()
    # models only: the project's tests on DuckDB run in the equivalence and demo fixtures, and here
    # each minute of the reference is a minute the cluster waits
    duck_result = run_dbt(
        duck, root / "dbt-duckdb", "build", ["--exclude-resource-type", "test"], target="duckdb", lake=lake
    )
    assert duck_result.success, "\n".join(duck_result.failures)
    return {"root": root, "source": source, "batches": batches, "duckdb": duck, "duck_result": duck_result}


def _early_warehouse(source: Path, early: Path) -> tuple[str, str]:
    """The site as it stood at REPLAY_CUTOFF, in ``early``; returns the key of the one origin
    access of the cutoff's day that first arrives without its times (a record later re-sent
    corrected: the first build files it under no day, and an incremental build must remove that
    no-day row although its rebuild gives no row without a day)."""
    shutil.copy(source, early)
    con = duckdb.connect(str(early))
    try:
        for kind, columns in ARRIVAL.items():
            con.execute(f"delete from {kind.table} where coalesce({', '.join(columns)}) > ?", [REPLAY_CUTOFF])
        key = con.execute(
            """
            select server_host, unique_id from raw_file_access
            where server_role = 'origin' and start_time >= ? order by end_time desc limit 1
        """,
            [REPLAY_CUTOFF.replace(hour=0)],
        ).fetchone()
        con.execute(
            "update raw_file_access set start_time = null, end_time = null where server_host = ? and unique_id = ?",
            list(key),
        )
    finally:
        con.close()
    return key


def _arriving(batches: list[Batch], after: dt.datetime, until: dt.datetime) -> list[Batch]:
    """The records of ``batches`` that arrive in (after, until], as the sources would hand them over."""
    hour = []
    for batch in batches:
        columns = ARRIVAL.get(batch.kind)
        if columns is None:
            continue  # nodes and the catalog: in the first lake whole
        arrival = pc.coalesce(*(batch.table[c] for c in columns))
        late = pc.and_(
            pc.greater(arrival, pa.scalar(after, arrival.type)), pc.less_equal(arrival, pa.scalar(until, arrival.type))
        )
        table = batch.table.filter(late)
        if table.num_rows:
            hour.append(Batch(batch.kind, table, f"{batch.source}, arriving in ({after:%H:%M}, {until:%H:%M}]"))
    return hour


def _resent(batches: list[Batch], key: tuple[str, str]) -> Batch:
    """The file access ``key`` again, as its collector re-sends it with its times."""
    for batch in batches:
        if batch.kind is RecordKind.FILE_ACCESS:
            table = batch.table.filter(
                pc.and_(pc.equal(batch.table["server_host"], key[0]), pc.equal(batch.table["unique_id"], key[1]))
            )
            if table.num_rows:
                return Batch(batch.kind, table, f"{batch.source}, re-sent")
    raise LookupError(f"no file access {key} in the site")


def _range_tests_elsewhere(manifest: Path) -> list[str]:
    """The accepted_range tests of the project (from a build's manifest) on models other than
    RANGE_TESTS_ON."""
    nodes = json.loads(manifest.read_text())["nodes"].values()
    return [
        node["name"]
        for node in nodes
        if (node.get("test_metadata") or {}).get("name") == "accepted_range" and node["attached_node"] != RANGE_TESTS_ON
    ]


@pytest.fixture(scope="module")
def spark(starting_spark_cluster, builds) -> dict[str, Any]:
    """The cluster builds the whole project, tests included, from the site as it stood at
    REPLAY_CUTOFF while one of its workers is lost, recorded in the warehouse's history as the
    transform DAG records a run; its Thrift server is restarted on the same metastore; then the
    first hour is loaded into the warehouse, published (appended to the lake) and built
    incrementally, and the second hour runs through the ingest and transform DAGs."""
    cluster, started = starting_spark_cluster
    started.result()
    root = builds["root"] / "cluster"
    root.mkdir()
    early = root / "warehouse.duckdb"
    untimed = _early_warehouse(builds["source"], early)
    lake = root / "lake"
    settings = {"tierlens_dbt_target": "spark_thrift", "tierlens_lake": str(lake)}
    publish(early, settings.get)  # the first publish exports the lake
    lake_files = [_partitions(lake / "raw_file_access")]

    state = root / "dbt"  # one dbt folder for every build, as a site keeps it
    build_vars = ["--vars", REPLAY_VARS]
    with pytest.MonkeyPatch.context() as env:
        for name, value in cluster.thrift_env().items():
            env.setenv(name, value)
        left_out = [f"test_name:{name}" for name in DBT_OWN_DATA_TESTS]
        left_out += _range_tests_elsewhere(builds["root"] / "dbt-duckdb" / "target" / "manifest.json")
        first_args = [*build_vars, "--exclude", *left_out]
        done = threading.Event()
        begun = begin_transform(early, settings.get)
        with ThreadPoolExecutor(1, thread_name_prefix="worker-loss") as pool:
            # well into the build, when the first tables exist and the models' stages run
            loss = pool.submit(cluster.lose_a_busy_worker, done, after=20.0)
            started_at = time.monotonic()
            first = run_dbt(root / "unused.duckdb", state, "build", first_args, target="spark_thrift", lake=lake)
            first_seconds = time.monotonic() - started_at
            done.set()
            lost = loss.result()
        assert first.success, "\n".join(first.failures)
        finish_transform(early, begun, settings.get)
        first_tests = _tests_run(state)
        executors = cluster.executors()
        before = {
            name: _partitions(cluster.warehouse / f"{layer}.db" / name)
            for name, (layer, stays_table) in INCREMENTAL.items()
            if not stays_table
        }

        # a new Thrift server on the same metastore: the next builds find every table it holds
        cluster.stop_thrift()
        cluster.start_thrift()

        after, until = FIRST_HOUR
        ingest(_arriving(builds["batches"], after, until) + [_resent(builds["batches"], untimed)], early)
        started_at = time.monotonic()
        publish(early, settings.get)
        append_seconds = time.monotonic() - started_at
        lake_files.append(_partitions(lake / "raw_file_access"))
        started_at = time.monotonic()
        built = run_dbt(
            root / "unused.duckdb",
            state,
            "build",
            [*build_vars, "--select", *FIRST_HOUR_SELECT, "--exclude-resource-type", "test"],
            target="spark_thrift",
            lake=lake,
        )
        assert built.success, "first hour: " + "\n".join(built.failures)
        first_hour_seconds = time.monotonic() - started_at
        after_first_hour = {
            name: _partitions(cluster.warehouse / f"{INCREMENTAL[name][0]}.db" / name) for name in before
        }

    started_at = time.monotonic()
    airflow = _airflow_hour(builds["root"], early, lake, cluster)
    airflow_seconds = time.monotonic() - started_at
    lake_files.append(_partitions(lake / "raw_file_access"))
    print(
        f"cluster: first build {first_seconds:.0f} s ({first.models} models, {first.tests} tests; worker "
        f"{lost.worker} lost {lost.at_seconds:.0f} s in with {lost.active_tasks} tasks); first hour: append "
        f"{append_seconds:.1f} s, build {first_hour_seconds:.0f} s ({built.models} models); second hour "
        f"through Airflow (both DAGs, Airflow's own start included): {airflow_seconds:.0f} s"
    )
    return {
        "warehouse": cluster.warehouse,
        "first": first,
        "first_tests": first_tests,
        "lost": lost,
        "executors": executors,
        "before": before,
        "after_first_hour": after_first_hour,
        "lake_files": lake_files,
        "airflow": airflow,
        "history": load_history(early),
    }


def _airflow_hour(home: Path, warehouse: Path, lake: Path, cluster: Any) -> dict[str, Any]:
    """The second hour as a site's Airflow runs it on the cluster: tierlens_ingest for the interval
    from FIRST_HOUR's end (the synthetic source from the simulation the reference was built from,
    stored under ``home``; its publish appends to the lake), then tierlens_transform (one dbt
    build on the cluster, a task per model, the run recorded, the Python marts computed). Both
    by ``dag.test()`` in a child of the Airflow virtualenv, configured by its settings only."""
    af_home = warehouse.parent / "airflow-home"
    af_home.mkdir()
    marts_out = warehouse.parent / "python-marts"
    env = airflow_env(
        af_home,
        {
            "TIERLENS_HOME": str(home),
            "TIERLENS_WAREHOUSE": str(warehouse),
            "TIERLENS_LAKE": str(lake),
            "TIERLENS_DBT_TARGET": "spark_thrift",
            "TIERLENS_SPARK_WAREHOUSE": str(cluster.warehouse),
            "TIERLENS_PYTHON_MARTS_DIR": str(marts_out),
            "TIERLENS_SOURCES": "synthetic",
            "TIERLENS_INGEST_SCHEDULE": AIRFLOW_INGEST_SCHEDULE,
            **{f"TIERLENS_SYNTHETIC_{k.upper()}": str(v) for k, v in SITE.items()},
            **cluster.thrift_env(),
        },
    )
    ran = run_dags(
        env,
        warehouse.parent,
        # a manual run loads the interval that ends at its logical date
        [{"dag": "tierlens_ingest", "logical_date": AIRFLOW_INTERVAL[1].isoformat()}, {"dag": "tierlens_transform"}],
        timeout=1200,
    )
    return {"runs": {r["dag"]: r for r in ran["runs"]}, "import_errors": ran["import_errors"], "marts": marts_out}


def predict_efficiency(warehouse: Path, state: Path) -> None:
    """A real efficiency-model run on the source warehouse, so the simulator's tables travel
    through the lake and the efficiency marts have rows on both engines."""
    from tierlens.simulator import store, whatif
    from tierlens.warehouse import Warehouse

    built = run_dbt(warehouse, state, "run", ["--select", "+job_io_profile"])
    assert built.success, "\n".join(built.failures)
    with Warehouse(warehouse) as w:
        run = whatif.run(
            w.con,
            whatif.EfficiencyOptions(
                jobs_per_node=(4, 8), caches=(whatif.CacheOption(), whatif.CacheOption("lru", 2 * 10**12))
            ),
        )
        store.write_efficiency(w.con, run)


def _duckdb_rows(db: Path, schema: str, table: str) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(f'select * from "{schema}"."{table}"')
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        con.close()


def _parquet_rows(folder: Path) -> tuple[list[str], list[tuple]]:
    """A table Spark wrote (part-*.parquet files, in day=... folders for an incremental model),
    read by DuckDB only as a Parquet reader; a partition column comes back as a date (its
    __HIVE_DEFAULT_PARTITION__ folder as NULL), last, where Spark keeps it."""
    assert folder.is_dir(), f"Spark wrote no table at {folder}"
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        cur = con.execute(f"select * from read_parquet('{folder}/**/*.parquet', hive_partitioning = true)")
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        con.close()


def _file_rows(path: Path) -> tuple[list[str], list[tuple]]:
    """One Parquet file's columns and rows (what `tierlens ab-uncertainty` and the DAG write)."""
    con = duckdb.connect()
    try:
        cur = con.execute(f"select * from read_parquet('{path}')")
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        con.close()


def _partitions(folder: Path) -> dict[str, set[tuple[str, int]]]:
    """A partitioned table's partition folders and the data files in each, by name and inode: a
    rewrite that happens to reuse a name (a full export's data_0.parquet) is still a new file."""
    return {
        p.name: {(f.name, f.stat().st_ino) for f in p.glob("*.parquet")}
        for p in folder.iterdir()
        if p.is_dir() and "=" in p.name
    }


def _normal(value: Any) -> Any:
    """One representation per value whatever the engine's type: instants as UTC, decimals as float."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, list):
        return tuple(_normal(v) for v in value)
    return value


def _is_float(value: Any) -> bool:
    return isinstance(value, float)


def _sort_key(row: tuple, float_columns: set[int]) -> tuple:
    exact = tuple((v is None, "" if v is None else str(v)) for i, v in enumerate(row) if i not in float_columns)
    floats = tuple((v is None, 0.0 if v is None else round(v, 6)) for i, v in enumerate(row) if i in float_columns)
    return exact + floats


def compare_tables(name: str, duck: tuple[list[str], list[tuple]], spark: tuple[list[str], list[tuple]]) -> int:
    """Assert two tables equal row for row (floats within TOLERANCE[name]); return the row count."""
    d_cols, d_rows = duck
    s_cols, s_rows = spark
    assert sorted(s_cols) == sorted(d_cols), f"{name}: columns differ\n duckdb {d_cols}\n spark  {s_cols}"
    if s_cols != d_cols:
        # Spark keeps a partition column (an incremental model's day) last: the only reordering allowed.
        last = s_cols[-1]
        assert s_cols == [c for c in d_cols if c != last] + [last], f"{name}: column order {s_cols}"
        order = [s_cols.index(c) for c in d_cols]
        s_rows = [tuple(r[i] for i in order) for r in s_rows]
    assert len(s_rows) == len(d_rows), f"{name}: duckdb has {len(d_rows)} rows, spark {len(s_rows)}"
    d_rows = [tuple(_normal(v) for v in r) for r in d_rows]
    s_rows = [tuple(_normal(v) for v in r) for r in s_rows]
    # A column is a float column when either engine gives a float in it (Spark's floor() is a
    # BIGINT where DuckDB's is a DOUBLE: such a column is compared as float too).
    float_columns = {
        i for i in range(len(d_cols)) if any(_is_float(r[i]) for r in d_rows) or any(_is_float(r[i]) for r in s_rows)
    }
    tolerances = TOLERANCE.get(name, {})
    unstated = sorted(d_cols[i] for i in float_columns if d_cols[i] not in tolerances)
    assert not unstated, f"{name}: float columns without a stated tolerance: {unstated}"
    d_rows.sort(key=lambda r: _sort_key(r, float_columns))
    s_rows.sort(key=lambda r: _sort_key(r, float_columns))
    for n, (d, s) in enumerate(zip(d_rows, s_rows)):
        for i, column in enumerate(d_cols):
            if i in float_columns:
                _assert_close(name, column, n, d[i], s[i], tolerances[column])
            else:
                assert s[i] == d[i], f"{name}.{column} row {n}: duckdb {d[i]!r} != spark {s[i]!r}\n {d}\n {s}"
    return len(d_rows)


def _assert_close(name: str, column: str, n: int, d: Any, s: Any, tol: float) -> None:
    where = f"{name}.{column} row {n}"
    if d is None or s is None:
        assert d is None and s is None, f"{where}: duckdb {d!r}, spark {s!r}"
        return
    d, s = float(d), float(s)
    if math.isnan(d) or math.isnan(s):
        assert math.isnan(d) and math.isnan(s), f"{where}: duckdb {d!r}, spark {s!r}"
        return
    assert abs(s - d) <= tol * max(1.0, abs(d)), f"{where}: duckdb {d!r}, spark {s!r} (tolerance {tol:g})"


def test_both_engines_build_the_whole_project_and_the_cluster_tests_it(builds, spark):
    duck, first = builds["duck_result"], spark["first"]
    # Every model on both except those turned off on Spark: the Python models ab_uncertainty and
    # int_ab_totals (Spark sites run tierlens ab-uncertainty) and the site operations marts.
    operations = [
        p for p in (REPO / "dbt" / "models" / "marts" / "operations").iterdir() if p.suffix in (".sql", ".py")
    ]
    assert first.models == duck.models - 2 - len(operations), (first.models, duck.models)
    # our own generic tests and the singular ones run on Spark too; dbt's own data tests do not
    assert first.tests > 50, first.tests
    spark_kinds = set(spark["first_tests"].values())
    assert OUR_TESTS <= spark_kinds and not set(DBT_OWN_DATA_TESTS) & spark_kinds, spark_kinds
    # accepted_range: every one on RANGE_TESTS_ON ran on the cluster, and no other
    nodes = json.loads((builds["root"] / "dbt-duckdb" / "target" / "manifest.json").read_text())["nodes"]
    on_model = {
        u
        for u, node in nodes.items()
        if (node.get("test_metadata") or {}).get("name") == "accepted_range" and node["attached_node"] == RANGE_TESTS_ON
    }
    assert on_model and {u for u, kind in spark["first_tests"].items() if kind == "accepted_range"} == on_model


def test_a_worker_lost_mid_build_costs_the_build_nothing(spark):
    """A worker and its executor were SIGKILLed while it ran tasks: Spark ran the lost tasks again
    on the other executors and the build passed (the tables' equality is checked below)."""
    lost = spark["lost"]
    assert lost.worker is not None and lost.active_tasks > 0, f"no worker was lost while busy: {lost}"
    by_id = {e["id"]: e for e in spark["executors"]}
    assert not by_id[lost.executor]["isActive"], by_id[lost.executor]
    # the worker that came back got a new executor, which the rest of the build used
    assert sum(e["isActive"] for e in by_id.values()) == 2, spark["executors"]


def _tests_run(state: Path) -> dict[str, str]:
    """The tests a dbt build ran, each with its kind (a generic test's name, or "singular")."""
    nodes = json.loads((state / "target" / "manifest.json").read_text())["nodes"]
    results = json.loads((state / "target" / "run_results.json").read_text())["results"]
    return {
        r["unique_id"]: (nodes[r["unique_id"]].get("test_metadata") or {}).get("name", "singular")
        for r in results
        if r["unique_id"].startswith("test.")
    }


@pytest.mark.parametrize("layer,table", [("marts", m) for m in MARTS] + [("intermediate", m) for m in INTERMEDIATE])
def test_table_equal_on_spark_and_duckdb(builds, spark, layer, table):
    """After the first build and the two hours' incremental builds on the cluster, every table
    equals dbt-duckdb's one build of the whole site."""
    rows = compare_tables(
        table, _duckdb_rows(builds["duckdb"], layer, table), _parquet_rows(spark["warehouse"] / f"{layer}.db" / table)
    )
    print(f"{layer}.{table}: {rows} rows equal")


def test_marts_are_not_trivially_empty(builds):
    """The comparison shows something only if the marts have rows: the site is chosen so they do."""
    empty = [m for m in MARTS if not _duckdb_rows(builds["duckdb"], "marts", m)[1]]
    assert empty == [], f"marts without rows on the test site: {empty}"


def test_ab_uncertainty_from_spark_marts_equals_the_dbt_python_model(builds, spark):
    """The engine-neutral path: `tierlens ab-uncertainty` over the marts Spark wrote."""
    from typer.testing import CliRunner

    from tierlens.cli import app

    out = builds["root"] / "ab_uncertainty.parquet"
    result = CliRunner().invoke(
        app, ["ab-uncertainty", "--marts", str(spark["warehouse"] / "marts.db"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = compare_tables("ab_uncertainty", _duckdb_rows(builds["duckdb"], "marts", "ab_uncertainty"), _file_rows(out))
    assert rows > 0


def test_airflow_ran_the_second_hour_on_the_cluster(builds, spark):
    """tierlens_ingest loaded the interval from 13:00 (the rest of the site) and appended it to the
    lake; the tierlens_transform run built on the cluster with every model's task passing,
    recorded the run (in the scope of tests of an hour after a run of all of them), and computed
    marts.ab_uncertainty from the cluster's marts, equal to dbt-duckdb's Python model. (The
    marts of that build are compared with DuckDB's above.)"""
    airflow = spark["airflow"]
    assert airflow["import_errors"] == {}, airflow["import_errors"]
    ingest_run, transform = airflow["runs"]["tierlens_ingest"], airflow["runs"]["tierlens_transform"]
    assert ingest_run["state"] == "success", ingest_run
    assert (ingest_run["start"], ingest_run["end"]) == tuple(t.isoformat() for t in AIRFLOW_INTERVAL), ingest_run
    assert ingest_run["tasks"]["ingest_synthetic"] == "success" and ingest_run["tasks"]["publish"] == "success"
    assert transform["state"] == "success", transform
    assert set(transform["tasks"].values()) == {"success"}, {
        t: state for t, state in transform["tasks"].items() if state != "success"
    }
    models = {p.stem for p in MODELS.rglob("*") if p.suffix in (".sql", ".py")}
    assert {"dbt_producer_watcher", "publish_snapshot", "python_marts"} | {
        f"{m}_build" for m in ("job_efficiency", "cache_hourly", "int_file_access_reconciled")
    } <= set(transform["tasks"]) and len(transform["tasks"]) > len(models) // 2, transform["tasks"]
    # the run is in the history as on DuckDB: the first build ran every test, this one the core ones
    history = spark["history"]
    assert history.last_run.success and history.last_run.test_scope == "core", history.last_run
    assert history.all_tests_passed_at is not None and history.all_tests_passed_at < history.last_run.started_at
    computed = _file_rows(airflow["marts"] / "ab_uncertainty.parquet")
    assert compare_tables("ab_uncertainty", _duckdb_rows(builds["duckdb"], "marts", "ab_uncertainty"), computed) > 0


def test_ab_uncertainty_command_rejects_bad_input(tmp_path):
    from typer.testing import CliRunner

    from tierlens.cli import app

    missing = CliRunner().invoke(
        app, ["ab-uncertainty", "--marts", str(tmp_path), "--out", str(tmp_path / "o.parquet")]
    )
    assert missing.exit_code == 2 and "job_efficiency" in missing.output
    (tmp_path / "job_efficiency").mkdir()
    (tmp_path / "cache_hourly").mkdir()
    bad_block = CliRunner().invoke(
        app, ["ab-uncertainty", "--marts", str(tmp_path), "--out", str(tmp_path / "o.parquet"), "--block", "week"]
    )
    assert bad_block.exit_code == 2 and "ab_block" in bad_block.output


def test_transform_on_spark_needs_a_lake(tmp_path):
    from typer.testing import CliRunner

    from tierlens.cli import app

    no_lake = CliRunner().invoke(app, ["transform", "--target", "spark", "-w", str(tmp_path / "w.duckdb")])
    assert no_lake.exit_code == 2 and "--lake" in no_lake.output
    missing = CliRunner().invoke(
        app, ["transform", "--target", "spark", "--lake", str(tmp_path / "none"), "-w", str(tmp_path / "w.duckdb")]
    )
    assert missing.exit_code == 2 and "no Parquet lake" in missing.output


def test_replay_includes_a_job_whose_record_arrives_after_its_accesses(builds):
    """The first lake holds file accesses of jobs whose accounting record it does not (they ended
    after the cutoff): the incremental build must match those accesses anew."""
    con = duckdb.connect(str(builds["duckdb"]), read_only=True)
    try:
        late = con.execute(
            """
            select count(*) from intermediate.int_file_access_by_job as a
            inner join intermediate.int_job_tagged as j using (batch_system, cluster, job_id, step_id)
            where coalesce(a.end_time, a.start_time) <= ? and j.end_time > ?
        """,
            [REPLAY_CUTOFF, REPLAY_CUTOFF],
        ).fetchone()[0]
    finally:
        con.close()
    assert late > 0


def test_the_hourly_builds_were_incremental(spark):
    """The run log says so, across the Thrift server's restart; the access-grain models kept the
    day before the window as the first build wrote it while the first hour rewrote its window's
    days; and the partition of rows without a day that the first build wrote is gone (the re-sent
    record moved to its day, and the rebuild has no row without a day)."""
    log = _parquet_rows(spark["warehouse"] / "intermediate.db" / RUN_LOG)
    mode, built_at = log[0].index("run_mode"), log[0].index("built_at")
    assert all(r[built_at] is not None for r in log[1]), log[1]
    assert [r[mode] for r in sorted(log[1], key=lambda r: r[built_at])] == ["full", "incremental", "incremental"]
    before, after = spark["before"], spark["after_first_hour"]
    assert before and all(before.values()), f"an incremental model without day partitions on Spark: {before}"
    day_before, cutoff_day = f"day={REPLAY_CUTOFF.date() - dt.timedelta(days=1)}", f"day={REPLAY_CUTOFF.date()}"
    for name in ("int_file_access_reconciled", "cache_hourly"):
        assert after[name][day_before] == before[name][day_before], f"{name}: {day_before} was rewritten"
        assert after[name][cutoff_day].isdisjoint(before[name][cutoff_day]), f"{name}: {cutoff_day} was not rewritten"
    no_day = "day=__HIVE_DEFAULT_PARTITION__"
    for name in ("int_file_access_reconciled", "int_file_access_by_job"):
        assert no_day in before[name], f"{name}: the first build filed no row under no day"
        assert no_day not in after[name], f"{name}: {no_day} left after the first hour"


def test_each_hour_appended_only_to_its_partitions(spark):
    """The lake's file accesses, after the first publish and after each hour's: the day before the
    cutoff's keeps its files, the cutoff's day keeps its files and gains the hour's, and the
    re-sent record leaves the no-day partition."""
    first, hour1, hour2 = spark["lake_files"]
    day_before, cutoff_day = f"day={REPLAY_CUTOFF.date() - dt.timedelta(days=1)}", f"day={REPLAY_CUTOFF.date()}"
    assert hour1[day_before] == first[day_before] and hour2[day_before] == first[day_before]
    assert first[cutoff_day] < hour1[cutoff_day] < hour2[cutoff_day], (first, hour1, hour2)
    assert "day=__HIVE_DEFAULT_PARTITION__" in first and "day=__HIVE_DEFAULT_PARTITION__" not in hour1
