"""`tierlens simulate efficiency`: calibrate, validate, predict a grid of configurations.

One run = one job class over one period: the model is fitted on the measured jobs, validated by
leaving each measured configuration (storage type x A/B arm) out in turn, back-filled for every
measured configuration (so measured and predicted sit side by side), and asked for every
configuration of the grid: storage type x jobs per node x cache (none, or a policy and size whose
replay over the same jobs' accesses says which of their bytes would have hit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from . import devices as dv, efficiency as ef, hardware as hw, seeds
from .engine import CacheParams, simulate
from .trace import Trace, encode, from_table

#: Direct and stage-in routes in ROUTES order, by source: origin, cache hit, cache miss.
_STAGE = slice(0, ef.N_STAGE_ROUTES)
_DIRECT = slice(ef.N_STAGE_ROUTES, len(ef.ROUTES))


@dataclass(frozen=True)
class CacheOption:
    """'none' (every remote byte from an origin) or a replayed policy at a capacity."""

    policy: str | None = None
    capacity_bytes: int | None = None

    @property
    def label(self) -> str:
        if self.policy is None:
            return "none"
        return f"{self.policy}:{self.capacity_bytes / 1e12:g}TB"

    @classmethod
    def parse(cls, text: str, allow_none: bool = True) -> CacheOption:
        """'none' or POLICY:SIZE (e.g. lru:50TB); ValueError naming the text otherwise."""
        from ..units import parse_bytes
        from .engine import POLICIES

        if allow_none and text.strip().lower() == "none":
            return cls()
        policy, _, size = (s.strip() for s in text.partition(":"))
        if policy.lower() not in POLICIES or not size:
            raise ValueError(
                f"not a cache: {text!r} ({'none, or ' if allow_none else ''}POLICY:SIZE with "
                f"POLICY one of {', '.join(POLICIES)}, e.g. lru:50TB)"
            )
        return cls(policy.lower(), parse_bytes(size))


@dataclass(frozen=True)
class EfficiencyOptions:
    job_class: str | None = "analysis"
    storage_types: tuple[str, ...] = ()  # grid; empty = every measured type
    jobs_per_node: tuple[float, ...] = (4, 8, 16)
    caches: tuple[CacheOption, ...] = (CacheOption(),)
    start: str | None = None
    end: str | None = None
    validate: bool = True
    max_fit_jobs: int = ef.DEFAULT_FIT_JOBS
    seed: int = 0
    candidates: bool = False  # price the catalog's configurations (buying guide)
    economics: hw.Economics = field(default_factory=hw.Economics)  # nodes, tariff, service years

    def as_dict(self) -> dict:
        return {
            "job_class": self.job_class,
            "storage_types": list(self.storage_types),
            "jobs_per_node": list(self.jobs_per_node),
            "caches": [c.label for c in self.caches],
            "start": self.start,
            "end": self.end,
            "validate": self.validate,
            "max_fit_jobs": self.max_fit_jobs,
            "seed": self.seed,
            "candidates": self.candidates,
            "power_price_per_kwh": self.economics.power_price_per_kwh,
            "service_years": self.economics.service_years,
        }


@dataclass
class EfficiencyRun:
    options: EfficiencyOptions
    calibration: ef.Calibration
    held_out: list[ef.HeldOut]
    predictions: pa.Table
    parameters: pa.Table
    seconds: float
    profiles: ef.JobProfiles
    notes: list[str] = field(default_factory=list)
    #: leave-one-type-out validation of the device layer, and the buying guide (empty when not asked)
    type_held_out: list[hw.TypeHeldOut] = field(default_factory=list)
    hardware_options: pa.Table | None = None
    mappings: dict[str, dv.Mapping] = field(default_factory=dict)
    #: digests of the probes, catalogue and node economics the run read (hw.inputs_digest)
    inputs: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- cache replay

#: Accesses opened this long before a run's period are replayed too, so the simulated cache is
#: warm when the period's jobs start (and a job that began before the period has its accesses).
CACHE_WARMUP = timedelta(days=3)


def job_accesses(con, start: str | None, end: str | None) -> pa.Table:
    """Accesses tied to a job, in open-time order, with the job's key as in JobProfiles."""
    opened = (datetime.fromisoformat(start) - CACHE_WARMUP).isoformat() if start else None
    where, args = ef.time_window("start_time", opened, end)
    where.append("job_id is not null")
    return con.execute(
        f"""
        select file_lfn, file_size_bytes, start_time, read_bytes_at_close, read_bytes, readv_bytes,
               batch_system || '.' || cluster || '.' || job_id || '.' || step_id as job_identity
        from intermediate.int_file_access_by_job where {" and ".join(where)}
        order by start_time, server_host, unique_id""",
        args,
    ).to_arrow_table()


