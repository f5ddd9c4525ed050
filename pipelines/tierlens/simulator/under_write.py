"""What the probe measured of reads waiting behind writes: one point per write utilisation and mode.

The probe's ``read_under_write_<mode>_<pct>`` jobs (probe/under_write.py) read at random with
every job slot while a writer streams 8 MiB blocks throttled to a fraction of the device's
stage-in write bandwidth. Each becomes an :class:`UnderWrite`; :func:`extra_read_wait` turns the
points into what a read pays on average for the writes beside it, at any utilisation between 0 and
the highest one measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PREFIX = "read_under_write_"
MODES = ("buffered", "direct")


@dataclass(frozen=True)
class UnderWrite:
    """One measured point: readers' latencies with writes at ``write_utilisation``.

    ``write_utilisation``: what the writer achieved, as a fraction of the device's stage-in write
    bandwidth (the target where the probe did not measure it); ``mode``: ``buffered`` (through the
    page cache, as jobs read) or ``direct`` (O_DIRECT, the device's own queue); ``readers``: reading
    processes, one per job slot; latencies in seconds per read of ``read_block_bytes``."""

    write_utilisation: float
    mode: str
    readers: int
    read_block_bytes: int
    mean_seconds: float
    p50_seconds: float | None
    p99_seconds: float | None
    p999_seconds: float | None
    max_seconds: float | None
    write_utilisation_target: float | None = None


def under_write_from_probe(rows: list[dict]) -> tuple[UnderWrite, ...] | None:
    """The under-write points of one probe run's device_probe rows, by mode then utilisation;
    None when the probe did not run those jobs (probes before them, ``--under-write none``).
    The sustained-write ``read_under_write`` job (no utilisation) is not one of them."""
    points = []
    for r in rows:
        name = r.get("job_name") or ""
        if not name.startswith(PREFIX) or r.get("write_utilisation_target") is None:
            continue
        mode = "direct" if r.get("direct_io") else "buffered"
        measured = r.get("write_utilisation")
        points.append(
            UnderWrite(
                float(measured if measured is not None else r["write_utilisation_target"]),
                mode,
                int(r.get("processes") or 1),
                int(r["block_size_bytes"]),
                float(r["mean_latency_seconds"]),
                r.get("p50_latency_seconds"),
                r.get("p99_latency_seconds"),
                r.get("p999_latency_seconds"),
                r.get("max_latency_seconds"),
                float(r["write_utilisation_target"]),
            )
        )
    if not points:
        return None
    return tuple(sorted(points, key=lambda p: (MODES.index(p.mode), p.write_utilisation)))


def extra_read_wait(
    points: tuple[UnderWrite, ...] | list[UnderWrite], write_utilisation: float, mode: str = "buffered"
) -> float:
    """Seconds a read waits on average for the writes beside it at ``write_utilisation`` (a fraction
    of the device's stage-in write bandwidth): the mean read latency there minus the latency with
    no writes, interpolated linearly between the measured points of ``mode``.

    Not extrapolated: beyond the highest utilisation measured the wait stays at that point's (an
    underestimate where the device is pushed harder; the probe's ``--under-write`` throttles reach
    further), and below the lowest it is that point's. Measurement noise can put a loaded point
    under the unloaded one; the wait is then 0, never negative."""
    pts = sorted((p for p in points if p.mode == mode), key=lambda p: p.write_utilisation)
    if not pts:
        raise ValueError(f"no {mode} under-write points (have {', '.join(sorted({p.mode for p in points})) or 'none'})")
    # the baseline is the point run without writers; without one, the lowest utilisation measured
    base = [p for p in pts if p.write_utilisation_target == 0.0 or p.write_utilisation == 0.0]
    u = np.array([p.write_utilisation for p in pts])
    mean = np.array([p.mean_seconds for p in pts])
    at = float(np.interp(write_utilisation, u, mean))  # holds the end values outside [u0, u_last]
    zero = base[0].mean_seconds if base else float(mean[0])
    return max(at - zero, 0.0)


#: Highest write utilisation a capacity share is computed at (1 / (1 - u) grows without bound).
MAX_SHARED_UTILISATION = 0.95


def starved_read_wait(
    points: tuple[UnderWrite, ...] | list[UnderWrite], write_utilisation: float, mode: str = "buffered"
) -> float:
    """Seconds a read waits beyond its share of the device's time at ``write_utilisation``: the
    mean read latency measured there minus the latency without writes scaled by ``1 / (1 - u)``,
    never negative, interpolated between the measured points as :func:`extra_read_wait` is.

    Writes that take a fraction ``u`` of the device's time leave readers that keep it busy
    ``1 - u`` of it: that share the efficiency model's queueing core already charges (a job's writes
    are part of its demand at the device). What it cannot see is a kernel or a drive that serves
    reads worse than their share while writes are queued: writeback flushing the page cache in
    bursts, a drive stalling on its own garbage collection. That excess is what this returns; a
    device serving reads and writes first come first served, as the synthetic site's do, has none."""
    pts = sorted((p for p in points if p.mode == mode), key=lambda p: p.write_utilisation)
    if not pts:
        raise ValueError(f"no {mode} under-write points (have {', '.join(sorted({p.mode for p in points})) or 'none'})")
    base = [p for p in pts if p.write_utilisation_target == 0.0 or p.write_utilisation == 0.0]
    zero = base[0].mean_seconds if base else pts[0].mean_seconds
    u = np.array([p.write_utilisation for p in pts])
    share = zero / (1.0 - np.minimum(u, MAX_SHARED_UTILISATION))
    excess = np.maximum(np.array([p.mean_seconds for p in pts]) - share, 0.0)
    return float(np.interp(write_utilisation, u, excess))


#: The write load the buying guide shows read latency at: half the device's stage-in bandwidth,
#: a node staging in while its jobs read, well short of saturating the device.
GUIDE_UTILISATION = 0.5


def read_p99_at(
    points: tuple[UnderWrite, ...] | None, target: float = GUIDE_UTILISATION, mode: str = "buffered"
) -> float | None:
    """p99 read latency (seconds) of the point the probe ran at ``target`` in ``mode``; None when
    it ran none. A measured point, not an interpolation: the buying guide shows it as evidence."""
    for p in points or ():
        if (
            p.mode == mode
            and p.write_utilisation_target is not None
            and abs(p.write_utilisation_target - target) < 1e-9
        ):
            return p.p99_seconds
    return None
