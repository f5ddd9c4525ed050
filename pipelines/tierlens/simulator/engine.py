"""Run a cache policy over a :class:`~tierlens.simulator.trace.Trace` and summarise it."""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa

from . import kernels
from .trace import Trace, next_access

#: The SLAC SSD box: two 10 Gbit/s NICs delivering up to 2.5 GB/s (9000 GB/hour).
SLAC_NIC_BYTES_PER_S = 2.5e9


@dataclass(frozen=True)
class CacheParams:
    """Everything that defines a run besides the trace (the run id hashes these)."""

    policy: str
    capacity_bytes: int
    min_reads: int = 5  # SLAC 1-3: accesses in the window before a file is a candidate
    stage_cap_pct: float = 2.0  # SLAC 1-3: stage-in cap, % of capacity per clock hour
    window_days: float = 5.0  # SLAC 2-3: history window
    period_hours: float = 12.0  # SLAC 1: period length
    n_periods: int = 10  # SLAC 1: periods in the table
    upcoming_minutes: float = 20.0  # SLAC 3: refresh of the upcoming jobs' inputs
    assumed_read_frac: float = 0.1  # SLAC 3: read fraction for files without history
    s3fifo_small_ratio: float = 0.1
    whole_object: bool = False  # every access reads its whole file (libCacheSim semantics)
    nic_bytes_per_s: float = SLAC_NIC_BYTES_PER_S

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; one of {', '.join(POLICIES)}")
        if self.capacity_bytes <= 0:
            raise ValueError("capacity must be positive")


@dataclass
class CacheResult:
    params: CacheParams
    requests: int
    objects: int
    hits: int
    bytes_requested: int
    bytes_from_cache: int
    bytes_staged: int
    t0: float
    hourly: pa.Table
    elapsed_s: float
    trace_source: str = ""
    trace_fingerprint: str = ""
    extra: dict = field(default_factory=dict)
    request_hit: np.ndarray | None = None  # per request, 1 = hit (simulate(..., per_request=True))

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.requests if self.requests else 0.0

    @property
    def byte_hit_ratio(self) -> float:
        return self.bytes_from_cache / self.bytes_requested if self.bytes_requested else 0.0

    @property
    def days(self) -> float:
        return max(self.hourly.num_rows, 1) / 24.0

    @property
    def ssd_writes_per_day(self) -> float:
        return self.bytes_staged / self.days

    def summary(self) -> dict:
        d = {
            "policy": self.params.policy,
            "capacity_bytes": self.params.capacity_bytes,
            "requests": self.requests,
            "objects": self.objects,
            "hits": self.hits,
            "hit_ratio": self.hit_ratio,
            "bytes_requested": self.bytes_requested,
            "bytes_from_cache": self.bytes_from_cache,
            "byte_hit_ratio": self.byte_hit_ratio,
            "bytes_staged": self.bytes_staged,
            "ssd_writes_per_day_bytes": self.ssd_writes_per_day,
            "elapsed_s": self.elapsed_s,
        }
        d.update(self.extra)
        return d


def object_sizes(trace: Trace) -> np.ndarray:
    osize = np.zeros(max(trace.n_objects, 1), np.int64)
    np.maximum.at(osize, trace.obj, trace.size)
    return osize


