"""The fixed probe job set: what a grid job does to its scratch, in a few short fio jobs.

* ``stagein_write``: sequential writes of 8 MiB (xrdcp's block size), as a stage-in copy writes
  its input file to scratch;
* ``seq_read``: sequential 1 MiB reads (a job streaming a staged file);
* ``rand_read_128k`` and ``rand_read_1m``: random reads at the two ends of the request sizes ROOT
  basket and vector reads make (128 KiB to 1 MiB); the pair separates a device's per-request
  access time from its transfer rate;
* each at queue depth 1 in one process (one job alone), and the ``_node`` variants with one
  process per job slot of a full node, where the device's parallel channels (RAID1 mirrors,
  flash queues) show up.

The set is part of the ``device_probe`` contract: the device layer reads these names.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class ProbeJob:
    name: str
    rw: str  # fio rw=: write, read, randread
    block_size: int  # bytes
    full_node: bool  # one process per job slot, else one process

    def processes(self, slots: int) -> int:
        return max(slots, 1) if self.full_node else 1


JOBS: tuple[ProbeJob, ...] = (
    ProbeJob("stagein_write", "write", 8 * MIB, False),
    ProbeJob("stagein_write_node", "write", 8 * MIB, True),
    ProbeJob("seq_read", "read", MIB, False),
    ProbeJob("seq_read_node", "read", MIB, True),
    ProbeJob("rand_read_128k", "randread", 128 * KIB, False),
    ProbeJob("rand_read_128k_node", "randread", 128 * KIB, True),
    ProbeJob("rand_read_1m", "randread", MIB, False),
)


def run_fio(args: list[str], what: str, where: Path, timeout: float) -> str:
    """Run fio and return its JSON output; a failure names ``what`` ran (e.g. 'job randread_4k'),
    the folder it ran in and the end of what fio said."""
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"fio {what} in {where} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return out.stdout


def parse_fio(text: str, job: ProbeJob) -> dict:
    """Bandwidth, IOPS and latencies of one fio job from its JSON output (group reported)."""
    report = json.loads(text)
    (res,) = [j for j in report["jobs"] if j["jobname"] == job.name]
    side = res["write" if job.rw == "write" else "read"]
    pct = side.get("clat_ns", {}).get("percentile", {})
    top = side["lat_ns"].get("max")

    def seconds(ns) -> float | None:
        # fio reports a percentile as its histogram bin's value (within about 1.6 %), which can
        # pass the exact maximum: no percentile is above the longest request seen
        if ns is None:
            return None
        return float(min(ns, top) if top else ns) / 1e9

    return {
        "bandwidth_bytes_per_second": float(side["bw_bytes"]),
        "iops": float(side["iops"]),
        "mean_latency_seconds": float(side["lat_ns"]["mean"]) / 1e9,
        "p50_latency_seconds": seconds(pct.get("50.000000")),
        "p99_latency_seconds": seconds(pct.get("99.000000")),
        "p999_latency_seconds": seconds(pct.get("99.900000")),
        "max_latency_seconds": float(top) / 1e9 if top is not None else None,
    }
