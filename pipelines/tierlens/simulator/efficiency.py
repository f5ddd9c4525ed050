"""CPU efficiency and throughput of configurations not deployed, calibrated on the site's own jobs.

The model (version :data:`MODEL_VERSION`) treats a worker node as a closed queueing network:
the jobs on a node alternate between their own cores (a delay: nobody waits for another job's
CPU) and the node's scratch device (one queueing centre shared by every job on the node). Mean
value analysis (Schweitzer's approximation for jobs of different kinds) gives the time a job
spends at the scratch device when ``N`` jobs share it, so contention follows from the service
times rather than being a free parameter. Remote
bytes (XRootD) cost a fixed time per byte for each route (origin, cache hit, cache miss) and
kind of read: a stage-in copy streams the file, a direct read seeks through it, and a disk server
pays very differently for the two.

Per job::

    scratch demand D = scratch_read_bytes * read_s_per_GB[storage] + scratch_write_bytes * write_s_per_GB[storage]
    remote time    T = sum over (stage, direct) x (origin, cache hit, cache miss) of bytes * s_per_GB
    overlap        O = min(stage-in bytes * write_s_per_GB[storage], stage-in part of T)
    wait at device R = D * (1 + (N - 1) * q[node]),  q = the node's jobs' share of wall time at the device
    I/O wait         = R + T - O
    efficiency       = cpu / ((cpu / cores + I/O wait) * cores)

The per-storage-type service times and the route times are fitted (robust least squares on the
per-job efficiency) from ``marts.job_io_profile``. Predicting a configuration keeps each job's CPU
and bytes and changes what the configuration changes: the storage type's service times, ``N``,
and, through a cache replay, which of the job's remote bytes hit the cache.

A storage type without measured jobs gets its two times from the device layer (devices.py):
derived from a probe or datasheet through a mapping fitted on the types that have both, and
marked ``derived`` rather than ``fitted`` (:func:`with_derived_types`).

The overlap term says a copy to scratch takes the longer of its network read and its disk write,
not their sum. Simplifications a reader should know: the overlap uses the uncontended write time;
a device with several channels (RAID1 mirrors, NVMe queues, NFS spindles) is one centre with an
effective service time; a network file system's contention across nodes is folded into its times.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
from numba import njit
from scipy.optimize import least_squares

#: mva-2: the device layer (devices.py) derives times for storage types without measured jobs.
#: mva-3: a derived type's reads also pay what its probe measured them losing behind writes.
MODEL_VERSION = "tierlens-mva-3"
ROUTES = (
    "stage_origin",
    "stage_cache_hit",
    "stage_cache_miss",
    "direct_origin",
    "direct_cache_hit",
    "direct_cache_miss",
)
N_STAGE_ROUTES = 3
FIXED_POINT_ITERATIONS = 12
GB = 1e9
#: Jobs a storage type (or route) needs in the calibration set before its times count as fitted.
MIN_JOBS = 30
#: Jobs a fit uses at most (a seeded sample): the times are few, and a fit then takes seconds.
DEFAULT_FIT_JOBS = 8000
#: Bounds of the fitted times, seconds per GB (1 ms/GB to 1 h/GB): wide, only to keep the fit finite.
LOG_BOUNDS = (np.log(1e-3), np.log(3600.0))

PROFILE_COLUMNS = (
    "storage_type",
    "ab_arm",
    "allocated_cores",
    "cpu_seconds",
    "wall_seconds",
    "scratch_read_bytes",
    "scratch_write_bytes",
    "stage_in_bytes",
    *(f"{r}_bytes" for r in ROUTES),
    "concurrent_jobs",
    "job_key",
)


@dataclass
class JobProfiles:
    """The calibration set: one entry per job, column arrays (a struct of arrays for numpy)."""

    storage_type: np.ndarray  # str
    arm: np.ndarray  # str ('' outside a trial)
    cores: np.ndarray  # float64
    cpu: np.ndarray  # CPU seconds
    wall: np.ndarray  # wall seconds
    scratch_read: np.ndarray  # bytes
    scratch_write: np.ndarray  # bytes
    stage_in: np.ndarray  # bytes copied to scratch over XRootD
    remote: np.ndarray  # bytes per route, shape (len(ROUTES), jobs), in ROUTES order
    concurrent: np.ndarray  # mean jobs on the node, the job included
    job_key: np.ndarray  # str: batch_system.cluster.job_id.step_id
    node: np.ndarray  # str: the node the job ran on (jobs share its scratch device)

    def __len__(self) -> int:
        return len(self.cpu)

    def take(self, mask: np.ndarray) -> JobProfiles:
        return JobProfiles(
            **{f.name: (v[:, mask] if v.ndim == 2 else v[mask]) for f in fields(self) for v in [getattr(self, f.name)]}
        )

    def type_index(self, storage_types: tuple[str, ...]) -> np.ndarray:
        """Each job's position in ``storage_types`` (-1 if absent), computed once per layout."""
        memo = self.__dict__.setdefault("_type_index", {})
        if storage_types not in memo:
            lookup = {s: i for i, s in enumerate(storage_types)}
            memo[storage_types] = np.array([lookup.get(v, -1) for v in self.storage_type], np.int64)
        return memo[storage_types]

    def node_index(self) -> tuple[np.ndarray, int]:
        """Dense node ids (for the per-node sharing term) and their number."""
        if "_node_index" not in self.__dict__:
            names, idx = np.unique(self.node.astype(str), return_inverse=True)
            self.__dict__["_node_index"] = (idx.astype(np.int64), len(names))
        return self.__dict__["_node_index"]

    @property
    def efficiency(self) -> float:
        return float(self.cpu.sum() / (self.wall * self.cores).sum()) if len(self) else float("nan")

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for v in (getattr(self, f.name) for f in fields(self)):
            h.update(np.ascontiguousarray(v.astype(str) if v.dtype == object else v).tobytes())
        return h.hexdigest()[:16]