def hours(trace: Trace) -> tuple[float, np.ndarray, int]:
    """Hour-aligned start, each request's hour index (int32) and the number of hours."""
    if len(trace) == 0:
        return 0.0, np.zeros(0, np.int32), 1
    t0 = math.floor(float(trace.time[0]) / 3600.0) * 3600.0
    hr = ((trace.time - t0) // 3600.0).astype(np.int32)
    return t0, hr, int(hr[-1]) + 1


def upcoming(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Requests ordered by the start of the job that made them (SLAC-3's "upcoming jobs").

    A job's start is its first file access in the trace; an access without a job identity is its
    own job. Returns (request indices, job start times), sorted by start.
    """
    start = trace.time.copy()
    has_job = trace.job >= 0
    if has_job.any():
        js = np.full(int(trace.job.max()) + 1, np.inf)
        np.minimum.at(js, trace.job[has_job], trace.time[has_job])
        start[has_job] = js[trace.job[has_job]]
    order = np.argsort(start, kind="stable").astype(np.int64)
    return order, start[order]


@dataclass(frozen=True)
class _Replay:
    """What every policy's kernel is given: the trace, in the dense arrays the kernels take."""

    trace: Trace
    osize: np.ndarray
    hr: np.ndarray
    n_hours: int
    t0: float
    cap: np.int64
    params: CacheParams
    req_hit: np.ndarray

    @property
    def common(self) -> tuple:
        """The leading arguments of the online policies' kernels."""
        return self.trace.obj, self.osize, self.trace.read, self.hr, self.n_hours, self.cap


def _recency(r: _Replay, move_on_hit: bool) -> np.ndarray:
    return kernels.lru_kernel(*r.common, move_on_hit, r.req_hit)


def _lfu(r: _Replay) -> np.ndarray:
    return kernels.lfu_kernel(*r.common, r.req_hit)


def _belady(r: _Replay) -> np.ndarray:
    return kernels.belady_kernel(*r.common, next_access(r.trace.obj), r.req_hit)


def _s3fifo(r: _Replay) -> np.ndarray:
    return kernels.s3fifo_kernel(*r.common, r.params.s3fifo_small_ratio, r.req_hit)


def _slac(r: _Replay, algo: int, looks_ahead: bool) -> np.ndarray:
    """SLAC algorithm ``algo`` (1, 2 or 3 as in the paper); the look-ahead one ticks every
    ``upcoming_minutes`` and is told which files the jobs about to start will read."""
    p, tr = r.params, r.trace
    tick = p.upcoming_minutes * 60.0 if looks_ahead else 3600.0
    if 3600.0 % tick:
        raise ValueError("upcoming_minutes must divide an hour")
    if looks_ahead:
        up_order, up_start = upcoming(tr)
    else:
        up_order, up_start = np.zeros(0, np.int64), np.zeros(0, np.float64)
    trace = kernels.SlacTrace(tr.time, tr.obj, r.osize, tr.read, r.hr, r.n_hours, r.t0, up_order, up_start)
    policy = kernels.SlacPolicy(
        r.cap,
        algo,
        p.min_reads,
        p.stage_cap_pct / 100.0,
        p.window_days * 86400.0,
        p.period_hours * 3600.0,
        p.n_periods,
        tick,
        p.assumed_read_frac,
    )
    return kernels.slac_kernel(trace, policy, r.req_hit)


#: Every policy by the name users give it, and how its replay runs.
_REPLAYS: dict[str, Callable[[_Replay], np.ndarray]] = {
    "lru": partial(_recency, move_on_hit=True),
    "fifo": partial(_recency, move_on_hit=False),
    "lfu": _lfu,
    "s3fifo": _s3fifo,
    "belady": _belady,
    "slac1": partial(_slac, algo=1, looks_ahead=False),
    "slac2": partial(_slac, algo=2, looks_ahead=False),
    "slac3": partial(_slac, algo=3, looks_ahead=True),
}
POLICIES = tuple(_REPLAYS)


def simulate(trace: Trace, params: CacheParams, per_request: bool = False) -> CacheResult:
    """Replay ``trace`` through the cache ``params`` describe.

    With ``per_request`` the result's ``request_hit`` holds one flag per request (1 = hit), in
    trace order, so callers can say where each job's bytes came from.
    """
    if params.whole_object and not trace.info.get("whole_object"):
        trace = trace.whole_object()
    osize = object_sizes(trace)
    t0, hr, n_hours = hours(trace)
    cap = np.int64(params.capacity_bytes)
    req_hit = np.zeros(len(trace) if per_request else 0, np.int8)
    begin = _time.perf_counter()
    if len(trace) == 0:
        out = np.zeros((3, 1), np.int64)
    else:
        out = _REPLAYS[params.policy](_Replay(trace, osize, hr, n_hours, t0, cap, params, req_hit))
    elapsed = _time.perf_counter() - begin
    req = np.bincount(hr, minlength=n_hours).astype(np.int64)
    breq = np.bincount(hr, weights=trace.read, minlength=n_hours)
    # weights go through float64: recompute exactly with an int64 accumulation
    breq = np.zeros(n_hours, np.int64)
    np.add.at(breq, hr, trace.read)
    hour_start = (t0 + 3600.0 * np.arange(n_hours)) * 1e6
    hourly = pa.table(
        {
            "hour_start": pa.array(hour_start.astype(np.int64), pa.timestamp("us", tz="UTC")),
            "requests": req,
            "hits": out[0],
            "bytes_requested": breq,
            "bytes_from_cache": out[1],
            "bytes_staged": out[2],
            "nic_utilisation": out[1] / (params.nic_bytes_per_s * 3600.0),
        }
    )
    return CacheResult(
        params,
        len(trace),
        trace.n_objects,
        int(out[0].sum()),
        int(trace.read.sum()),
        int(out[1].sum()),
        int(out[2].sum()),
        t0,
        hourly,
        elapsed,
        trace.source,
        trace.fingerprint(),
        request_hit=req_hit if per_request else None,
    )


def log_sizes(lo: int, hi: int, n: int = 100) -> np.ndarray:
    """``n`` cache sizes spaced evenly in log between lo and hi bytes (int64, ascending, unique)."""
    return np.unique(np.geomspace(max(lo, 1), max(hi, lo + 1), n).astype(np.int64))


def mrc(trace: Trace, sizes: np.ndarray, whole_object: bool = False) -> pa.Table:
    """LRU hit and byte-hit counts for every size in ``sizes``, from one pass of stack distances.

    Equal to ``simulate(lru)`` at every size at least as large as the largest file (a file
    larger than the cache is never admitted by the simulator but still sits at the top of the
    LRU stack here, so below that the curve is an approximation).
    """
    if whole_object and not trace.info.get("whole_object"):
        trace = trace.whole_object()
    sizes = np.ascontiguousarray(np.sort(np.asarray(sizes, np.int64)))
    hits, hbytes = kernels.mrc_kernel(trace.obj, object_sizes(trace), trace.read, sizes)
    n = len(trace)
    breq = int(trace.read.sum())
    return pa.table(
        {
            "cache_bytes": sizes,
            "requests": np.full(len(sizes), n, np.int64),
            "hits": hits,
            "hit_ratio": hits / n if n else np.zeros(len(sizes)),
            "bytes_requested": np.full(len(sizes), breq, np.int64),
            "bytes_from_cache": hbytes,
            "byte_hit_ratio": hbytes / breq if breq else np.zeros(len(sizes)),
        }
    )
