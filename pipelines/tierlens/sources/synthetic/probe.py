"""The probe job set against the demo generator's discrete-event device model (``--synthetic``).

Each process of a job issues its requests back to back through the generator's own
``model.Scratch`` (the queues its jobs use), so a probe of the synthetic site measures the same
devices its accounting came from. A random read pays one access per request; a sequential read
pays the generator's streaming seeks (one per ``STREAM_BYTES_PER_SEEK``); a write is one write
call per block, as the generator charges its stage-in pieces. Time is simulated: nothing waits.
The sustained-write jobs (probe/sustained.py) write with every slot until the rate settles or the
budget ends, so a device with a write cliff (``ssd_consumer``) shows it.

The reads under throttled writes (probe/under_write.py) queue one reader per slot and one writer
on the same device queues: the writer issues 8 MiB writes on fio's ``rate=`` schedule (never before
its previous write is done), so a read that arrives behind a write waits for it as the queue says.
The generator has no page cache: its jobs' requests reach the device as issued, so the
``buffered`` and ``direct`` points are the same simulation, recorded under both names (the
``direct_io`` field says which row is which) so that a model reading either mode finds it.
"""

from __future__ import annotations

import heapq
import uuid
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from ...probe import under_write as uw
from ...probe.jobs import JOBS, ProbeJob
from ...probe.sustained import BLOCK_BYTES, Budget, Sustained, analyse, rows as sustained_rows
from ...records import DEVICE_PROBE
from .model import STREAM_BYTES_PER_SEEK, Scratch
from .site import PROBE_ONLY, SCRATCH, ScratchConfig

#: Simulated seconds per job and the most requests one process issues (bounds the cost on fast devices).
SIM_SECONDS = 20.0
MAX_REQUESTS_PER_PROCESS = 4000
READ_BYTES = 128 * 1024


def run_job(cfg: ScratchConfig, job: ProbeJob, slots: int, seconds: float = SIM_SECONDS) -> dict:
    scratch = Scratch(cfg)
    procs = job.processes(slots)
    seeks = 1.0 if job.rw == "randread" else job.block_size / STREAM_BYTES_PER_SEEK
    ready = [(0.0, p) for p in range(procs)]
    heapq.heapify(ready)
    issued = np.zeros(procs, np.int64)
    latencies: list[float] = []
    end = 0.0
    while ready:
        t, p = heapq.heappop(ready)
        if t >= seconds or issued[p] >= MAX_REQUESTS_PER_PROCESS:
            end = max(end, t)
            continue
        done = scratch.write(t, job.block_size) if job.rw == "write" else scratch.read(t, job.block_size, seeks)
        latencies.append(done - t)
        issued[p] += 1
        heapq.heappush(ready, (done, p))
    lat = np.asarray(latencies)
    n = len(lat)
    return {
        "bandwidth_bytes_per_second": n * job.block_size / end,
        "iops": n / end,
        **distribution(lat),
        "seconds": float(end),
    }


def distribution(lat: np.ndarray) -> dict:
    """The latency fields of a device_probe row from every request's latency."""
    return {
        "mean_latency_seconds": float(lat.mean()),
        "p50_latency_seconds": float(np.quantile(lat, 0.5)),
        "p99_latency_seconds": float(np.quantile(lat, 0.99)),
        "p999_latency_seconds": float(np.quantile(lat, 0.999)),
        "max_latency_seconds": float(lat.max()),
    }


def run_under_write(
    cfg: ScratchConfig, slots: int, utilisation: float, write_bandwidth: float, seconds: float = SIM_SECONDS
) -> dict:
    """One reader per slot (128 KiB random reads back to back) while one writer streams 8 MiB
    blocks throttled to ``utilisation`` x ``write_bandwidth``, all on one fresh copy of the
    generator's device queues, requests issued in time order."""
    scratch = Scratch(cfg)
    readers = max(slots, 1)
    rate = utilisation * write_bandwidth
    # (issue time, process); process -1 is the writer
    ready = [(0.0, p) for p in range(readers)] + ([(0.0, -1)] if rate > 0 else [])
    heapq.heapify(ready)
    issued = np.zeros(readers, np.int64)
    latencies: list[float] = []
    writes, end = 0, 0.0
    while ready:
        t, p = heapq.heappop(ready)
        if p < 0:
            if t >= seconds or not any(issued < MAX_REQUESTS_PER_PROCESS):
                continue  # readers are done: so is the writer
            done = scratch.write(t, uw.WRITE_BYTES)
            writes += 1
            # fio's rate=: the k-th block is not issued before k x block / rate, nor before the last is done
            heapq.heappush(ready, (max(done, writes * uw.WRITE_BYTES / rate), p))
            continue
        if t >= seconds or issued[p] >= MAX_REQUESTS_PER_PROCESS:
            end = max(end, t)
            continue
        done = scratch.read(t, uw.READ_BYTES, 1.0)
        latencies.append(done - t)
        issued[p] += 1
        heapq.heappush(ready, (done, p))
    lat = np.asarray(latencies)
    return {
        "bandwidth_bytes_per_second": len(lat) * uw.READ_BYTES / end,
        "iops": len(lat) / end,
        **distribution(lat),
        "seconds": float(end),
        "write_utilisation_target": utilisation,
        "write_utilisation": writes * uw.WRITE_BYTES / end / write_bandwidth,
    }