def time_window(column: str, start: str | None, end: str | None) -> tuple[list[str], list[object]]:
    """SQL conditions (and their parameters) for ``start <= column < end``, either end open."""
    where: list[str] = []
    args: list[object] = []
    for bound, op in ((start, ">="), (end, "<")):
        if bound:
            where.append(f"{column} {op} ?::timestamptz")
            args.append(bound)
    return where, args


#: Decimal places each profile column is rounded to when it is read. The marts' float sums and
#: means come from DuckDB's parallel aggregation, whose order (and so whose last bits) changes from
#: run to run; the least-squares fit turns those last bits into differences of a point of
#: efficiency between two builds of the same data. Rounding far below any measurement's precision
#: (a byte, a microsecond, a billionth of a job) gives the fit the same inputs every time.
QUANTUM_DECIMALS = {"cpu_seconds": 6, "wall_seconds": 6, "concurrent_jobs": 9, "allocated_cores": 9}


def _quantized(column: str) -> str:
    decimals = QUANTUM_DECIMALS.get(column, 0)  # the byte columns: whole bytes
    return f"round({column}::double, {decimals}) as {column}"


def load_profiles(con, job_class: str | None, start: str | None = None, end: str | None = None) -> JobProfiles:
    """Completed jobs of ``job_class`` (all classes when None) from ``marts.job_io_profile``."""
    where, args = time_window("end_time", start, end)
    where += ["state = 'COMPLETED'", "storage_type is not null", "cpu_seconds > 0"]
    if job_class:
        where.append("job_class = ?")
        args.append(job_class)
    numeric = ", ".join(_quantized(c) for c in PROFILE_COLUMNS[2:-2])
    sql = f"""
        select storage_type, coalesce(ab_arm, '') as ab_arm, {numeric}, {_quantized("concurrent_jobs")},
               batch_system || '.' || cluster || '.' || job_id || '.' || step_id as job_key,
               cluster || '/' || node as node
        from marts.job_io_profile where {" and ".join(where)}
        order by batch_system, cluster, job_id, step_id"""
    t = con.execute(sql, args).to_arrow_table()
    col = [t.column(i).to_numpy(zero_copy_only=False) for i in range(t.num_columns)]
    nr = len(ROUTES)
    return JobProfiles(
        col[0].astype(object),
        col[1].astype(object),
        *col[2:8],
        np.vstack(col[8 : 8 + nr]) if len(t) else np.zeros((nr, 0)),
        col[8 + nr],
        col[9 + nr].astype(object),
        col[10 + nr].astype(object),
    )


