"""Simulation results in the warehouse: ``sim_cache_runs``, ``sim_cache_hourly``, ``sim_cache_mrc``.

A run is identified by ``run_id`` = hash of its parameters and of every input's content (the trace;
for an efficiency run also the probes, the storage catalogue and the node economics), so running
the same parameters on the same inputs again replaces its rows (one transaction) and never adds,
and a run on different inputs never replaces another.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

import pyarrow as pa

from .. import __version__
from ..config import DBT_PROJECT_DIR
from .engine import CacheResult

RUNS = "sim_cache_runs"
HOURLY = "sim_cache_hourly"
MRC = "sim_cache_mrc"
EFF_RUNS = "sim_efficiency_runs"
EFF_PARAMS = "sim_efficiency_parameters"
EFF_PRED = "sim_efficiency_predictions"
EFF_TYPE_LOO = "sim_efficiency_type_loo"
HW_OPTIONS = "sim_hardware_options"

DDL = {
    RUNS: f"""CREATE TABLE IF NOT EXISTS {RUNS} (
        run_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, tierlens_version VARCHAR,
        policy VARCHAR, capacity_bytes BIGINT, params VARCHAR,
        trace_source VARCHAR, trace_fingerprint VARCHAR, first_hour TIMESTAMPTZ, hours INTEGER,
        requests BIGINT, objects BIGINT, hits BIGINT, hit_ratio DOUBLE,
        bytes_requested BIGINT, bytes_from_cache BIGINT, byte_hit_ratio DOUBLE, bytes_staged BIGINT,
        ssd_writes_per_day_bytes DOUBLE, ssd_config VARCHAR, ssd_devices INTEGER,
        ssd_endurance_bytes DOUBLE, days_to_endurance DOUBLE,
        nic_cap_bytes_per_s DOUBLE, nic_peak_utilisation DOUBLE, nic_hours_at_cap INTEGER,
        replay_seconds DOUBLE)""",
    HOURLY: f"""CREATE TABLE IF NOT EXISTS {HOURLY} (
        run_id VARCHAR, hour_start TIMESTAMPTZ, requests BIGINT, hits BIGINT,
        bytes_requested BIGINT, bytes_from_cache BIGINT, bytes_staged BIGINT,
        nic_utilisation DOUBLE, PRIMARY KEY (run_id, hour_start))""",
    MRC: f"""CREATE TABLE IF NOT EXISTS {MRC} (
        run_id VARCHAR, cache_bytes BIGINT, requests BIGINT, hits BIGINT, hit_ratio DOUBLE,
        bytes_requested BIGINT, bytes_from_cache BIGINT, byte_hit_ratio DOUBLE,
        PRIMARY KEY (run_id, cache_bytes))""",
    EFF_RUNS: f"""CREATE TABLE IF NOT EXISTS {EFF_RUNS} (
        run_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, tierlens_version VARCHAR,
        model_version VARCHAR, job_class VARCHAR, inputs VARCHAR, data_fingerprint VARCHAR,
        jobs BIGINT, fit_jobs BIGINT, rms_error DOUBLE, structural_error DOUBLE, run_seconds DOUBLE)""",
    EFF_PARAMS: f"""CREATE TABLE IF NOT EXISTS {EFF_PARAMS} (
        run_id VARCHAR, parameter VARCHAR, applies_to VARCHAR, value DOUBLE, std_error DOUBLE,
        unit VARCHAR, fitted BOOLEAN, true_value DOUBLE, true_low DOUBLE, true_high DOUBLE,
        evidence VARCHAR, PRIMARY KEY (run_id, parameter, applies_to))""",
    EFF_PRED: f"""CREATE TABLE IF NOT EXISTS {EFF_PRED} (
        run_id VARCHAR, model_version VARCHAR, job_class VARCHAR, scenario VARCHAR,
        storage_type VARCHAR, ab_arm VARCHAR, jobs_per_node DOUBLE, cache VARCHAR,
        cache_policy VARCHAR, cache_bytes BIGINT, jobs BIGINT, mean_concurrent_jobs DOUBLE,
        measured_efficiency DOUBLE, predicted_efficiency DOUBLE, efficiency_sd DOUBLE,
        efficiency_low DOUBLE, efficiency_high DOUBLE, loo_predicted_efficiency DOUBLE,
        predicted_mean_wall_seconds DOUBLE, jobs_per_node_hour DOUBLE, extrapolated BOOLEAN,
        evidence VARCHAR)""",
    EFF_TYPE_LOO: f"""CREATE TABLE IF NOT EXISTS {EFF_TYPE_LOO} (
        run_id VARCHAR, storage_type VARCHAR, evidence VARCHAR, jobs BIGINT, measured_efficiency DOUBLE,
        predicted_efficiency DOUBLE, error DOUBLE, PRIMARY KEY (run_id, storage_type, evidence))""",
    HW_OPTIONS: f"""CREATE TABLE IF NOT EXISTS {HW_OPTIONS} (
        run_id VARCHAR, config_name VARCHAR, storage_type VARCHAR, evidence VARCHAR, jobs_per_node DOUBLE,
        cache VARCHAR, currency VARCHAR, price_per_node DOUBLE, capacity_gb_per_node DOUBLE, price_per_gb DOUBLE,
        efficiency DOUBLE, efficiency_low DOUBLE, efficiency_high DOUBLE, node_throughput DOUBLE,
        node_throughput_low DOUBLE, node_throughput_high DOUBLE, price_per_throughput DOUBLE,
        price_per_throughput_low DOUBLE, price_per_throughput_high DOUBLE, price_per_core_hour DOUBLE,
        price_per_core_hour_low DOUBLE, price_per_core_hour_high DOUBLE, scratch_gb_written_per_node_day DOUBLE,
        ssd_lifetime_years DOUBLE, rank INTEGER, cores_per_job DOUBLE, node_config VARCHAR, node_cores INTEGER,
        node_price DOUBLE, whole_node_price DOUBLE, power_watts DOUBLE, power_price_per_node_hour DOUBLE,
        interval_driver VARCHAR, staged_gb_per_node_hour DOUBLE, write_warning VARCHAR,
        published_structural_error DOUBLE, structural_error_source VARCHAR, under_write_read_p99_ms DOUBLE,
        PRIMARY KEY (run_id, config_name, jobs_per_node, cache))""",
}

COMMENTS = {
    RUNS: "One row per cache simulation (tierlens simulate cache): parameters, totals, SSD wear, NIC load.",
    HOURLY: "Per run and UTC hour: requests, hits, bytes delivered from the simulated cache, bytes staged in.",
    MRC: "LRU miss-ratio curve (tierlens simulate cache --mrc): hits per cache size, from one pass.",
    EFF_RUNS: "One row per efficiency-model run (tierlens simulate efficiency): model version, inputs, fit quality.",
    EFF_PARAMS: "Fitted service times per run (s/GB) with standard errors; true values where a synthetic site knows them.",
    EFF_PRED: "Predicted CPU efficiency per configuration: measured configurations back-filled beside their measurement, and the what-if grid.",
    EFF_TYPE_LOO: "Device layer validation: each storage type left out entirely, predicted from its probe or datasheet.",
    HW_OPTIONS: "Buying guide (simulate efficiency --candidates): catalog configurations priced per delivered core-hour.",
}


#: Column descriptions of the tables the dbt project reads (source `simulator`);
#: ``python -m tierlens.warehouse.dbt_sources`` writes them into dbt/models/staging/_sources.yml.
COLUMN_DOCS: dict[str, dict[str, str]] = {
    EFF_RUNS: {
        "run_id": "Hash of the model version, the run's inputs and the calibration data.",
        "created_at": "When the run was written, UTC.",
        "tierlens_version": "tierlens version that wrote the run.",
        "model_version": "Efficiency model version, e.g. tierlens-mva-1.",
        "job_class": "Job class the model was calibrated on and predicts ('all' for every class).",
        "inputs": "The run's inputs as JSON: grid, caches, period, validation settings.",
        "data_fingerprint": "Hash of the calibration jobs' profiles.",
        "jobs": "Jobs in the calibration set. Unit: jobs.",
        "fit_jobs": "Jobs the fit itself used (a seeded sample of the set). Unit: jobs.",
        "rms_error": "RMS of the per-job efficiency residuals of the fit. Unit: fraction.",
        "structural_error": "RMS leave-one-out error of configuration efficiency; null without validation. Unit: fraction.",
        "run_seconds": "Wall time of the run. Unit: seconds.",
    },
    EFF_PRED: {
        "run_id": "Run that made the prediction.",
        "model_version": "Efficiency model version.",
        "job_class": "Job class predicted.",
        "scenario": "'measured' (a configuration the site ran) or 'what-if'.",
        "storage_type": "Storage type under the jobs' scratch.",
        "ab_arm": "A/B arm of a measured configuration; null for what-if rows.",
        "jobs_per_node": "Jobs per node of a what-if row; null for measured rows (each job keeps its measured node sharing). Unit: jobs.",
        "cache": "'as measured', 'none', or POLICY:SIZE of the replayed cache.",
        "cache_policy": "Replayed cache policy; null for none or as measured.",
        "cache_bytes": "Replayed cache capacity. Unit: bytes.",
        "jobs": "Jobs the prediction is over. Unit: jobs.",
        "mean_concurrent_jobs": "Measured rows: mean jobs sharing a node. Unit: jobs.",
        "measured_efficiency": "Measured rows: the jobs' measured efficiency. Unit: fraction.",
        "predicted_efficiency": "Predicted efficiency, sum(cpu) / sum(wall x cores). Unit: fraction.",
        "efficiency_sd": "Standard uncertainty of the prediction (fit and structural error). Unit: fraction.",
        "efficiency_low": "Lower end of the 95 % interval. Unit: fraction.",
        "efficiency_high": "Upper end of the 95 % interval. Unit: fraction.",
        "loo_predicted_efficiency": "Measured rows: prediction when this configuration was left out of the fit. Unit: fraction.",
        "predicted_mean_wall_seconds": "Predicted mean wall time per job. Unit: seconds.",
        "jobs_per_node_hour": "What-if rows: throughput of a full node. Unit: jobs per node-hour.",
        "extrapolated": "The prediction uses a service time the measured jobs did not determine.",
        "evidence": "What the storage type's times rest on: jobs (fitted), probe or datasheet (derived by the device layer).",
    },
    HW_OPTIONS: {
        "run_id": "Run that priced the option (sim_efficiency_runs.run_id).",
        "config_name": "storage_catalog configuration priced.",
        "storage_type": "Storage type the configuration provides.",
        "evidence": "What the prediction rests on: measured (jobs on this storage type), probe (a device probe, possibly of a RAID member), or datasheet.",
        "jobs_per_node": "Jobs per node of the option. Unit: jobs.",
        "cache": "'none' or POLICY:SIZE of the replayed cache.",
        "currency": "Currency of the prices.",
        "price_per_node": "Storage price of one node: unit price x devices per node. Unit: currency.",
        "capacity_gb_per_node": "Usable scratch per node (RAID-aware). Unit: GB.",
        "price_per_gb": "price_per_node / capacity_gb_per_node. Unit: currency per GB.",
        "efficiency": "Predicted CPU efficiency. Unit: fraction.",
        "efficiency_low": "Lower end of its 95 % interval. Unit: fraction.",
        "efficiency_high": "Upper end of its 95 % interval. Unit: fraction.",
        "node_throughput": "CPU core-hours delivered per node-hour: jobs x cores x efficiency. Unit: core-hours per node-hour.",
        "node_throughput_low": "node_throughput at efficiency_low. Unit: core-hours per node-hour.",
        "node_throughput_high": "node_throughput at efficiency_high. Unit: core-hours per node-hour.",
        "price_per_throughput": "price_per_node / node_throughput (Glasgow Table 4's price/throughput). Unit: currency per (core-hour per node-hour).",
        "price_per_throughput_low": "price_per_node / node_throughput_high. Unit: currency per (core-hour per node-hour).",
        "price_per_throughput_high": "price_per_node / node_throughput_low. Unit: currency per (core-hour per node-hour).",
        "price_per_core_hour": "Whole-node price per delivered CPU core-hour: (node price over the service life + storage price over its life (the service life, or the SSD's rated life if shorter) + power) per node-hour / node_throughput. Rows written before schema version 9 priced the storage alone. Unit: currency per core-hour.",
        "price_per_core_hour_low": "price_per_core_hour at efficiency_high and, where endurance sets the storage life, the low end of the writes per core-hour. Unit: currency per core-hour.",
        "price_per_core_hour_high": "price_per_core_hour at efficiency_low and, where endurance sets the storage life, the high end of the writes per core-hour. Unit: currency per core-hour.",
        "scratch_gb_written_per_node_day": "Predicted scratch writes of a node per day. Unit: GB per day.",
        "ssd_lifetime_years": "Rated endurance of the node's data devices / predicted writes; null without an endurance. Unit: years.",
        "rank": "Rank by price_per_core_hour within the run, 1 = cheapest.",
        "cores_per_job": "Mean cores a job of the job mix is allocated. Unit: cores.",
        "node_config": "Node the option is priced in: the cheapest node row with jobs_per_node x cores_per_job cores (the largest when none has).",
        "node_cores": "Cores of that node. Unit: cores.",
        "node_price": "Price of the node without its scratch storage (CPU, memory, chassis). Unit: currency.",
        "whole_node_price": "node_price + price_per_node. Unit: currency.",
        "power_watts": "Mean draw of the busy node. Unit: W.",
        "power_price_per_node_hour": "power_watts x the site tariff. Unit: currency per node-hour.",
        "interval_driver": "What the price interval varies: efficiency, or efficiency and endurance (the storage's life is set by its rated writes, whose rate per core-hour has its own interval).",
        "staged_gb_per_node_hour": "What a full node of the site's jobs writes to scratch per hour (stage-in copies and the jobs' own writes) at jobs_per_node, at the pace the jobs were measured to run; null before schema version 11. Unit: GB per node-hour.",
        "published_structural_error": "Probe- and datasheet-derived rows: the leave-one-configuration-out RMS error of the device layer on Glasgow's published figures (simulator/seeds.py); null for measured rows and rows before schema version 11. Unit: fraction.",
        "structural_error_source": "Which leave-one-out error the row's interval carries, the larger of the two: 'generator' (this site's leave-one-type-out RMS, sim_efficiency_type_loo) or 'published figures'; null for measured rows.",
        "write_warning": "Why this device's writes cannot keep up with staged_gb_per_node_hour, with the figures and what they rest on (probe, budget-limited probe, datasheet): a steady-state write rate below the node's stage-in rate, or a fast-write region the node fills within the hour; null when neither holds or the configuration has no device figures.",
        "under_write_read_p99_ms": "Evidence beside the prediction: the p99 latency of 128 KiB random reads (one reader per job slot, through the page cache) the configuration's probe measured while a writer streamed at half its stage-in write bandwidth (probe job read_under_write_buffered_50); null without such a probe, for datasheet rows and for arrays composed from a member's probe. Unit: ms.",
    },
    EFF_TYPE_LOO: {
        "run_id": "Run that validated the device layer.",
        "storage_type": "Storage type left out (its jobs and its fitted times).",
        "evidence": "Figures its times were derived from: probe or datasheet.",
        "jobs": "Jobs of the type predicted. Unit: jobs.",
        "measured_efficiency": "The type's measured efficiency. Unit: fraction.",
        "predicted_efficiency": "Its efficiency predicted from the derived times. Unit: fraction.",
        "error": "predicted - measured. Unit: fraction.",
    },
}


def ensure_tables(con) -> None:
    for table, ddl in DDL.items():
        con.execute(ddl)
        con.execute(f"COMMENT ON TABLE {table} IS '{COMMENTS[table]}'")


def run_id(kind: str, params: dict, fingerprint: str) -> str:
    blob = json.dumps({"kind": kind, "params": params, "trace": fingerprint}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def catalog_ssd(con, name: str | None) -> dict | None:
    """A storage_catalog row (raw_storage_catalog, else dbt/seeds/storage_catalog.csv).

    Without ``name``: the SSD/NVMe entry with the highest endurance."""
    rows: list[dict] = []
    try:
        cur = con.execute("SELECT config_name, storage_type, capacity_bytes, endurance_tbw FROM raw_storage_catalog")
        rows = [
            dict(zip(("config_name", "storage_type", "capacity_bytes", "endurance_tbw"), r)) for r in cur.fetchall()
        ]
    except Exception:  # noqa: BLE001 - no catalog table in this warehouse
        rows = []
    if not rows:
        seed = DBT_PROJECT_DIR / "seeds" / "storage_catalog.csv"
        if seed.exists():
            with seed.open() as f:
                for r in csv.DictReader(f):
                    rows.append(
                        {
                            "config_name": r["config_name"],
                            "storage_type": r["storage_type"],
                            "capacity_bytes": int(r["capacity_bytes"]) if r["capacity_bytes"] else None,
                            "endurance_tbw": float(r["endurance_tbw"]) if r["endurance_tbw"] else None,
                        }
                    )
    if name:
        for r in rows:
            if r["config_name"] == name:
                return r
        raise ValueError(f"no storage_catalog entry {name!r}; have: {', '.join(r['config_name'] for r in rows)}")
    ssd = [r for r in rows if r["storage_type"] in ("ssd", "nvme") and r["endurance_tbw"] and r["capacity_bytes"]]
    return max(ssd, key=lambda r: r["endurance_tbw"] / r["capacity_bytes"]) if ssd else None


def wear(result: CacheResult, ssd: dict | None) -> dict:
    """SSD devices the capacity needs, their total rated endurance, and days until it is written."""
    if not ssd or not ssd.get("endurance_tbw") or not ssd.get("capacity_bytes"):
        return {"ssd_config": None, "ssd_devices": None, "ssd_endurance_bytes": None, "days_to_endurance": None}
    devices = max(1, math.ceil(result.params.capacity_bytes / ssd["capacity_bytes"]))
    endurance = devices * ssd["endurance_tbw"] * 1e12
    per_day = result.ssd_writes_per_day
    return {
        "ssd_config": ssd["config_name"],
        "ssd_devices": devices,
        "ssd_endurance_bytes": endurance,
        "days_to_endurance": endurance / per_day if per_day > 0 else None,
    }


def write_run(con, result: CacheResult, ssd: dict | None = None, mrc: pa.Table | None = None) -> str:
    """Write one run (and its hourly series, and an MRC when given) in one transaction."""
    ensure_tables(con)
    params = asdict(result.params)
    rid = run_id("cache", params, result.trace_fingerprint)
    w = wear(result, ssd)
    util = result.hourly["nic_utilisation"].to_numpy()
    row = {
        "run_id": rid,
        "tierlens_version": __version__,
        "policy": result.params.policy,
        "capacity_bytes": result.params.capacity_bytes,
        "params": json.dumps(params, sort_keys=True),
        "trace_source": result.trace_source,
        "trace_fingerprint": result.trace_fingerprint,
        "first_hour_s": result.t0,
        "hours": result.hourly.num_rows,
        "requests": result.requests,
        "objects": result.objects,
        "hits": result.hits,
        "hit_ratio": result.hit_ratio,
        "bytes_requested": result.bytes_requested,
        "bytes_from_cache": result.bytes_from_cache,
        "byte_hit_ratio": result.byte_hit_ratio,
        "bytes_staged": result.bytes_staged,
        "ssd_writes_per_day_bytes": result.ssd_writes_per_day,
        **w,
        "nic_cap_bytes_per_s": result.params.nic_bytes_per_s,
        "nic_peak_utilisation": float(util.max()) if len(util) else 0.0,
        "nic_hours_at_cap": int((util >= 1.0).sum()),
        "replay_seconds": result.elapsed_s,
    }
    hourly = result.hourly.append_column("run_id", pa.array([rid] * result.hourly.num_rows, pa.string()))
    with replacing_run(con, rid, (HOURLY, RUNS) + ((MRC,) if mrc is not None else ())):
        cols = [c for c in row if c != "first_hour_s"]
        con.execute(
            f"INSERT INTO {RUNS} (created_at, first_hour, {', '.join(cols)}) "
            f"VALUES (now(), to_timestamp(?), {', '.join('?' for _ in cols)})",
            [row["first_hour_s"]] + [row[c] for c in cols],
        )
        insert_arrow(
            con,
            HOURLY,
            hourly,
            (
                "run_id",
                "hour_start",
                "requests",
                "hits",
                "bytes_requested",
                "bytes_from_cache",
                "bytes_staged",
                "nic_utilisation",
            ),
        )
        if mrc is not None:
            m = mrc.append_column("run_id", pa.array([rid] * mrc.num_rows, pa.string()))
            insert_arrow(
                con,
                MRC,
                m,
                (
                    "run_id",
                    "cache_bytes",
                    "requests",
                    "hits",
                    "hit_ratio",
                    "bytes_requested",
                    "bytes_from_cache",
                    "byte_hit_ratio",
                ),
            )
    return rid


@contextmanager
def replacing_run(con, rid: str, tables: tuple[str, ...]) -> Iterator[None]:
    """One transaction that first deletes ``rid``'s rows from ``tables``: a rerun replaces."""
    con.execute("BEGIN TRANSACTION")
    try:
        for t in tables:
            con.execute(f"DELETE FROM {t} WHERE run_id = ?", [rid])
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def insert_arrow(con, table: str, data: pa.Table, columns: tuple[str, ...] | list[str]) -> None:
    con.register("__sim_rows", data)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM __sim_rows")
    finally:
        con.unregister("__sim_rows")


