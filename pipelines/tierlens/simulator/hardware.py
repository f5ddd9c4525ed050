"""Hardware the site has not run: device figures from the warehouse, the device layer fitted and
validated by leaving whole storage types out, and the buying guide.

* :func:`load_devices` reads the newest probe per storage type (raw_device_probe) and the
  catalog's datasheet figures (raw_storage_catalog over dbt/seeds/storage_catalog.csv).
* :func:`validate_types` leaves one storage type out entirely (its jobs and its fitted times),
  derives its times from its probe (and, separately, from its datasheet) through a mapping fitted
  on the other types, and predicts its measured efficiency. The RMS of these errors is the
  structural error of every probe-derived (datasheet-derived) prediction.
* :func:`guide_row` prices a candidate configuration (catalog row x jobs per node x cache) per
  delivered CPU core-hour of the whole node (node, storage, power), and per unit of throughput of
  its storage alone (Glasgow Table 4), with the interval of what drives each price carried in, and
  SSD lifetime from the predicted writes against the rated endurance, and, as evidence beside
  it, the p99 read latency the configuration's probe measured under background writes at half its
  stage-in bandwidth (probe/under_write.py).
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
from . import devices as dv, efficiency as ef
from .under_write import GUIDE_UTILISATION, read_p99_at

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
    probe: dict[str, dv.DeviceFigures]  # by storage type
    datasheet: dict[str, dv.DeviceFigures]  # by storage type (the first catalog row with figures)
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


def inputs_digest(devices: Devices, econ: Economics | None = None) -> dict:
    """What a run read besides the jobs, as digests a run id can cover: the probes (ids and
    figures), the storage catalogue and the node economics. Two runs that differ in any of them
    get different ids, so a later run never replaces an earlier one silently."""
    import hashlib
    import json

    def digest(value) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]

    probes = {st: sorted({r["probe_id"] for r in rows}) for st, rows in sorted(devices.probes.items())}
    return {
        "probes": probes,
        "probe_figures": digest({st: [sorted(r.items()) for r in rows] for st, rows in devices.probes.items()}),
        "catalog": digest(sorted((sorted(r.items()) for r in devices.catalog), key=str)),
        "economics": digest((econ or Economics()).as_dict()),
    }


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


def staged_bytes_per_job_second(prof: ef.JobProfiles) -> float:
    """Bytes a running job of the mix writes to its scratch device per second of its wall time
    (stage-in copies and its own writes), at the pace the site's jobs were measured to run. Times
    the jobs on a node, this is the write rate a full node asks of its scratch device. The pace is
    the measured one, not a candidate's predicted one: a device that cannot keep up slows its jobs
    until their demand fits it, which would hide exactly the shortfall the guide must show."""
    wall = float(prof.wall.sum())
    return float((prof.stage_in + prof.scratch_write).sum() / wall) if wall > 0 else 0.0


def write_rates(prof: ef.JobProfiles) -> dv.WriteRates:
    """The write load on a node's scratch device: each measured type's jobs' write rate times the
    jobs they shared their node with (the conditions their fitted read times were measured under),
    and the site's, at its measured pace and concurrency, for a type it has not run."""

    def rate(p: ef.JobProfiles) -> float:
        return staged_bytes_per_job_second(p) * float(np.mean(p.concurrent)) if len(p) else 0.0

    by_type = {str(st): rate(prof.take(prof.storage_type == st)) for st in sorted(set(prof.storage_type))}
    return dv.WriteRates(rate(prof), by_type)


@dataclass
class TypeHeldOut:
    storage_type: str
    evidence: str  # probe | datasheet
    jobs: int
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted - self.measured