# ----------------------------------------------------------------------------- the queueing model


class ServiceTimes(NamedTuple):
    """Seconds per byte of each service, as the compiled loop reads them. Calibration.log_times
    holds their logarithms (in s/GB) one block after another in this class's field order, each
    block as long as ``block_sizes`` says: ``of`` cuts the vector by those sizes, so the loop
    never counts offsets into it."""

    read: np.ndarray  # float64 per storage type: reading the job's scratch device
    write: np.ndarray  # float64 per storage type: writing it
    route: np.ndarray  # float64 per route (ROUTES): reading remotely by that route

    @staticmethod
    def block_sizes(n_types: int) -> dict[str, int]:
        return {"read": n_types, "write": n_types, "route": len(ROUTES)}

    @classmethod
    def of(cls, log_times: np.ndarray, n_types: int) -> ServiceTimes:
        t = np.exp(np.asarray(log_times, np.float64)) / GB
        sizes = cls.block_sizes(n_types)
        if len(t) != sum(sizes.values()):
            raise ValueError(f"{len(t)} service times for {n_types} storage types and {len(ROUTES)} routes")
        ends = np.cumsum([sizes[name] for name in cls._fields])
        return cls(*(np.ascontiguousarray(b) for b in np.split(t, ends[:-1])))


class WallJobs(NamedTuple):
    """The jobs whose wall time the compiled loop predicts, one entry per job in every array."""

    type_idx: np.ndarray  # int64 position of the job's storage type in the calibration's
    node_idx: np.ndarray  # int64 dense node id (the jobs of a node share its device)
    n_nodes: int
    scratch_read: np.ndarray  # float64 bytes read from scratch
    scratch_write: np.ndarray  # float64 bytes written to scratch
    stage_in: np.ndarray  # float64 bytes copied to scratch before the job reads them
    remote: np.ndarray  # float64 (len(ROUTES), jobs) bytes read by route
    compute: np.ndarray  # float64 CPU seconds per allocated core
    jobs: np.ndarray  # float64 jobs running on the node at once


@njit(cache=True, nogil=True)
def _wall_kernel(times: ServiceTimes, w: WallJobs) -> np.ndarray:
    """Predicted wall seconds per job (the formula in the module docstring).

    The jobs sharing a node are not copies of each other (a job reading remotely barely touches
    the scratch device), so the queue a job finds there is built from the other jobs' measured
    mix: each of the N - 1 others is at the device for the fraction of its wall time that the
    jobs of the same node spend there on average (Schweitzer's approximation of multi-class MVA),
    solved by fixed-point iteration.
    """
    n = w.compute.shape[0]
    n_routes = w.remote.shape[0]
    demand = np.empty(n)
    base = np.empty(n)
    for j in range(n):
        i = w.type_idx[j]
        t_write = times.write[i]
        demand[j] = w.scratch_read[j] * times.read[i] + w.scratch_write[j] * t_write
        total = 0.0
        staged = 0.0
        for r in range(n_routes):
            x = w.remote[r, j] * times.route[r]
            total += x
            if r < N_STAGE_ROUTES:
                staged += x
        # a copy to scratch takes the longer of its network read and its disk write; a rounded
        # min keeps the fit's gradient continuous
        a = w.stage_in[j] * t_write
        eps = 0.01 * (a + staged) + 1e-12
        overlap = 0.5 * (a + staged - np.sqrt((a - staged) ** 2 + eps * eps)) + 0.5 * eps
        base[j] = w.compute[j] + total - overlap
    share = np.zeros(w.n_nodes)
    wall = base + demand
    for _ in range(FIXED_POINT_ITERATIONS):
        busy = np.zeros(w.n_nodes)
        span = np.zeros(w.n_nodes)
        for j in range(n):
            g = w.node_idx[j]
            busy[g] += wall[j] - base[j]
            span[g] += wall[j]
        for g in range(w.n_nodes):
            share[g] = busy[g] / span[g] if span[g] > 0 else 0.0
        for j in range(n):
            others = max(w.jobs[j], 1.0) - 1.0
            wall[j] = base[j] + demand[j] * (1.0 + others * share[w.node_idx[j]])
    return wall


