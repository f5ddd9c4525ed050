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
from ..records import (
    SIM_CACHE_HOURLY as HOURLY,
    SIM_CACHE_MRC as MRC,
    SIM_CACHE_RUNS as RUNS,
    SIM_EFFICIENCY_PARAMETERS as EFF_PARAMS,
    SIM_EFFICIENCY_PREDICTIONS as EFF_PRED,
    SIM_EFFICIENCY_RUNS as EFF_RUNS,
    SIM_EFFICIENCY_TYPE_LOO as EFF_TYPE_LOO,
    SIM_HARDWARE_OPTIONS as HW_OPTIONS,
    SIMULATOR_COMMENTS as COMMENTS,
    SIMULATOR_DDL as DDL,
)
from .engine import CacheResult


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