@dataclass
class JobTrace:
    """The jobs' accesses as one replay trace, with the profile row of the job behind each request
    (-1 for jobs outside the profile). Built once per run, replayed once per cache option."""

    trace: Trace
    rows: np.ndarray


def job_trace(prof: ef.JobProfiles, accesses: pa.Table) -> JobTrace:
    trace = from_table(accesses, source="warehouse:int_file_access_by_job")
    # job_accesses() returns rows in open-time order, so the trace keeps their order and its dense
    # job ids are those of encoding the same column here
    job_ids, job_keys = encode(accesses["job_identity"])
    if not np.array_equal(trace.job, job_ids):
        raise RuntimeError("trace order differs from the accesses' order; cannot credit hits to jobs")
    position = {k: i for i, k in enumerate(prof.job_key.tolist())}
    return JobTrace(trace, np.array([position.get(k, -1) for k in job_keys], np.int64)[job_ids])


def remote_under_cache(prof: ef.JobProfiles, jobs: JobTrace | None, option: CacheOption) -> np.ndarray:
    """Each profiled job's remote bytes by route if every access went through ``option``'s cache.

    The replay runs over every job's accesses (the cache is shared by the whole site), and each
    hit or miss is credited to the job that made the access, split between stage-in and direct
    reads as that access was.
    """
    total = prof.remote.sum(axis=0)
    staged = prof.remote[_STAGE].sum(axis=0)
    out = np.zeros_like(prof.remote)
    if option.policy is None:
        out[0] = staged
        out[ef.N_STAGE_ROUTES] = total - staged
        return out
    result = simulate(jobs.trace, CacheParams(option.policy, int(option.capacity_bytes)), per_request=True)
    known = jobs.rows >= 0
    hit = result.request_hit.astype(bool) & known
    read = jobs.trace.read.astype(np.float64)
    hit_bytes = np.bincount(jobs.rows[hit], weights=read[hit], minlength=len(prof))
    req_bytes = np.bincount(jobs.rows[known], weights=read[known], minlength=len(prof))
    # Only the source of a job's bytes changes, never their amount: the replay's hit fraction
    # is applied to the bytes the job was measured to read.
    hit_frac = np.divide(hit_bytes, req_bytes, out=np.zeros(len(prof)), where=req_bytes > 0)
    out[1] = staged * hit_frac
    out[2] = staged * (1 - hit_frac)
    out[ef.N_STAGE_ROUTES + 1] = (total - staged) * hit_frac
    out[ef.N_STAGE_ROUTES + 2] = (total - staged) * (1 - hit_frac)
    return out


# ----------------------------------------------------------------------------- the run