@dataclass
class Scenario:
    """What a configuration changes for every job; None keeps the job's measured value."""

    storage_type: str | None = None
    jobs_per_node: float | None = None
    #: per-job bytes by route, shape (len(ROUTES), jobs); None keeps the measured split
    remote: np.ndarray | None = None


@dataclass
class Calibration:
    """Fitted service times (seconds per GB) for one job class, with their covariance."""

    job_class: str
    storage_types: tuple[str, ...]
    log_times: np.ndarray  # [read per type..., write per type..., per route...]
    covariance: np.ndarray  # of log_times
    fitted: np.ndarray  # bool per parameter: the data determined it
    jobs: int
    rms_error: float  # per-job efficiency residual, RMS
    fingerprint: str = ""
    structural_error: float | None = None  # leave-one-out RMS error of configuration efficiency
    #: bool per parameter: derived from a probe or datasheet by the device layer (not from jobs)
    derived: np.ndarray | None = None
    #: per storage type: what its times rest on, 'jobs', 'probe' or 'datasheet'
    evidence: dict[str, str] | None = None

    @property
    def n_types(self) -> int:
        return len(self.storage_types)

    @property
    def determined(self) -> np.ndarray:
        """Parameters some evidence determined: fitted from jobs or derived from a device."""
        return self.fitted if self.derived is None else self.fitted | self.derived

    def type_evidence(self, storage_type: str) -> str:
        if self.evidence and storage_type in self.evidence:
            return self.evidence[storage_type]
        i = self.storage_types.index(storage_type)
        return "jobs" if self.fitted[i] else "none"

    def names(self) -> list[tuple[str, str | None]]:
        """(parameter, storage type or route) for each entry of log_times."""
        return (
            [("scratch_read_s_per_gb", s) for s in self.storage_types]
            + [("scratch_write_s_per_gb", s) for s in self.storage_types]
            + [(f"{r}_s_per_gb", r) for r in ROUTES]
        )

    def times(self, log_times: np.ndarray | None = None) -> dict[tuple[str, str | None], float]:
        lt = self.log_times if log_times is None else log_times
        return dict(zip(self.names(), np.exp(lt).tolist()))

    def standard_errors(self) -> np.ndarray:
        """Standard errors of the times themselves (delta method from the log scale)."""
        return np.exp(self.log_times) * np.sqrt(np.clip(np.diag(self.covariance), 0, None))

    def to_json(self) -> str:
        return json.dumps({f"{p}[{k}]": v for (p, k), v in self.times().items()}, sort_keys=True)


def predict_wall(
    log_times: np.ndarray, storage_types: tuple[str, ...], prof: JobProfiles, scenario: Scenario | None = None
) -> np.ndarray:
    """Predicted wall seconds per job under ``scenario`` (the measured configuration by default)."""
    sc = scenario or Scenario()
    if sc.storage_type is not None:
        idx = np.full(len(prof), storage_types.index(sc.storage_type), np.int64)
    else:
        idx = prof.type_index(storage_types)
        if (idx < 0).any():
            missing = sorted(set(prof.storage_type[idx < 0]))
            raise ValueError(f"no calibration for storage type(s) {', '.join(missing)}")
    jobs = prof.concurrent if sc.jobs_per_node is None else np.full(len(prof), float(sc.jobs_per_node))
    node_idx, n_nodes = prof.node_index()
    w = WallJobs(
        type_idx=idx,
        node_idx=node_idx,
        n_nodes=n_nodes,
        scratch_read=prof.scratch_read,
        scratch_write=prof.scratch_write,
        stage_in=prof.stage_in,
        remote=np.ascontiguousarray(sc.remote if sc.remote is not None else prof.remote, np.float64),
        compute=prof.cpu / prof.cores,
        jobs=np.ascontiguousarray(jobs, np.float64),
    )
    return _wall_kernel(ServiceTimes.of(log_times, len(storage_types)), w)


def efficiency_of(prof: JobProfiles, wall: np.ndarray) -> float:
    return float(prof.cpu.sum() / (wall * prof.cores).sum())


