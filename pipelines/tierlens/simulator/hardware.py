"""Hardware the site has not run: device figures from the warehouse, the device layer fitted and
validated by leaving whole storage types out, and the buying guide.

* :func:`load_devices` reads the newest probe per storage type (raw_device_probe) and the
  catalog's datasheet figures (raw_storage_catalog over dbt/seeds/storage_catalog.csv).
* :func:`validate_types` leaves one storage type out entirely (its jobs and its fitted times),
  derives its times from its probe (and, separately, from its datasheet) through a mapping fitted
  on the other types, and predicts its measured efficiency. The RMS of these errors is the
  structural error of every probe-derived (datasheet-derived) prediction.
* :func:`buying_guide` prices candidate configurations (catalog row x jobs per node x cache) per
  unit of delivered throughput, Glasgow Table 4 style, with the prediction's 95 % interval carried
  into the price, and SSD lifetime from the predicted writes against the rated endurance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..config import DBT_PROJECT_DIR
from ..records import STORAGE_CATALOG
from . import devices as dv
from . import efficiency as ef

#: Hours a node's storage is written off over when pricing a delivered core-hour (5 years).
SERVICE_YEARS = 5.0
HOURS_PER_YEAR = 365.25 * 24


# ----------------------------------------------------------------------------- inputs

def catalog_rows(con, seed: Path | None = None) -> list[dict]:
    """storage_catalog rows: raw_storage_catalog, plus seed rows whose config_name it lacks."""
    names = [f.name for f in STORAGE_CATALOG]
    rows: list[dict] = []
    try:
        # select *: a warehouse opened read-only may predate the datasheet columns
        rows = con.execute("select * from raw_storage_catalog").to_arrow_table().to_pylist()
    except Exception:  # noqa: BLE001 - a warehouse without the table has no catalog rows of its own
        rows = []
    seed = seed or DBT_PROJECT_DIR / "seeds" / "storage_catalog.csv"
    if seed.exists():
        have = {r["config_name"] for r in rows}
        types = {f.name: f.type for f in STORAGE_CATALOG if not pa.types.is_list(f.type)}
        table = pacsv.read_csv(seed, convert_options=pacsv.ConvertOptions(column_types=types))
        rows += [r for r in table.to_pylist() if r["config_name"] not in have]
    for r in rows:
        for n in names:
            r.setdefault(n, None)
    return rows


def probe_rows(con) -> dict[str, list[dict]]:
    """The newest probe run per storage type: its device_probe rows."""
    try:
        t = con.execute("""
            select * from raw_device_probe where probe_id in (
                select arg_max(probe_id, probed_at) from raw_device_probe group by storage_type)
            order by probe_id, job_name""").to_arrow_table()
    except Exception:  # noqa: BLE001 - no probe has been loaded into this warehouse
        return {}
    out: dict[str, list[dict]] = {}
    for r in t.to_pylist():
        out.setdefault(r["storage_type"], []).append(r)
    return out


@dataclass
class Devices:
    probe: dict[str, dv.DeviceFigures]       # by storage type
    datasheet: dict[str, dv.DeviceFigures]   # by storage type (the first catalog row with figures)
    catalog: list[dict]
    probes: dict[str, list[dict]]


def load_devices(con) -> Devices:
    probes = probe_rows(con)
    catalog = catalog_rows(con)
    datasheet: dict[str, dv.DeviceFigures] = {}
    for row in catalog:
        fig = dv.from_datasheet(row)
        if fig is not None:
            datasheet.setdefault(row["storage_type"], fig)
    return Devices({st: dv.from_probe(rows) for st, rows in probes.items()}, datasheet, catalog, probes)


# ----------------------------------------------------------------------------- fitting and validation

def fitted_targets(cal: ef.Calibration, exclude: str | None = None) -> dict[str, tuple[float, float, float]]:
    """Per job-fitted storage type: (read s/GB, write s/GB, relative standard error of their sum)."""
    times = np.exp(cal.log_times)
    se = cal.standard_errors()
    nt = cal.n_types
    out = {}
    for i, st in enumerate(cal.storage_types):
        if st == exclude or not (cal.fitted[i] and cal.fitted[nt + i]):
            continue
        rel = float(np.hypot(se[i], se[nt + i]) / (times[i] + times[nt + i]))
        out[st] = (float(times[i]), float(times[nt + i]), rel)
    return out


@dataclass
class TypeHeldOut:
    storage_type: str
    evidence: str          # probe | datasheet
    jobs: int
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted - self.measured


def validate_types(prof: ef.JobProfiles, job_class: str, devices: Devices, read_fraction: float,
                   max_jobs: int | None = ef.DEFAULT_FIT_JOBS, seed: int = 0) -> list[TypeHeldOut]:
    """Leave each measured storage type out entirely; predict it from its probe and from its datasheet."""
    types = tuple(sorted(set(prof.storage_type)))
    out: list[TypeHeldOut] = []
    for st in types:
        held = prof.storage_type == st
        sources = [(ev, figs) for ev, figs in (("probe", devices.probe), ("datasheet", devices.datasheet))
                   if st in figs]
        if held.sum() < ef.MIN_JOBS or not sources:
            continue
        cal = ef.calibrate(prof.take(~held), job_class, types, max_jobs, seed)
        targets = fitted_targets(cal, exclude=st)
        test = prof.take(held)
        for evidence, figs in sources:
            others = {k: v for k, v in figs.items() if k != st}
            if len(set(others) & set(targets)) < 2:
                continue
            mapping = dv.fit_mapping(others, targets, read_fraction)
            read, write = mapping.times(figs[st])
            lt = cal.log_times.copy()
            i = types.index(st)
            lt[i], lt[len(types) + i] = np.log(read), np.log(write)
            wall = ef.predict_wall(lt, types, test)
            out.append(TypeHeldOut(st, evidence, int(held.sum()), test.efficiency, ef.efficiency_of(test, wall)))
    return out


def type_errors(held: list[TypeHeldOut]) -> dict[str, float | None]:
    """RMS leave-one-type-out error per kind of evidence (probe, datasheet)."""
    out: dict[str, float | None] = {}
    for evidence in ("probe", "datasheet"):
        errs = [h.error for h in held if h.evidence == evidence]
        out[evidence] = float(np.sqrt(np.mean(np.square(errs)))) if errs else None
    return out


TYPE_LOO_SCHEMA = pa.schema([
    ("storage_type", pa.string()), ("evidence", pa.string()), ("jobs", pa.int64()),
    ("measured_efficiency", pa.float64()), ("predicted_efficiency", pa.float64()), ("error", pa.float64()),
])


def type_loo_table(held: list[TypeHeldOut]) -> pa.Table:
    return pa.Table.from_pylist([{"storage_type": h.storage_type, "evidence": h.evidence, "jobs": h.jobs,
                                  "measured_efficiency": h.measured, "predicted_efficiency": h.predicted,
                                  "error": h.error} for h in held], schema=TYPE_LOO_SCHEMA)


# ----------------------------------------------------------------------------- the buying guide

@dataclass(frozen=True)
class Candidate:
    """A configuration a site could buy, with what its performance rests on."""

    config_name: str
    storage_type: str
    price_per_node: float
    currency: str | None
    capacity_gb_per_node: float | None
    endurance_tb_per_node: float | None    # rated writes the node's devices take, RAID-aware
    evidence: str                          # measured | probe | datasheet


def usable_devices(raid_level: str | None, n: int) -> int:
    """Devices whose capacity holds data (the same rule as dbt's usable_devices macro)."""
    level = (raid_level or "none").lower()
    return {"raid1": 1, "raid10": max(n // 2, 1), "raid5": max(n - 1, 1), "raid6": max(n - 2, 1)}.get(level, n)


def candidate(row: dict, evidence: str) -> Candidate:
    n = int(row.get("devices_per_node") or 1)
    level = row.get("raid_level") or ("raid1" if row["storage_type"] == "raid1" else
                                      "raid0" if row["storage_type"] == "raid0" else "none")
    usable = usable_devices(level, n)
    cap = row.get("capacity_bytes")
    tbw = row.get("endurance_tbw")
    # a mirror writes everything to every member: the node's endurance is that of the data devices
    return Candidate(row["config_name"], row["storage_type"], float(row["unit_price"] or 0.0) * n, row.get("currency"),
                     cap * usable / 1e9 if cap else None, tbw * usable if tbw else None, evidence)


GUIDE_SCHEMA = pa.schema([
    ("config_name", pa.string()), ("storage_type", pa.string()), ("evidence", pa.string()),
    ("jobs_per_node", pa.float64()), ("cache", pa.string()), ("currency", pa.string()),
    ("price_per_node", pa.float64()), ("capacity_gb_per_node", pa.float64()), ("price_per_gb", pa.float64()),
    ("efficiency", pa.float64()), ("efficiency_low", pa.float64()), ("efficiency_high", pa.float64()),
    ("node_throughput", pa.float64()), ("node_throughput_low", pa.float64()), ("node_throughput_high", pa.float64()),
    ("price_per_throughput", pa.float64()), ("price_per_throughput_low", pa.float64()),
    ("price_per_throughput_high", pa.float64()), ("price_per_core_hour", pa.float64()),
    ("price_per_core_hour_low", pa.float64()), ("price_per_core_hour_high", pa.float64()),
    ("scratch_gb_written_per_node_day", pa.float64()), ("ssd_lifetime_years", pa.float64()),
    ("rank", pa.int32()),
])


@dataclass(frozen=True)
class Performance:
    """What a candidate delivers per node: efficiency with its 95 % interval, at a number of jobs
    per node with a given number of cores per job, and the scratch bytes it writes per node-day."""

    efficiency: float
    efficiency_low: float
    efficiency_high: float
    jobs_per_node: float
    cores_per_job: float = 1.0
    scratch_gb_written_per_node_day: float | None = None

    def throughput(self, eff: float) -> float:
        """CPU core-hours delivered per node-hour (Glasgow's 'mean throughput')."""
        return self.jobs_per_node * self.cores_per_job * eff


def guide_row(c: Candidate, perf: Performance, cache: str = "none",
              service_years: float = SERVICE_YEARS) -> dict:
    """One priced row. Throughput = jobs x cores x efficiency (core-hours per node-hour); a price
    per throughput divides the node's storage price by it, and its interval by the throughput's
    (a higher throughput gives the lower price). A delivered core-hour is priced over the service
    life, cut short by the SSD's rated writes when those run out first."""
    eff_lo, eff_hi = max(perf.efficiency_low, 1e-6), perf.efficiency_high
    thr, thr_lo, thr_hi = perf.throughput(perf.efficiency), perf.throughput(eff_lo), perf.throughput(eff_hi)
    written = perf.scratch_gb_written_per_node_day
    life = (c.endurance_tb_per_node * 1e3 / written / 365.25
            if c.endurance_tb_per_node and written and written > 0 else None)
    years = min(service_years, life) if life else service_years
    hours = years * HOURS_PER_YEAR
    return {"config_name": c.config_name, "storage_type": c.storage_type, "evidence": c.evidence,
            "jobs_per_node": perf.jobs_per_node, "cache": cache, "currency": c.currency,
            "price_per_node": c.price_per_node, "capacity_gb_per_node": c.capacity_gb_per_node,
            "price_per_gb": c.price_per_node / c.capacity_gb_per_node if c.capacity_gb_per_node else None,
            "efficiency": perf.efficiency, "efficiency_low": perf.efficiency_low, "efficiency_high": perf.efficiency_high,
            "node_throughput": thr, "node_throughput_low": thr_lo, "node_throughput_high": thr_hi,
            "price_per_throughput": c.price_per_node / thr, "price_per_throughput_low": c.price_per_node / thr_hi,
            "price_per_throughput_high": c.price_per_node / thr_lo,
            "price_per_core_hour": c.price_per_node / (thr * hours),
            "price_per_core_hour_low": c.price_per_node / (thr_hi * hours),
            "price_per_core_hour_high": c.price_per_node / (thr_lo * hours),
            "scratch_gb_written_per_node_day": written, "ssd_lifetime_years": life, "rank": None}


def rank(rows: list[dict]) -> pa.Table:
    """Cheapest delivered core-hour first (ties: cheaper per GB)."""
    rows = sorted(rows, key=lambda r: (r["price_per_core_hour"], r["price_per_gb"] or math.inf))
    return pa.Table.from_pylist([dict(r, rank=i + 1) for i, r in enumerate(rows)], schema=GUIDE_SCHEMA)


def candidate_figures(row: dict, devices: Devices) -> dv.DeviceFigures | None:
    """A catalog row's figures: its storage type's probe, else a probe of its member device composed
    into its RAID level, else its datasheet."""
    st = row["storage_type"]
    if st in devices.probe:
        return devices.probe[st]
    model = (row.get("device_model") or "").strip().lower()
    for rows in devices.probes.values():
        members = [m.strip().lower() for m in (rows[0].get("device_models") or [])]
        if model and members == [model]:
            fig = dv.from_probe(rows)
            return replace(fig.composed(row.get("raid_level"), row.get("devices_per_node") or 1), storage_type=st)
    return dv.from_datasheet(row)


def replace_structural(cal: ef.Calibration, error: float | None) -> ef.Calibration:
    """``cal`` with the structural error of a kind of evidence (kept when that is unknown)."""
    return replace(cal, structural_error=error if error is not None else cal.structural_error)