def run(con, options: EfficiencyOptions, progress=None) -> EfficiencyRun:
    """Calibrate on the warehouse's jobs and predict; nothing is written (see store.write_efficiency)."""
    began = time.perf_counter()
    step = progress or (lambda _msg: None)
    prof = ef.load_profiles(con, options.job_class, options.start, options.end)
    if len(prof) < ef.MIN_JOBS:
        raise ValueError(
            f"only {len(prof)} completed {options.job_class or ''} jobs with a storage type "
            f"and CPU time in marts.job_io_profile; need at least {ef.MIN_JOBS}"
        )
    measured_types = tuple(sorted(set(prof.storage_type)))
    devices = hw.load_devices(con)
    derivable = (set(devices.probe) | set(devices.datasheet)) - set(measured_types)
    grid_types = options.storage_types or measured_types + tuple(sorted(derivable))
    unknown = sorted(set(grid_types) - set(measured_types) - derivable)
    if unknown:
        raise ValueError(
            f"no measured jobs, probe or datasheet figures for storage type(s) {', '.join(unknown)}; "
            f"the model can predict {', '.join(sorted(set(measured_types) | derivable))} "
            f"(`tierlens probe storage` measures a device)"
        )
    step("calibrating")
    cal = ef.calibrate(prof, options.job_class or "all", measured_types, options.max_fit_jobs, options.seed)
    held: list[ef.HeldOut] = []
    if options.validate:
        step("validating (leave one configuration out)")
        held = ef.validate(prof, options.job_class or "all", max_jobs=options.max_fit_jobs, seed=options.seed)
        cal.structural_error = ef.structural_error(held)
    frac = staged_read_fraction(prof)
    type_held: list[hw.TypeHeldOut] = []
    if options.validate and (devices.probe or devices.datasheet):
        step("validating the device layer (leave one storage type out)")
        type_held = hw.validate_types(
            prof, options.job_class or "all", devices, frac, options.max_fit_jobs, options.seed
        )
    # a derived prediction carries the larger of the leave-one-type-out error on this site and the
    # one on the published figures: a probe is no more trustworthy than the model on real devices
    carried = {r["evidence"]: r for r in seeds.structural_error_rows(hw.type_errors(type_held))}
    type_error = {evidence: r["structural_error"] for evidence, r in carried.items()}
    cal, mappings = _derive_types(
        cal, devices, frac, hw.write_rates(prof), [t for t in grid_types if t not in measured_types]
    )
    rows: list[dict] = []
    step("back-filling measured configurations")
    loo = {(h.storage_type, h.arm): h for h in held}
    for st, arm in ef.cells(prof):
        sub = prof.take((prof.storage_type == st) & (prof.arm == arm))
        p = ef.predict(cal, sub)
        h = loo.get((st, arm))
        rows.append(
            _row(
                "measured",
                st,
                arm,
                None,
                CacheOption(),
                p,
                measured=sub.efficiency,
                mean_concurrency=float(np.mean(sub.concurrent)),
                loo=h.predicted if h else None,
            )
        )
    replayed = (
        job_trace(prof, job_accesses(con, options.start, options.end))
        if any(c.policy for c in options.caches)
        else None
    )
    guide: list[dict] = []
    candidates = _candidates(cal, devices, frac, mappings, measured_types) if options.candidates else []
    writes = scratch_writes_per_core_hour(prof)
    staged_rate = hw.staged_bytes_per_job_second(prof)
    for cache in options.caches:
        step(f"cache {cache.label}")
        remote = remote_under_cache(prof, replayed, cache)
        for st in grid_types:
            evidence = cal.type_evidence(st)
            c = hw.replace_structural(cal, type_error.get(evidence))
            for n in options.jobs_per_node:
                p = ef.predict(c, prof, ef.Scenario(st, float(n), remote))
                rows.append(_row("what-if", st, None, float(n), cache, p, evidence=evidence))
        for cand, cal_c, st, fig in candidates:
            for n in options.jobs_per_node:
                p = ef.predict(
                    hw.replace_structural(cal_c, type_error.get(cal_c.type_evidence(st))),
                    prof,
                    ef.Scenario(st, float(n), remote),
                )
                row = hw.guide_row(
                    cand,
                    _performance(prof, p, float(n), writes),
                    cache.label,
                    options.economics,
                    fig,
                    float(n) * staged_rate * 3600.0,
                )
                guide.append(dict(row, **_structural_columns(carried.get(cand.evidence))))
    return EfficiencyRun(
        options,
        cal,
        held,
        pa.Table.from_pylist(rows, schema=PREDICTION_SCHEMA),
        parameter_table(cal, prof, mappings),
        time.perf_counter() - began,
        prof,
        type_held_out=type_held,
        hardware_options=hw.rank(guide) if options.candidates else None,
        mappings=mappings,
        inputs=hw.inputs_digest(devices, options.economics),
    )