# ----------------------------------------------------------------------------- calibration


def calibrate(
    prof: JobProfiles,
    job_class: str,
    storage_types: tuple[str, ...] | None = None,
    max_jobs: int | None = DEFAULT_FIT_JOBS,
    seed: int = 0,
) -> Calibration:
    """Fit the service times on ``prof`` (robust least squares on per-job efficiency).

    No prior: every time starts at 5 s/GB inside wide bounds (1 ms to 1 h per GB), so nothing
    here is centred on a value from the synthetic generator; the jobs alone determine the fit.

    ``storage_types`` fixes the parameter layout (types absent from ``prof`` are kept at a neutral
    start value and marked not fitted). ``max_jobs`` fits on a seeded random subset for speed;
    the parameters are few, so a few thousand jobs per type already pin them down.
    """
    types = tuple(storage_types or sorted(set(prof.storage_type)))
    if len(prof) == 0:
        raise ValueError(f"no completed {job_class or ''} jobs with a storage type to calibrate on")
    fit_set = prof
    if max_jobs and len(prof) > max_jobs:
        rng = np.random.default_rng(seed)
        fit_set = prof.take(np.sort(rng.choice(len(prof), max_jobs, replace=False)))
    nt = len(types)
    idx = fit_set.type_index(types)
    counts = np.bincount(idx[idx >= 0], minlength=nt)
    fitted = np.concatenate([counts >= MIN_JOBS, counts >= MIN_JOBS, (fit_set.remote > 0).sum(axis=1) >= MIN_JOBS])
    observed = fit_set.cpu / (fit_set.wall * fit_set.cores)
    x0 = np.full(2 * nt + len(ROUTES), np.log(5.0))
    free = np.flatnonzero(fitted)

    def residuals(theta: np.ndarray) -> np.ndarray:
        lt = x0.copy()
        lt[free] = theta
        return fit_set.cpu / (predict_wall(lt, types, fit_set) * fit_set.cores) - observed

    sol = least_squares(
        residuals,
        x0[free],
        bounds=LOG_BOUNDS,
        loss="soft_l1",
        f_scale=0.05,
        tr_solver="lsmr",
        x_scale=1.0,
        max_nfev=300,
    )
    log_times = x0.copy()
    log_times[free] = sol.x
    cov = np.zeros((len(x0), len(x0)))
    jac = sol.jac
    dof = max(len(observed) - len(free), 1)
    s2 = float(np.sum(sol.fun**2) / dof)
    cov[np.ix_(free, free)] = np.linalg.pinv(jac.T @ jac) * s2
    rms = float(np.sqrt(np.mean(sol.fun**2)))
    return Calibration(job_class, types, log_times, cov, fitted, len(fit_set), rms, prof.fingerprint())


# ----------------------------------------------------------------------------- prediction


@dataclass
class Prediction:
    efficiency: float
    efficiency_sd: float
    mean_wall_seconds: float
    jobs_per_node_hour: float | None
    jobs: int
    extrapolated: bool  # uses a parameter the data did not determine


def predict(cal: Calibration, prof: JobProfiles, scenario: Scenario | None = None) -> Prediction:
    """Efficiency (Σcpu / Σ core-wall) of ``prof``'s jobs under ``scenario``, with its uncertainty.

    The uncertainty combines the fit's parameter uncertainty (delta method) with the model's
    structural error, the leave-one-out error of :func:`validate`, when it is known.
    """
    sc = scenario or Scenario()
    wall = predict_wall(cal.log_times, cal.storage_types, prof, sc)
    eff = efficiency_of(prof, wall)
    grad = np.zeros(len(cal.log_times))
    step = 1e-4
    for i in np.flatnonzero(np.diag(cal.covariance) > 0):
        lt = cal.log_times.copy()
        lt[i] += step
        grad[i] = (efficiency_of(prof, predict_wall(lt, cal.storage_types, prof, sc)) - eff) / step
    param_var = float(grad @ cal.covariance @ grad)
    sd = float(np.sqrt(param_var + (cal.structural_error or 0.0) ** 2))
    used = _used_parameters(cal, prof, sc)
    per_node = None
    if sc.jobs_per_node is not None:
        per_node = float(sc.jobs_per_node * 3600.0 / np.mean(wall * prof.cores))
    return Prediction(eff, sd, float(np.mean(wall)), per_node, len(prof), bool((used & ~cal.determined).any()))