def write_efficiency(con, run, truth: dict[str, tuple[float, float, float]] | None = None) -> str:
    """Write an efficiency run (runs, parameters, predictions) in one transaction; returns run_id.

    ``truth`` maps 'parameter[applies_to]' to (value, low, high) for a site whose true service
    times are known (the synthetic demo site), stored beside the fitted values.
    """
    from .efficiency import MODEL_VERSION

    ensure_tables(con)
    cal = run.calibration
    # the id covers every input: options, jobs (cal.fingerprint), probes, catalogue, node economics
    inputs = {**run.options.as_dict(), **getattr(run, "inputs", {})}
    rid = efficiency_run_id(run)
    n = run.predictions.num_rows
    pred = run.predictions.append_column("run_id", pa.array([rid] * n, pa.string()))
    pred = pred.append_column("model_version", pa.array([MODEL_VERSION] * n, pa.string()))
    pred = pred.append_column("job_class", pa.array([cal.job_class] * n, pa.string()))
    params = run.parameters
    truth = truth or {}
    keys = [f"{p}[{k}]" for p, k in zip(params["parameter"].to_pylist(), params["applies_to"].to_pylist())]
    for i, name in enumerate(("true_value", "true_low", "true_high")):
        params = params.append_column(name, pa.array([truth[k][i] if k in truth else None for k in keys], pa.float64()))
    params = params.append_column("run_id", pa.array([rid] * params.num_rows, pa.string()))
    cols_pred = [c.split()[0] for c in DDL[EFF_PRED].split("(", 1)[1].rsplit(")", 1)[0].split(",")]
    with replacing_run(con, rid, (EFF_PRED, EFF_PARAMS, EFF_TYPE_LOO, HW_OPTIONS, EFF_RUNS)):
        con.execute(
            f"INSERT INTO {EFF_RUNS} VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                rid,
                __version__,
                MODEL_VERSION,
                cal.job_class,
                json.dumps(inputs, sort_keys=True),
                cal.fingerprint,
                len(run.profiles),
                cal.jobs,
                cal.rms_error,
                cal.structural_error,
                run.seconds,
            ],
        )
        insert_arrow(
            con,
            EFF_PARAMS,
            params,
            (
                "run_id",
                "parameter",
                "applies_to",
                "value",
                "std_error",
                "unit",
                "fitted",
                "true_value",
                "true_low",
                "true_high",
                "evidence",
            ),
        )
        insert_arrow(con, EFF_PRED, pred, cols_pred)
        for table, t in ((EFF_TYPE_LOO, _type_loo(run)), (HW_OPTIONS, run.hardware_options)):
            if t is not None and t.num_rows:
                t = t.append_column("run_id", pa.array([rid] * t.num_rows, pa.string()))
                insert_arrow(con, table, t, tuple(t.column_names))
    return rid


def efficiency_run_id(run) -> str:
    """The id ``write_efficiency`` gives ``run``."""
    from .efficiency import MODEL_VERSION

    inputs = {**run.options.as_dict(), **getattr(run, "inputs", {})}
    return run_id("efficiency", {"model": MODEL_VERSION, **inputs}, run.calibration.fingerprint)


def efficiency_run_exists(con, run) -> bool:
    """Whether a run with ``run``'s id (the same inputs) is already written."""
    ensure_tables(con)
    return bool(
        con.execute(f"SELECT count(*) FROM {EFF_RUNS} WHERE run_id = ?", [efficiency_run_id(run)]).fetchone()[0]
    )


def _type_loo(run) -> pa.Table | None:
    from .hardware import type_loo_table

    held = getattr(run, "type_held_out", None)
    return type_loo_table(held) if held else None
