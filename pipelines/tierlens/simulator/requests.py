"""A node's scratch device with request classes: foreground reads waiting behind stage-in writes.

The mean-value core (efficiency.py) charges each job a wait proportional to its own demand at the
device. That cannot see what decides flash on a node of analysis jobs: a 0.1 ms read that arrives
while an 8 MiB stage-in write is being served waits for the rest of that write, tens to hundreds of
milliseconds. Here the device serves two classes of request, each with its own service-time
distribution (mean and second moment), and a read's wait is the M/G/1 residual-time wait of the
requests ahead of it:

    rho = lambda_r * S_r / c + lambda_w * S_w                (device utilisation, c read channels)
    R   = (lambda_r' * E[S_r^2] / c^2 + lambda_w * E[S_w^2]) / 2      (mean residual work found)
    W_r = R / (1 - rho)        first come first served (the drive serves what it was given)
    W_r = R / (1 - rho_r)      reads first (a scheduler that holds writes back)
    T_r = S_r + W_r

``lambda_r'`` counts the other jobs' reads only: a job waiting for its own read issues no other
(Schweitzer's correction, as the mean-value core makes it). Writes occupy every channel (mirrors
write everything); reads share the read channels.

A job's wall time per CPU second ``w`` then follows from how it stages its input:

* ``background`` (ATLAS FileStager): the next file is copied while the job reads the current one,
  so the writes never block the job, only its reads wait behind them:
  ``w = 1 + n_r * T_r``;
* ``blocking`` (copy, then run): the copy's network read and disk writes overlap each other, not
  the job: ``w = 1 + n_r * T_r + max(n_w * T_w, network)``.

The arrival rates depend on ``w`` (``lambda = jobs * n / w``), so ``w`` is the root of a monotone
equation, found by bisection; a device (or NIC) the node's demand saturates bounds ``w`` from
below. A read that finds a write in service is what makes the Intel X25-M lose to a RAID0 of two
disks in the Glasgow study, and what the probe's reads-under-write jobs measure on a real device.
The discrete-event node in ``sources/synthetic/node_queue.py`` queues the same requests one by one
without these formulas; ``tests/test_sim_requests.py`` holds the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .devices import GB, DeviceFigures

STAGE_MODES = ("background", "blocking")


@dataclass(frozen=True)
class ServiceTime:
    """One request class's service time: its mean (s) and second moment (s^2)."""

    mean: float
    second_moment: float

    @classmethod
    def of(cls, mean: float, cv: float) -> ServiceTime:
        return cls(mean, mean * mean * (1.0 + cv * cv))

    @property
    def cv(self) -> float:
        return float(np.sqrt(max(self.second_moment / (self.mean * self.mean) - 1.0, 0.0)))


@dataclass(frozen=True)
class DeviceClasses:
    """What one request of each class costs the device, after RAID composition."""

    read: ServiceTime  # one random read, on the channel that serves it
    write: ServiceTime  # one write unit, holding every channel
    read_channels: float = 1.0
    read_priority: bool = False
    label: str = ""


@dataclass(frozen=True)
class NodeLoad:
    """A node's jobs, per job and CPU second of its own work."""

    jobs: int
    reads_per_cpu_second: float
    write_units_per_cpu_second: float
    #: seconds the stage-in spends on the network per CPU second of the job (NIC shared by the node)
    network_seconds_per_cpu_second: float = 0.0
    stage_in: str = "background"

    def __post_init__(self) -> None:
        if self.stage_in not in STAGE_MODES:
            raise ValueError(f"stage_in must be one of {', '.join(STAGE_MODES)}, not {self.stage_in!r}")


@dataclass(frozen=True)
class NodeResult:
    efficiency: float  # per single-core job: CPU seconds over wall seconds
    wall_per_cpu_second: float
    read_response: float  # mean seconds a read costs its job, waiting included
    read_wait_behind_writes: float  # of which, per read, waiting behind writes
    utilisation: float
    write_utilisation: float
    bound: str  # "queue" (the equation's root), "device" or "network" (saturated)


def device_classes(
    fig: DeviceFigures,
    read_request_bytes: float,
    write_unit_bytes: float,
    read_cv: float,
    write_cv: float,
    read_priority: bool = False,
) -> DeviceClasses:
    """Request classes of a device whose figures (``fig``) are already composed and sustained.

    A read costs one access and its bytes at the read rate of the members it touches (the
    composition put that in ``read_bytes_per_second``); a write unit one access and its bytes at
    the write rate (striped arrays: every member its share, at once)."""
    read = fig.access_seconds + read_request_bytes / fig.read_bytes_per_second
    write = fig.access_seconds + write_unit_bytes / fig.write_bytes_per_second
    return DeviceClasses(
        ServiceTime.of(read, read_cv),
        ServiceTime.of(write, write_cv),
        max(fig.read_channels, 1.0),
        read_priority,
        fig.label,
    )


def _caught(busy_mean: float, busy_second_moment: float, read_rate: float) -> float:
    """E[(B - X)+]: what a computing job loses to a write busy period B that starts while it
    computes, X ~ Exp(read_rate) being the time until its next read. B is taken as gamma with
    the given two moments (its Laplace transform closes the expectation)."""
    var = busy_second_moment - busy_mean * busy_mean
    if var <= 1e-12 * busy_mean * busy_mean:
        laplace = float(np.exp(-read_rate * busy_mean))
    else:
        shape, scale = busy_mean * busy_mean / var, var / busy_mean
        laplace = float((1.0 + read_rate * scale) ** -shape)
    return busy_mean - (1.0 - laplace) / read_rate