def run_synthetic_probe(
    storage_type: str,
    slots: int = 8,
    node: str | None = None,
    scratch: dict[str, ScratchConfig] | None = None,
    budget: Budget | None = None,
    sustained: bool = False,
    under_write: tuple[float, ...] = uw.UTILISATIONS,
) -> pa.Table:
    """The probe job set against the generator's device ``storage_type`` (a key of SCRATCH or
    PROBE_ONLY; the records carry the device's storage type), plus the sustained-write jobs
    (probe/sustained.py) when ``sustained``, and the reads under throttled writes at each of
    ``under_write`` (fractions of the stage-in write bandwidth; empty: none)."""
    configs = scratch or {**SCRATCH, **PROBE_ONLY}
    if storage_type not in configs:
        raise ValueError(f"the synthetic site has no {storage_type!r} device; it has {', '.join(sorted(configs))}")
    cfg = configs[storage_type]
    probe_id = uuid.uuid4().hex[:16]
    started = datetime.now(timezone.utc)
    common = {
        "probe_id": probe_id,
        "node": node or f"synthetic:{storage_type}",
        "path": None,
        "storage_type": cfg.storage_type,
        "device_models": cfg.device_models,
        "tool": "synthetic",
        "tool_version": "tierlens-des-2",
        "direct_io": True,
        "probed_at": started,
    }
    rows = [
        {
            **common,
            "job_name": job.name,
            "rw": job.rw,
            "block_size_bytes": job.block_size,
            "queue_depth": 1,
            "processes": job.processes(slots),
            **run_job(cfg, job, slots),
        }
        for job in JOBS
    ]
    stagein = next(r for r in rows if r["job_name"] == "stagein_write")["bandwidth_bytes_per_second"]
    figures = {u: run_under_write(cfg, slots, u, stagein) for u in sorted(set(under_write))}
    for mode in uw.MODES:  # in the order fio's probe runs them (probe/under_write.py jobs)
        for u in figures:
            job = uw.UnderWriteJob(mode, u)
            rows.append(
                {
                    **common,
                    "job_name": job.name,
                    "rw": "randread",
                    "block_size_bytes": uw.READ_BYTES,
                    "queue_depth": 1,
                    "processes": max(slots, 1),
                    **figures[u],
                    "direct_io": mode == "direct",
                }
            )
    if sustained:
        result, read = run_sustained(cfg, slots, budget)
        rows += [{**common, **r} for r in sustained_rows(result, read, slots)]
    return pa.Table.from_pylist(rows, schema=DEVICE_PROBE)


# ----------------------------------------------------------------------------- sustained writes


def run_sustained(
    cfg: ScratchConfig, slots: int, budget: Budget | None = None, read_requests: int = 400
) -> tuple[Sustained, dict]:
    """Write with every slot past the device's fast region (probe/sustained.py's rules), then read
    at random with one process while the others keep writing."""
    budget = budget or Budget()
    scratch = Scratch(cfg)
    writers = max(slots, 1)
    ready = [(0.0, p) for p in range(writers)]
    heapq.heapify(ready)
    wins_b: list[float] = []
    wins_s: list[float] = []
    written, win_start, win_bytes, now = 0.0, 0.0, 0.0, 0.0
    result = None
    while True:
        t, p = heapq.heappop(ready)
        done = scratch.write(t, BLOCK_BYTES)
        heapq.heappush(ready, (done, p))
        written += BLOCK_BYTES
        win_bytes += BLOCK_BYTES
        now = max(now, done)
        if win_bytes >= budget.window_bytes:
            wins_b.append(win_bytes)
            wins_s.append(max(now - win_start, 1e-9))
            win_start, win_bytes = now, 0.0
            result = analyse(np.array(wins_b), np.array(wins_s), budget.min_bytes)
            if result.steady or written >= budget.max_bytes or now >= budget.max_seconds:
                break
    # one process reads at random while the other slots keep writing
    reader_t = now
    lat: list[float] = []
    heap = [(max(t, now), p) for t, p in ready][: max(writers - 1, 1)]
    heapq.heapify(heap)
    while len(lat) < read_requests:
        if heap and heap[0][0] < reader_t:
            t, p = heapq.heappop(heap)
            heapq.heappush(heap, (scratch.write(t, BLOCK_BYTES), p))
            continue
        done = scratch.read(reader_t, READ_BYTES, 1.0)
        lat.append(done - reader_t)
        reader_t = done
    elapsed = reader_t - now
    arr = np.asarray(lat)
    read = {
        "block_size_bytes": READ_BYTES,
        "seconds": float(elapsed),
        "bandwidth_bytes_per_second": len(arr) * READ_BYTES / elapsed,
        "iops": len(arr) / elapsed,
        "mean_latency_seconds": float(arr.mean()),
        "p99_latency_seconds": float(np.quantile(arr, 0.99)),
    }
    return result, read