def _derive_types(
    cal: ef.Calibration, devices: hw.Devices, frac: float, rates: dv.WriteRates, types: list[str]
) -> tuple[ef.Calibration, dict[str, dv.Mapping]]:
    """Times for storage types without jobs: from their probe, else their datasheet, each through
    the mapping fitted on the measured types with the same kind of figures."""
    mappings: dict[str, dv.Mapping] = {}
    for evidence, figs in (("probe", devices.probe), ("datasheet", devices.datasheet)):
        try:
            mappings[evidence] = dv.fit_mapping(figs, hw.fitted_targets(cal), frac, rates)
        except ValueError:
            continue
    derived = {}
    for st in types:
        evidence = "probe" if st in devices.probe else "datasheet"
        if evidence not in mappings:
            raise ValueError(
                f"storage type {st} has {evidence} figures, but fewer than two measured storage types "
                f"have {evidence} figures to fit the device mapping on: probe the measured types"
            )
        derived[st] = (
            evidence,
            mappings[evidence].times((devices.probe if evidence == "probe" else devices.datasheet)[st]),
        )
    if derived:
        cal = ef.with_derived_types(
            cal, {st: t for st, (_, t) in derived.items()}, {st: ev for st, (ev, _) in derived.items()}
        )
    return cal, mappings


def _candidates(
    cal: ef.Calibration, devices: hw.Devices, frac: float, mappings: dict[str, dv.Mapping], measured: tuple[str, ...]
) -> list[tuple[hw.Candidate, ef.Calibration, str, dv.DeviceFigures | None]]:
    """Each priced catalog row with the calibration that predicts it, the type name it has there and
    its device figures (what its write check rests on; None when it has none): a measured type as
    fitted; otherwise its own figures (probe, a member's probe composed into its RAID level, or
    datasheet) through the mapping for that kind of figures, as type 'type:config'."""
    out = []
    for row in devices.catalog:
        if row.get("unit_price") is None:
            continue
        fig = hw.candidate_figures(row, devices)
        if row["storage_type"] in measured:
            out.append((hw.candidate(row, "measured"), cal, row["storage_type"], fig))
            continue
        if fig is None or fig.evidence not in mappings:
            continue
        name = f"{row['storage_type']}:{row['config_name']}"
        c = ef.with_derived_types(cal, {name: mappings[fig.evidence].times(fig)}, {name: fig.evidence})
        out.append((hw.candidate(row, fig.evidence), c, name, fig))
    return out


def scratch_writes_per_core_hour(prof: ef.JobProfiles) -> tuple[float, float, float]:
    """Scratch GB the job mix writes per CPU core-hour it delivers, with a 95 % interval (ratio
    estimator). A property of the jobs, not the device: with the throughput it gives a node's
    writes per day, hence an SSD's endurance-limited life."""
    x = prof.scratch_write / 1e9
    c = prof.cpu / 3600.0
    r = float(x.sum() / c.sum())
    se = float(np.sqrt(np.sum((x - r * c) ** 2)) / c.sum()) if len(x) > 1 else 0.0
    return r, max(r - 1.96 * se, 0.0), r + 1.96 * se


def _structural_columns(carried: dict | None) -> dict:
    """The published-figures error beside a derived row and which error its interval carries
    (None for measured rows: theirs is the run's leave-one-configuration-out error)."""
    if carried is None:
        return {"published_structural_error": None, "structural_error_source": None}
    return {"published_structural_error": carried["published_rms"], "structural_error_source": carried["source"]}


def _performance(
    prof: ef.JobProfiles, p: ef.Prediction, n: float, writes: tuple[float, float, float]
) -> hw.Performance:
    """A prediction as the buying guide prices it: efficiency and its 95 % interval, cores per job
    (the job mix's mean), and the scratch writes per delivered core-hour."""
    return hw.Performance(
        p.efficiency,
        p.efficiency - 1.96 * p.efficiency_sd,
        p.efficiency + 1.96 * p.efficiency_sd,
        n,
        float(np.mean(prof.cores)),
        *writes,
    )