def _waits(dev: DeviceClasses, load: NodeLoad, w: float) -> tuple[float, float, float, float, float]:
    """(wall seconds of read waiting per CPU second, write response, the part of the first caused
    by writes, utilisation, write utilisation) at wall ``w`` seconds per CPU second."""
    n, c = load.jobs, dev.read_channels
    n_r, n_w = load.reads_per_cpu_second, load.write_units_per_cpu_second
    lam_r = n * n_r / w
    lam_w = n * n_w / w
    own_reads = (n - 1) / n if n > 0 else 0.0
    rho_r = lam_r * own_reads * dev.read.mean / c
    rho_w = lam_w * dev.write.mean
    rho = rho_r + rho_w
    # reads behind reads: the M/G/1 residual of the other jobs' reads
    resid_r = lam_r * own_reads * dev.read.second_moment / (c * c) / 2.0
    read_wait = resid_r / (1.0 - rho)
    # reads behind writes. A job waits for one read at a time, so a long write cannot hold up more
    # than one read of each job (the open M/G/1 formula counts every read that would have arrived
    # meanwhile). Per write busy period (writes back to back; one write where reads go first), a
    # job that is computing when it starts loses E[(B - X)+], and it computes 1/w of the time.
    if dev.read_priority or rho_w <= 0.0:
        busy, busy2, starts = dev.write.mean, dev.write.second_moment, n * n_w
    else:
        busy = dev.write.mean / (1.0 - rho_w)
        busy2 = dev.write.second_moment / (1.0 - rho_w) ** 3
        starts = n * n_w * (1.0 - rho_w)
    behind_writes = starts * _caught(busy, busy2, n_r) / w if n_w > 0 else 0.0
    resid_w = lam_w * dev.write.second_moment / 2.0
    write_response = dev.write.mean + (resid_r + resid_w) / (1.0 - rho)
    return n_r * (dev.read.mean + read_wait) + behind_writes, write_response, behind_writes, rho, rho_w


def node_efficiency(dev: DeviceClasses, load: NodeLoad) -> NodeResult:
    """CPU efficiency of ``load.jobs`` identical single-core jobs sharing ``dev``."""
    n = load.jobs
    demand = n * (load.reads_per_cpu_second * dev.read.mean / dev.read_channels)
    demand += n * load.write_units_per_cpu_second * dev.write.mean
    network = n * load.network_seconds_per_cpu_second
    # wall per CPU second cannot be below 1 (the job's own CPU), nor below what the device or the
    # NIC needs to serve the node's demand
    floor_device = demand * (1.0 + 1e-9)
    lo = max(1.0, floor_device, network)
    bound = "queue"

    def gap(w: float) -> float:
        reading, t_w, *_ = _waits(dev, load, w)
        g = 1.0 + reading
        if load.stage_in == "blocking":
            g += max(load.write_units_per_cpu_second * t_w, load.network_seconds_per_cpu_second)
        return w - g

    if gap(lo) >= 0.0:
        w = lo
        bound = "network" if network >= max(1.0, floor_device) else ("device" if floor_device > 1.0 else "queue")
    else:
        hi = max(2.0 * lo, 2.0)
        while gap(hi) < 0.0:
            hi *= 2.0
        w = float(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-10))
        if floor_device >= 1.0 and w <= floor_device * (1.0 + 1e-6):
            bound = "device"
    reading, _, behind, rho, rho_w = _waits(dev, load, w)
    per_read = reading / load.reads_per_cpu_second if load.reads_per_cpu_second > 0 else 0.0
    behind_per_read = behind / load.reads_per_cpu_second if load.reads_per_cpu_second > 0 else 0.0
    return NodeResult(1.0 / w, w, per_read, behind_per_read, min(rho, 1.0), rho_w, bound)


@dataclass(frozen=True)
class StageWorkload:
    """A job's I/O per CPU second, in the terms of the request classes."""

    staged_bytes_per_cpu_second: float
    read_fraction: float  # bytes read back from scratch per byte staged
    nic_bytes_per_second: float
    stage_in: str = "background"

    def load(self, jobs: int, read_request_bytes: float, write_unit_bytes: float, core_speed: float = 1.0) -> NodeLoad:
        """The node's load; ``core_speed`` scales the bytes a CPU second processes (a slower core
        reads and stages less per CPU second)."""
        staged = self.staged_bytes_per_cpu_second * core_speed
        return NodeLoad(
            jobs,
            staged * self.read_fraction / read_request_bytes,
            staged / write_unit_bytes,
            staged / self.nic_bytes_per_second,
            self.stage_in,
        )


def read_request_bytes(seeks_per_gb: float) -> float:
    """The mean random read a workload of ``seeks_per_gb`` issues."""
    return GB / seeks_per_gb


__all__ = [
    "STAGE_MODES",
    "DeviceClasses",
    "NodeLoad",
    "NodeResult",
    "ServiceTime",
    "StageWorkload",
    "device_classes",
    "node_efficiency",
    "read_request_bytes",
]
