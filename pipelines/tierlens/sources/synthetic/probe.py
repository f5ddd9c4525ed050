"""The probe job set against the demo generator's discrete-event device model (``--synthetic``).

Each process of a job issues its requests back to back through the generator's own
``model.Scratch`` (the queues its jobs use), so a probe of the synthetic site measures the same
devices its accounting came from. A random read pays one access per request; a sequential read
pays the generator's streaming seeks (one per ``STREAM_BYTES_PER_SEEK``); a write is one write
call per block, as the generator charges its stage-in pieces. Time is simulated: nothing waits.
"""

from __future__ import annotations

import heapq
import uuid
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from ...probe.jobs import JOBS, ProbeJob
from ...records import DEVICE_PROBE
from .model import STREAM_BYTES_PER_SEEK, Scratch
from .site import SCRATCH, ScratchConfig

#: Simulated seconds per job and the most requests one process issues (bounds the cost on fast devices).
SIM_SECONDS = 20.0
MAX_REQUESTS_PER_PROCESS = 4000


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
        done = (scratch.write(t, job.block_size) if job.rw == "write"
                else scratch.read(t, job.block_size, seeks))
        latencies.append(done - t)
        issued[p] += 1
        heapq.heappush(ready, (done, p))
    lat = np.asarray(latencies)
    n = len(lat)
    return {"bandwidth_bytes_per_second": n * job.block_size / end, "iops": n / end,
            "mean_latency_seconds": float(lat.mean()), "p99_latency_seconds": float(np.quantile(lat, 0.99)),
            "seconds": float(end)}


def run_synthetic_probe(storage_type: str, slots: int = 8, node: str | None = None,
                        scratch: dict[str, ScratchConfig] | None = None) -> pa.Table:
    configs = scratch or SCRATCH
    if storage_type not in configs:
        raise ValueError(f"the synthetic site has no {storage_type!r} device; it has {', '.join(sorted(configs))}")
    cfg = configs[storage_type]
    probe_id = uuid.uuid4().hex[:16]
    started = datetime.now(timezone.utc)
    rows = [{"probe_id": probe_id, "node": node or f"synthetic:{storage_type}", "path": None,
             "storage_type": storage_type, "device_models": cfg.device_models, "tool": "synthetic",
             "tool_version": "tierlens-des-1", "job_name": job.name, "rw": job.rw,
             "block_size_bytes": job.block_size, "queue_depth": 1, "processes": job.processes(slots),
             "direct_io": True, **run_job(cfg, job, slots), "probed_at": started} for job in JOBS]
    return pa.Table.from_pylist(rows, schema=DEVICE_PROBE)
