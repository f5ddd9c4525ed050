"""Sustained writes: write past a device's fast-write region until the rate settles, or until the
admin's budget runs out, and say which.

Consumer flash writes at its datasheet rate only until a fast region (an SLC buffer, or the erased
spare blocks of a drive that is never trimmed) is full; after it, at a steady rate that can be a
tenth of the datasheet's. A node of jobs staging in writes tens of GB an hour, so the steady rate
is the one its jobs see; a probe shorter than the fast region measures the wrong device.

The probe writes with every job slot at once (8 MiB blocks, as stage-in copies write) and records
the rate per window of bytes. From that series (:func:`analyse`):

* the **burst** rate: the first windows' rate, and how many bytes went at it before the rate fell
  below :data:`CLIFF_FRACTION` of it (all bytes written, if it never fell);
* the **steady** rate: the rate over the last half of the bytes written, once that half is stable
  (no window further than :data:`STABLE_BAND` from its mean) and at least ``min_bytes`` were
  written. If the budget (bytes or seconds) ends first, the last half's rate is reported as
  ``sustained_write_budget``: an upper bound, the device may fall further.

Then, still writing, one process reads at random (128 KiB) for a while: ``read_under_write`` is
the read rate a job sees while the node stages in past the cache.

Records (device_probe rows, job names part of the contract the device layer reads):
``sustained_write_burst`` (bandwidth = burst rate, seconds = time at it), ``sustained_write`` or
``sustained_write_budget`` (bandwidth = steady or last rate, seconds = the whole run),
``read_under_write``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A window's rate below this fraction of the burst rate marks the end of the fast region.
CLIFF_FRACTION = 0.85
#: The last half of the bytes is steady when every window's rate is within this band of their mean.
STABLE_BAND = 0.10
#: Windows the burst rate is taken over.
BURST_WINDOWS = 3
MIB = 1024 * 1024
BLOCK_BYTES = 8 * MIB

SUSTAINED_JOBS = ("sustained_write_burst", "sustained_write", "sustained_write_budget", "read_under_write")


@dataclass(frozen=True)
class Budget:
    """What the admin allows the sustained write to cost: bytes written and seconds, whichever
    comes first; ``min_bytes``: written before a stable rate may count as steady (a fast region
    can be stable for many GB: set it above the largest buffer the device could have)."""

    max_bytes: float = 64e9
    max_seconds: float = 900.0
    min_bytes: float = 16e9
    window_bytes: float = 1e9


@dataclass(frozen=True)
class Sustained:
    burst_rate: float  # bytes/s over the first windows
    burst_bytes: float  # written before the rate fell below CLIFF_FRACTION of it
    steady_rate: float  # bytes/s over the last half of the bytes written
    steady: bool  # True: the rate settled; False: the budget ran out first
    bytes_written: float
    seconds: float

    @property
    def burst_seconds(self) -> float:
        return self.burst_bytes / self.burst_rate if self.burst_rate > 0 else 0.0


def analyse(window_bytes: np.ndarray, window_seconds: np.ndarray, min_bytes: float) -> Sustained:
    """Burst, cliff and steady state from a series of windows (bytes and seconds each)."""
    b = np.asarray(window_bytes, float)
    s = np.asarray(window_seconds, float)
    if len(b) == 0 or (s <= 0).any():
        raise ValueError("a sustained-write series needs at least one window, each with a positive duration")
    rates = b / s
    k = min(BURST_WINDOWS, len(b))
    burst = float(b[:k].sum() / s[:k].sum())
    fell = np.flatnonzero(rates < CLIFF_FRACTION * burst)
    burst_bytes = float(b[: fell[0]].sum()) if len(fell) else float(b.sum())
    steady, last = is_steady(b, s, min_bytes)
    return Sustained(burst, burst_bytes, last, steady, float(b.sum()), float(s.sum()))


def is_steady(b: np.ndarray, s: np.ndarray, min_bytes: float) -> tuple[bool, float]:
    """(stable?, rate over the last half of the bytes)."""
    total = b.sum()
    before = np.cumsum(b) - b  # bytes written before each window
    start = int(np.argmax(before >= total / 2)) if (before >= total / 2).any() else len(b) - 1
    start = max(min(start, len(b) - 2), 0)  # two windows at least, when there are two
    half = np.arange(len(b)) >= start
    rate = float(b[half].sum() / s[half].sum())
    rates = b[half] / s[half]
    stable = bool(len(rates) >= 2 and np.all(np.abs(rates / rate - 1) <= STABLE_BAND))
    return stable and total >= min_bytes, rate


def rows(result: Sustained, read: dict | None, slots: int) -> list[dict]:
    """device_probe fields (job, pattern, figures) for a sustained-write result."""
    base = {"rw": "write", "block_size_bytes": BLOCK_BYTES, "queue_depth": 1, "processes": max(slots, 1)}
    out = [
        dict(
            base,
            job_name="sustained_write_burst",
            seconds=result.burst_seconds,
            bandwidth_bytes_per_second=result.burst_rate,
            iops=result.burst_rate / BLOCK_BYTES,
            mean_latency_seconds=max(slots, 1) * BLOCK_BYTES / result.burst_rate,
            p99_latency_seconds=None,
        ),
        dict(
            base,
            job_name="sustained_write" if result.steady else "sustained_write_budget",
            seconds=result.seconds,
            bandwidth_bytes_per_second=result.steady_rate,
            iops=result.steady_rate / BLOCK_BYTES,
            mean_latency_seconds=max(slots, 1) * BLOCK_BYTES / result.steady_rate,
            p99_latency_seconds=None,
        ),
    ]
    if read is not None:
        out.append(dict(read, job_name="read_under_write", rw="randread", queue_depth=1, processes=1))
    return out