PREDICTION_SCHEMA = pa.schema(
    [
        ("scenario", pa.string()),
        ("storage_type", pa.string()),
        ("ab_arm", pa.string()),
        ("jobs_per_node", pa.float64()),
        ("cache", pa.string()),
        ("cache_policy", pa.string()),
        ("cache_bytes", pa.int64()),
        ("jobs", pa.int64()),
        ("mean_concurrent_jobs", pa.float64()),
        ("measured_efficiency", pa.float64()),
        ("predicted_efficiency", pa.float64()),
        ("efficiency_sd", pa.float64()),
        ("efficiency_low", pa.float64()),
        ("efficiency_high", pa.float64()),
        ("loo_predicted_efficiency", pa.float64()),
        ("predicted_mean_wall_seconds", pa.float64()),
        ("jobs_per_node_hour", pa.float64()),
        ("extrapolated", pa.bool_()),
        ("evidence", pa.string()),
    ]
)


def _row(
    scenario: str,
    st: str,
    arm: str | None,
    n: float | None,
    cache: CacheOption,
    p: ef.Prediction,
    measured: float | None = None,
    mean_concurrency: float | None = None,
    loo: float | None = None,
    evidence: str = "jobs",
) -> dict:
    return {
        "scenario": scenario,
        "storage_type": st,
        "ab_arm": arm,
        "jobs_per_node": n,
        "cache": cache.label if scenario == "what-if" else "as measured",
        "cache_policy": cache.policy,
        "cache_bytes": cache.capacity_bytes,
        "jobs": p.jobs,
        "mean_concurrent_jobs": mean_concurrency,
        "measured_efficiency": measured,
        "predicted_efficiency": p.efficiency,
        "efficiency_sd": p.efficiency_sd,
        "efficiency_low": p.efficiency - 1.96 * p.efficiency_sd,
        "efficiency_high": p.efficiency + 1.96 * p.efficiency_sd,
        "loo_predicted_efficiency": loo,
        "predicted_mean_wall_seconds": p.mean_wall_seconds,
        "jobs_per_node_hour": p.jobs_per_node_hour,
        "extrapolated": p.extrapolated,
        "evidence": evidence,
    }


def staged_read_fraction(prof: ef.JobProfiles) -> float:
    """Bytes read from scratch per byte staged in, over jobs that staged in (the workload's mix)."""
    staged = prof.stage_in > 0
    return float(prof.scratch_read[staged].sum() / prof.stage_in[staged].sum()) if staged.any() else 0.0


def parameter_table(
    cal: ef.Calibration, prof: ef.JobProfiles, mappings: dict[str, dv.Mapping] | None = None
) -> pa.Table:
    """The fitted times, plus per storage type the scratch seconds per GB staged in and then read
    (read time x the workload's read fraction + write time): the combination the accounting
    pins down best, since a job's scratch reads and writes grow together."""
    times = np.exp(cal.log_times)
    se = cal.standard_errors()
    nt = cal.n_types
    evidence = [
        cal.type_evidence(k) if i < 2 * nt else ("jobs" if f else "none")
        for i, ((_, k), f) in enumerate(zip(cal.names(), cal.fitted))
    ]
    rows = [
        {
            "parameter": p,
            "applies_to": k,
            "value": float(v),
            "std_error": float(e),
            "unit": "s/GB",
            "fitted": bool(f),
            "evidence": ev,
        }
        for (p, k), v, e, f, ev in zip(cal.names(), times, se, cal.fitted, evidence)
    ]
    frac = staged_read_fraction(prof)
    for i, st in enumerate(cal.storage_types):
        v = times[i] * frac + times[nt + i]
        e = float(np.hypot(se[i] * frac, se[nt + i]))
        rows.append(
            {
                "parameter": "scratch_s_per_staged_gb",
                "applies_to": st,
                "value": float(v),
                "std_error": e,
                "unit": "s/GB",
                "fitted": bool(cal.fitted[i] and cal.fitted[nt + i]),
                "evidence": cal.type_evidence(st),
            }
        )
    units = {"seeks_per_gb": "accesses/GB", "channel_sharing": "exponent", "write_factor": "ratio"}
    for evidence, m in (mappings or {}).items():
        for name, value in m.as_dict().items():
            rows.append(
                {
                    "parameter": f"device_{name}",
                    "applies_to": f"{evidence} mapping",
                    "value": value,
                    "std_error": None,
                    "unit": units[name],
                    "fitted": True,
                    "evidence": f"jobs on {', '.join(m.types)}",
                }
            )
    return pa.Table.from_pylist(rows)