def validate_types(
    prof: ef.JobProfiles,
    job_class: str,
    devices: Devices,
    read_fraction: float,
    max_jobs: int | None = ef.DEFAULT_FIT_JOBS,
    seed: int = 0,
) -> list[TypeHeldOut]:
    """Leave each measured storage type out entirely; predict it from its probe and from its datasheet."""
    types = tuple(sorted(set(prof.storage_type)))
    out: list[TypeHeldOut] = []
    for st in types:
        held = prof.storage_type == st
        sources = [
            (ev, figs) for ev, figs in (("probe", devices.probe), ("datasheet", devices.datasheet)) if st in figs
        ]
        if held.sum() < ef.MIN_JOBS or not sources:
            continue
        cal = ef.calibrate(prof.take(~held), job_class, types, max_jobs, seed)
        # the held-out type is predicted at the write load of the site without it
        rates = write_rates(prof)
        rates = dv.WriteRates(write_rates(prof.take(~held)).site, rates.by_type)
        targets = fitted_targets(cal, exclude=st)
        test = prof.take(held)
        for evidence, figs in sources:
            others = {k: v for k, v in figs.items() if k != st}
            if len(set(others) & set(targets)) < 2:
                continue
            mapping = dv.fit_mapping(others, targets, read_fraction, rates)
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


TYPE_LOO_SCHEMA = pa.schema(
    [
        ("storage_type", pa.string()),
        ("evidence", pa.string()),
        ("jobs", pa.int64()),
        ("measured_efficiency", pa.float64()),
        ("predicted_efficiency", pa.float64()),
        ("error", pa.float64()),
    ]
)


def type_loo_table(held: list[TypeHeldOut]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "storage_type": h.storage_type,
                "evidence": h.evidence,
                "jobs": h.jobs,
                "measured_efficiency": h.measured,
                "predicted_efficiency": h.predicted,
                "error": h.error,
            }
            for h in held
        ],
        schema=TYPE_LOO_SCHEMA,
    )


# ----------------------------------------------------------------------------- the buying guide


@dataclass(frozen=True)
class Candidate:
    """A configuration a site could buy, with what its performance rests on."""

    config_name: str
    storage_type: str
    price_per_node: float
    currency: str | None
    capacity_gb_per_node: float | None
    endurance_tb_per_node: float | None  # rated writes the node's devices take, RAID-aware
    evidence: str  # measured | probe | datasheet