def _used_parameters(cal: Calibration, prof: JobProfiles, sc: Scenario) -> np.ndarray:
    nt = cal.n_types
    used = np.zeros(len(cal.log_times), bool)
    types = [sc.storage_type] if sc.storage_type else sorted(set(prof.storage_type))
    for s in types:
        i = cal.storage_types.index(s)
        used[i] = used[nt + i] = True
    remote = sc.remote if sc.remote is not None else prof.remote
    used[2 * nt :] = (remote > 0).any(axis=1)
    return used


# ----------------------------------------------------------------------------- validation


@dataclass
class HeldOut:
    storage_type: str
    arm: str
    jobs: int
    measured: float
    predicted: float
    extrapolated: bool

    @property
    def error(self) -> float:
        return self.predicted - self.measured


def cells(prof: JobProfiles) -> list[tuple[str, str]]:
    """The measured configurations: storage type x A/B arm."""
    return sorted(set(zip(prof.storage_type.tolist(), prof.arm.tolist())))


def validate(
    prof: JobProfiles, job_class: str, min_jobs: int = MIN_JOBS, max_jobs: int | None = DEFAULT_FIT_JOBS, seed: int = 0
) -> list[HeldOut]:
    """Leave one configuration out: fit on all the others, predict the one left out."""
    types = tuple(sorted(set(prof.storage_type)))
    out: list[HeldOut] = []
    for st, arm in cells(prof):
        held = (prof.storage_type == st) & (prof.arm == arm)
        if held.sum() < min_jobs:
            continue
        cal = calibrate(prof.take(~held), job_class, types, max_jobs, seed)
        test = prof.take(held)
        wall = predict_wall(cal.log_times, types, test)
        out.append(
            HeldOut(
                st,
                arm,
                int(held.sum()),
                test.efficiency,
                efficiency_of(test, wall),
                bool((_used_parameters(cal, test, Scenario()) & ~cal.fitted).any()),
            )
        )
    return out


def structural_error(held: list[HeldOut]) -> float | None:
    ok = [h.error for h in held if not h.extrapolated]
    return float(np.sqrt(np.mean(np.square(ok)))) if ok else None


def with_derived_types(
    cal: Calibration, times: dict[str, tuple[float, float]], evidence: dict[str, str]
) -> Calibration:
    """``cal`` with read and write times (s/GB) set for storage types by the device layer: types
    not in its layout are added; the times are marked derived (not fitted) and carry no fit
    covariance (their error is the leave-one-type-out error, applied by the caller)."""
    types = tuple(cal.storage_types) + tuple(t for t in times if t not in cal.storage_types)
    nt_old, nt = cal.n_types, len(types)
    pos = np.concatenate([np.arange(nt_old), nt + np.arange(nt_old), 2 * nt + np.arange(len(ROUTES))])
    size = 2 * nt + len(ROUTES)
    log_times = np.full(size, np.log(5.0))
    log_times[pos] = cal.log_times
    cov = np.zeros((size, size))
    cov[np.ix_(pos, pos)] = cal.covariance
    fitted = np.zeros(size, bool)
    fitted[pos] = cal.fitted
    derived = np.zeros(size, bool)
    if cal.derived is not None:
        derived[pos] = cal.derived
    for st, (read, write) in times.items():
        i = types.index(st)
        log_times[i], log_times[nt + i] = np.log(read), np.log(write)
        fitted[i] = fitted[nt + i] = False
        derived[i] = derived[nt + i] = True
        cov[[i, nt + i], :] = 0.0
        cov[:, [i, nt + i]] = 0.0
    ev = {st: cal.type_evidence(st) for st in cal.storage_types} | dict(evidence)
    return Calibration(
        cal.job_class,
        types,
        log_times,
        cov,
        fitted,
        cal.jobs,
        cal.rms_error,
        cal.fingerprint,
        cal.structural_error,
        derived,
        ev,
    )