# ----------------------------------------------------------------------------- orderings


@dataclass(frozen=True)
class OrderingCheck:
    name: str
    reference: dict[str, float]
    predicted: dict[str, float]
    kendall_tau: float

    @property
    def same_order(self) -> bool:
        return sorted(self.reference, key=self.reference.get) == sorted(self.predicted, key=self.predicted.get)


def glasgow_ordering(run: EfficiencyRun, reference: dict[str, float], jobs_per_node: float = 8) -> OrderingCheck:
    """The what-if efficiency per storage type at ``jobs_per_node`` without a cache, ranked
    against a reference (the Glasgow study's Table 1 at 8 jobs per node)."""
    from scipy.stats import kendalltau

    pred = {
        r["storage_type"]: r["predicted_efficiency"]
        for r in run.predictions.to_pylist()
        if r["scenario"] == "what-if"
        and r["cache"] == "none"
        and r["jobs_per_node"] == jobs_per_node
        and r["storage_type"] in reference
    }
    keys = sorted(pred)
    tau = kendalltau([reference[k] for k in keys], [pred[k] for k in keys]).statistic if len(keys) > 1 else float("nan")
    return OrderingCheck(
        f"storage types at {jobs_per_node:g} jobs per node", {k: reference[k] for k in keys}, pred, float(tau)
    )


def arm_differences(run: EfficiencyRun) -> dict[str, tuple[float, float]]:
    """Per storage type, (measured, predicted) efficiency of arm B minus arm A."""
    cellsd: dict[tuple[str, str], dict] = {
        (r["storage_type"], r["ab_arm"]): r for r in run.predictions.to_pylist() if r["scenario"] == "measured"
    }
    out = {}
    for (st, arm), r in cellsd.items():
        other = cellsd.get((st, "A"))
        if arm == "B" and other:
            out[st] = (
                r["measured_efficiency"] - other["measured_efficiency"],
                r["predicted_efficiency"] - other["predicted_efficiency"],
            )
    return out


# ----------------------------------------------------------------------------- other engines' marts


def marts_connection(marts: Path, probes: list[Path] | None = None):
    """An in-memory DuckDB connection that shows a Parquet marts folder (what the Spark target
    writes: ``<spark.sql.warehouse.dir>/marts.db``) as ``marts.job_io_profile``, its sibling
    ``intermediate.db/int_file_access_by_job`` (for cache what-ifs) when present, and probe
    records written by ``tierlens probe storage --out`` as ``raw_device_probe``."""
    import duckdb

    def parquet(folder: Path) -> str:
        if not folder.is_dir() or not any(folder.rglob("*.parquet")):
            raise ValueError(f"{folder} holds no Parquet files")
        return "read_parquet('" + str(folder / "**" / "*.parquet").replace("'", "''") + "')"

    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create schema marts")
    con.execute(f"create view marts.job_io_profile as select * from {parquet(marts / 'job_io_profile')}")
    accesses = marts.parent / "intermediate.db" / "int_file_access_by_job"
    if accesses.is_dir():
        con.execute("create schema intermediate")
        con.execute(f"create view intermediate.int_file_access_by_job as select * from {parquet(accesses)}")
    if probes:
        files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in probes)
        con.execute(f"create view raw_device_probe as select * from read_parquet([{files}])")
    return con