def usable_devices(raid_level: str | None, n: int) -> int:
    """Devices whose capacity holds data (the same rule as dbt's usable_devices macro)."""
    level = (raid_level or "none").lower()
    return {"raid1": 1, "raid10": max(n // 2, 1), "raid5": max(n - 1, 1), "raid6": max(n - 2, 1)}.get(level, n)


def candidate(row: dict, evidence: str) -> Candidate:
    n = int(row.get("devices_per_node") or 1)
    level = row.get("raid_level") or (
        "raid1" if row["storage_type"] == "raid1" else "raid0" if row["storage_type"] == "raid0" else "none"
    )
    usable = usable_devices(level, n)
    cap = row.get("capacity_bytes")
    tbw = row.get("endurance_tbw")
    # a mirror writes everything to every member: the node's endurance is that of the data devices
    return Candidate(
        row["config_name"],
        row["storage_type"],
        float(row["unit_price"] or 0.0) * n,
        row.get("currency"),
        cap * usable / 1e9 if cap else None,
        tbw * usable if tbw else None,
        evidence,
    )


# ----------------------------------------------------------------------------- whole nodes


@dataclass(frozen=True)
class NodeOption:
    """A worker node a site could buy around the storage: what it costs without its scratch
    storage (CPU, memory, chassis with board, power supplies and NIC) and what it draws."""

    config_name: str
    cores: int
    cpu_price: float
    memory_gb: float
    memory_price: float
    chassis_price: float
    watts: float  # mean draw of a busy node, scratch storage excluded
    currency: str
    source: str

    @property
    def price(self) -> float:
        return self.cpu_price + self.memory_price + self.chassis_price


#: Default node rows, used until a site gives its own (``--node-catalog``). Round figures, not a
#: quote: the source column says what they rest on, and a purchaser replaces them.
_DEFAULT_SOURCE = (
    "tierlens default, not a quote: round 2024 UK list prices of a dual-socket x86 worker "
    "(about 55 GBP per core, 3 GBP per GB of DDR5 at 4 GB per core, 1200 GBP chassis, board, "
    "power supplies and 25G NIC; 120 W plus 8 W per busy core); replace with your vendor's"
)
DEFAULT_NODES: tuple[NodeOption, ...] = tuple(
    NodeOption(f"{c}-core worker", c, 55.0 * c, 4.0 * c, 12.0 * c, 1200.0, 120.0 + 8.0 * c, "GBP", _DEFAULT_SOURCE)
    for c in (8, 16, 32, 64)
)

#: Default electricity tariff (currency per kWh; a round UK non-domestic figure, set your own).
DEFAULT_POWER_PRICE_PER_KWH = 0.25

NODE_CATALOG_COLUMNS = (
    "config_name",
    "cores",
    "cpu_price",
    "memory_gb",
    "memory_price",
    "chassis_price",
    "watts",
    "currency",
    "source",
)


def read_node_catalog(path: Path) -> tuple[NodeOption, ...]:
    """Node rows from a site's CSV (columns NODE_CATALOG_COLUMNS); a bad value names its line and field."""
    import csv

    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NODE_CATALOG_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(NODE_CATALOG_COLUMNS)})")
        out = []
        for line, r in enumerate(reader, start=2):
            try:
                node = NodeOption(
                    r["config_name"].strip(),
                    int(r["cores"]),
                    *(float(r[c]) for c in ("cpu_price", "memory_gb", "memory_price", "chassis_price", "watts")),
                    r["currency"].strip(),
                    r["source"].strip(),
                )
            except (TypeError, ValueError) as e:
                raise ValueError(f"{path} line {line}: {e}") from e
            bad = [
                c for c in ("cores", "cpu_price", "memory_price", "chassis_price", "watts") if getattr(node, c) < 0
            ] + (["cores"] if node.cores < 1 else [])
            if bad or not node.config_name or not node.currency:
                raise ValueError(
                    f"{path} line {line}: field {(bad or ['config_name/currency'])[0]} is missing or out of range"
                )
            out.append(node)
    if not out:
        raise ValueError(f"{path}: no node rows")
    return tuple(out)


@dataclass(frozen=True)
class Economics:
    """What a site pays around the storage: the nodes it could put it in, its electricity tariff
    (in the catalogue's currency) and the years a node is written off over."""

    nodes: tuple[NodeOption, ...] = DEFAULT_NODES
    power_price_per_kwh: float = DEFAULT_POWER_PRICE_PER_KWH
    service_years: float = SERVICE_YEARS

    def node_for(self, cores: float) -> NodeOption:
        """The cheapest node with at least ``cores`` cores (the largest when none has)."""
        fits = [n for n in self.nodes if n.cores >= cores - 1e-9]
        return min(fits, key=lambda n: (n.price, n.cores)) if fits else max(self.nodes, key=lambda n: n.cores)

    def as_dict(self) -> dict:
        return {
            "nodes": [vars(n) for n in self.nodes],
            "power_price_per_kwh": self.power_price_per_kwh,
            "service_years": self.service_years,
        }


# ----------------------------------------------------------------------------- pricing

GUIDE_SCHEMA = pa.schema(
    [
        ("config_name", pa.string()),
        ("storage_type", pa.string()),
        ("evidence", pa.string()),
        ("jobs_per_node", pa.float64()),
        ("cache", pa.string()),
        ("currency", pa.string()),
        ("price_per_node", pa.float64()),
        ("capacity_gb_per_node", pa.float64()),
        ("price_per_gb", pa.float64()),
        ("efficiency", pa.float64()),
        ("efficiency_low", pa.float64()),
        ("efficiency_high", pa.float64()),
        ("node_throughput", pa.float64()),
        ("node_throughput_low", pa.float64()),
        ("node_throughput_high", pa.float64()),
        ("price_per_throughput", pa.float64()),
        ("price_per_throughput_low", pa.float64()),
        ("price_per_throughput_high", pa.float64()),
        ("price_per_core_hour", pa.float64()),
        ("price_per_core_hour_low", pa.float64()),
        ("price_per_core_hour_high", pa.float64()),
        ("scratch_gb_written_per_node_day", pa.float64()),
        ("ssd_lifetime_years", pa.float64()),
        ("rank", pa.int32()),
        ("cores_per_job", pa.float64()),
        ("node_config", pa.string()),
        ("node_cores", pa.int32()),
        ("node_price", pa.float64()),
        ("whole_node_price", pa.float64()),
        ("power_watts", pa.float64()),
        ("power_price_per_node_hour", pa.float64()),
        ("interval_driver", pa.string()),
        ("staged_gb_per_node_hour", pa.float64()),
        ("write_warning", pa.string()),
        ("published_structural_error", pa.float64()),
        ("structural_error_source", pa.string()),
        ("under_write_read_p99_ms", pa.float64()),
    ]
)


@dataclass(frozen=True)
class Performance:
    """What a candidate delivers per node: efficiency with its 95 % interval, at a number of jobs
    per node with a given number of cores per job, and the scratch GB the jobs write per CPU
    core-hour they deliver (with its 95 % interval: the job mix's, not the device's)."""

    efficiency: float
    efficiency_low: float
    efficiency_high: float
    jobs_per_node: float
    cores_per_job: float = 1.0
    write_gb_per_core_hour: float | None = None
    write_gb_per_core_hour_low: float | None = None
    write_gb_per_core_hour_high: float | None = None

    def throughput(self, eff: float) -> float:
        """CPU core-hours delivered per node-hour (Glasgow's 'mean throughput')."""
        return self.jobs_per_node * self.cores_per_job * eff


def _life_years(c: Candidate, thr: float, write_per_core_hour: float | None) -> float | None:
    """Years until the node's scratch devices have taken their rated writes."""
    if not c.endurance_tb_per_node or not write_per_core_hour or write_per_core_hour <= 0:
        return None
    return c.endurance_tb_per_node * 1e3 / (thr * 24.0 * write_per_core_hour) / 365.25


def _price_per_core_hour(
    c: Candidate, node: NodeOption, econ: Economics, thr: float, write_per_core_hour: float | None
) -> float:
    """(node over its service life + storage over its own life + power) per node-hour / throughput.

    Storage whose endurance runs out first is replaced: its share is then price x writes per
    core-hour / endurance, which no longer depends on efficiency (faster jobs write sooner)."""
    life = _life_years(c, thr, write_per_core_hour)
    storage_years = min(econ.service_years, life) if life else econ.service_years
    per_node_hour = (
        node.price / (econ.service_years * HOURS_PER_YEAR)
        + c.price_per_node / (storage_years * HOURS_PER_YEAR)
        + node.watts / 1000.0 * econ.power_price_per_kwh
    )
    return per_node_hour / thr


def guide_row(
    c: Candidate,
    perf: Performance,
    cache: str = "none",
    econ: Economics | None = None,
    fig: dv.DeviceFigures | None = None,
    staged_bytes_per_node_hour: float | None = None,
) -> dict:
    """One priced row. Throughput = jobs x cores per job x efficiency (core-hours per node-hour).
    Price per throughput is the storage's alone (Glasgow Table 4); price per delivered core-hour is
    the whole node's: the cheapest node with the cores the jobs need, its storage, its power.

    ``fig`` (the configuration's device figures) and ``staged_bytes_per_node_hour`` (what a full
    node of the site's jobs writes to scratch in an hour) give the write check: the evidence when
    the device's steady-state write rate cannot keep up or its fast-write region runs out within
    the hour (devices.write_warning); no figures, no check.

    The price interval is the price at the two favourable (unfavourable) ends of what drives it:
    the efficiency interval, and the write volume per core-hour where the storage's endurance sets
    its life (the price rises with writes and falls with efficiency, so the ends are the extremes)."""
    econ = econ or Economics()
    if c.currency and any(n.currency != c.currency for n in econ.nodes):
        raise ValueError(
            f"catalogue row {c.config_name!r} is priced in {c.currency}, node rows in "
            f"{', '.join(sorted({n.currency for n in econ.nodes}))}: give node rows in one currency"
        )
    eff_lo, eff_hi = max(perf.efficiency_low, 1e-6), perf.efficiency_high
    thr, thr_lo, thr_hi = perf.throughput(perf.efficiency), perf.throughput(eff_lo), perf.throughput(eff_hi)
    node = econ.node_for(perf.jobs_per_node * perf.cores_per_job)
    w = perf.write_gb_per_core_hour
    w_lo = perf.write_gb_per_core_hour_low if perf.write_gb_per_core_hour_low is not None else w
    w_hi = perf.write_gb_per_core_hour_high if perf.write_gb_per_core_hour_high is not None else w
    life = _life_years(c, thr, w)
    limited = life is not None and life < econ.service_years
    price = _price_per_core_hour(c, node, econ, thr, w)
    return {
        "config_name": c.config_name,
        "storage_type": c.storage_type,
        "evidence": c.evidence,
        "jobs_per_node": perf.jobs_per_node,
        "cache": cache,
        "currency": c.currency,
        "price_per_node": c.price_per_node,
        "capacity_gb_per_node": c.capacity_gb_per_node,
        "price_per_gb": c.price_per_node / c.capacity_gb_per_node if c.capacity_gb_per_node else None,
        "efficiency": perf.efficiency,
        "efficiency_low": perf.efficiency_low,
        "efficiency_high": perf.efficiency_high,
        "node_throughput": thr,
        "node_throughput_low": thr_lo,
        "node_throughput_high": thr_hi,
        "price_per_throughput": c.price_per_node / thr,
        "price_per_throughput_low": c.price_per_node / thr_hi,
        "price_per_throughput_high": c.price_per_node / thr_lo,
        "price_per_core_hour": price,
        "price_per_core_hour_low": _price_per_core_hour(c, node, econ, thr_hi, w_lo),
        "price_per_core_hour_high": _price_per_core_hour(c, node, econ, thr_lo, w_hi),
        "scratch_gb_written_per_node_day": thr * 24.0 * w if w is not None else None,
        "ssd_lifetime_years": life,
        "rank": None,
        "cores_per_job": perf.cores_per_job,
        "node_config": node.config_name,
        "node_cores": node.cores,
        "node_price": node.price,
        "whole_node_price": node.price + c.price_per_node,
        "power_watts": node.watts,
        "power_price_per_node_hour": node.watts / 1000.0 * econ.power_price_per_kwh,
        "interval_driver": "efficiency and endurance" if limited else "efficiency",
        "staged_gb_per_node_hour": (
            staged_bytes_per_node_hour / dv.GB if staged_bytes_per_node_hour is not None else None
        ),
        "write_warning": (
            dv.write_warning(fig, staged_bytes_per_node_hour)
            if fig is not None and staged_bytes_per_node_hour
            else None
        ),
        # evidence, not an input of the efficiency: what the probe saw reads wait for beside writes
        "under_write_read_p99_ms": _ms(read_p99_at(fig.under_write if fig is not None else None, GUIDE_UTILISATION)),
    }


def _ms(seconds: float | None) -> float | None:
    return seconds * 1e3 if seconds is not None else None


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
            # one member's reads under writes are not the array's: not shown as its evidence
            return replace(
                fig.composed(row.get("raid_level"), row.get("devices_per_node") or 1),
                storage_type=st,
                under_write=None,
            )
    return dv.from_datasheet(row)


def replace_structural(cal: ef.Calibration, error: float | None) -> ef.Calibration:
    """``cal`` with the structural error of a kind of evidence (kept when that is unknown)."""
    return replace(cal, structural_error=error if error is not None else cal.structural_error)
