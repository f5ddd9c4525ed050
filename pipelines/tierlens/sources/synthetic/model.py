"""A discrete-event model of a Tier-2: jobs competing for their node's scratch device, the NIC,
the origin servers' spindles and the SSD cache.

Nothing here states an efficiency. A job is a plan of operations (stage a piece of an input file
in, read a chunk from scratch or remotely and compute on it, write output); each device and NIC is
a first-come-first-served queue; a job waits for its I/O, then spends CPU. CPU efficiency is what
falls out: CPU seconds over wall seconds. Events are handled in time order, so each queue sees its
requests in arrival order and the FCFS bookkeeping is exact.

The model emits what real sources would emit: job and job_tag rows as a batch system with the
tierlens plugin would record them, and file_access rows as the XRootD collector would decode them.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .site import MB, NodeSpec, ScratchConfig, ServerSpec, SiteSpec

STAGE_PIECE_BYTES = 512 * MB
READ_CHUNKS_PER_FILE = 8
XROOTD_READ_BYTES = 8 * MB  # xrdcp block size: one single read per block when staging in
READV_SEGMENT_BYTES = 96 * 1024  # mean segment of a ROOT vector read
SEGMENTS_PER_READV = 64
STREAM_BYTES_PER_SEEK = 2 * MB


class Queues:
    """A set of identical FCFS servers; ``next_free[i]`` is when server i is idle again."""

    __slots__ = ("next_free", "access", "read_bps", "write_bps")

    def __init__(self, n: int, access: float, read_bps: float, write_bps: float) -> None:
        self.next_free = [0.0] * n
        self.access = access
        self.read_bps = read_bps
        self.write_bps = write_bps

    def serve(self, i: int, t: float, service: float) -> float:
        nf = self.next_free
        start = t if t > nf[i] else nf[i]
        nf[i] = start + service
        return nf[i]

    def earliest(self) -> int:
        nf = self.next_free
        return nf.index(min(nf))


class Scratch:
    """A node's job scratch space: a disk, a RAID set, flash, or a share of a network file system."""

    def __init__(self, cfg: ScratchConfig, shared_queues: Queues | None = None) -> None:
        self.cfg = cfg
        d = cfg.device
        self.q = shared_queues or Queues(
            cfg.members * d.queues, d.access_seconds, d.read_bytes_per_second, d.write_bytes_per_second
        )
        self.latency = cfg.network_latency_seconds
        #: (from time, factor): a site change that made this node's scratch reads faster (or slower).
        self.read_speedups: list[tuple[float, float]] = []
        #: bytes left in each member's fast-write region (a device without one never runs out)
        self.fast_left = float(d.write_cache_bytes)

    def _transfer(self, t: float, nbytes: float) -> float:
        """Seconds one member needs to write ``nbytes`` (its share of a write) issued at ``t``:
        at the fast rate while its fast-write region lasts, at the steady rate past it; the region
        refills while the device is idle."""
        q, d = self.q, self.cfg.device
        if d.write_cache_bytes <= 0:
            return nbytes / q.write_bps
        idle = max(t - max(q.next_free), 0.0)
        left = min(d.write_cache_bytes, self.fast_left + idle * d.recovery_bytes_per_second)
        fast = min(nbytes, left)
        self.fast_left = left - fast
        return fast / q.write_bps + (nbytes - fast) / d.steady_write_bytes_per_second

    def read(self, t: float, nbytes: float, seeks: float) -> float:
        for since, factor in self.read_speedups:
            if t >= since:
                seeks, nbytes = seeks / factor, nbytes / factor  # the device time, not the data, shrinks
        q, kind = self.q, self.cfg.storage_type
        if kind == "raid0":  # striped: every member does its share of the request
            n = len(q.next_free)
            service = (seeks * q.access + nbytes / q.read_bps) / n
            return max(q.serve(i, t, service) for i in range(n))
        service = seeks * (q.access + self.latency) + nbytes / q.read_bps
        return q.serve(q.earliest(), t, service)  # RAID1 mirrors, flash channels, NFS spindles

    def write(self, t: float, nbytes: float) -> float:
        q, kind = self.q, self.cfg.storage_type
        n = len(q.next_free)
        if kind == "raid0":
            transfer = self._transfer(t, nbytes / n)
            return max(q.serve(i, t, q.access + transfer) for i in range(n))
        if kind == "raid1":  # every mirror writes everything
            transfer = self._transfer(t, nbytes)
            return max(q.serve(i, t, q.access + transfer) for i in range(n))
        return q.serve(q.earliest(), t, q.access + self.latency + self._transfer(t, nbytes))


class Server:
    """An XRootD origin (files placed on spindles) or the cache (any channel) behind one NIC."""

    def __init__(self, spec: ServerSpec) -> None:
        d = spec.device
        self.spec = spec
        self.disks = Queues(spec.queues, d.access_seconds, d.read_bytes_per_second, d.write_bytes_per_second)
        self.nic = Queues(1, 0.0, spec.nic_bytes_per_second, spec.nic_bytes_per_second)

    def read(self, t: float, nbytes: float, seeks: float, file_index: int) -> float:
        disks = self.disks
        i = file_index % len(disks.next_free) if self.spec.role == "origin" else disks.earliest()
        done_disk = disks.serve(i, t, seeks * disks.access + nbytes / disks.read_bps)
        done_nic = self.nic.serve(0, t, nbytes / self.nic.read_bps)
        return done_disk if done_disk > done_nic else done_nic

    def write(self, t: float, nbytes: float) -> float:
        disks = self.disks
        return disks.serve(disks.earliest(), t, nbytes / disks.write_bps)


class WholeFileLRU:
    """The cache's content: bytes held per file, evicted least-recently-used by byte capacity.

    A partial read stages in only what it read (XCache is block based); coverage is tracked as a
    fraction of the file, which treats reads as overlapping, a fair simplification for ROOT files
    whose hot branches are read by every job.
    """

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity = capacity_bytes
        self.held: OrderedDict[int, float] = OrderedDict()
        self.used = 0.0

    def access(self, file_index: int, size: float, fraction: float) -> tuple[float, float]:
        """Return (hit_bytes, miss_bytes) and stage the missed bytes in."""
        held = self.held.pop(file_index, 0.0)
        want = size * fraction
        hit = min(held, want)
        miss = want - hit
        new_held = max(held, want)
        self.used += new_held - held
        self.held[file_index] = new_held
        while self.used > self.capacity and len(self.held) > 1:
            victim, vbytes = self.held.popitem(last=False)
            if victim == file_index:  # never evict what is being read
                self.held[victim] = vbytes
                self.held.move_to_end(victim, last=False)
                break
            self.used -= vbytes
        return hit, miss


@dataclass
class Access:
    """One file open→close as the collector would record it."""

    file_index: int
    server: str
    role: str
    mode: str  # 'stage' (whole-file copy to scratch) or 'direct' (partial remote read)
    start: float = 0.0
    end: float = 0.0
    read_bytes: float = 0.0
    readv_bytes: float = 0.0
    read_ops: int = 0
    readv_ops: int = 0
    hit_bytes: float | None = None
    miss_bytes: float | None = None
    hit_fraction: float = 0.0  # of this access's bytes, the share served from the cache


@dataclass
class Job:
    index: int
    job_class: str
    account: str
    vo: str
    user: str
    cores: int
    submit: float
    plan: list[tuple]
    cpu_scale: float = 1.0  # >1 for jobs running more threads than their allocation
    fails: bool = False
    has_identity: bool = True
    # set while running
    node: NodeSpec | None = None
    start: float = 0.0
    step: int = 0
    cpu_user: float = 0.0
    io_seconds: float = 0.0  # wall time spent waiting for I/O
    bytes_local_read: float = 0.0
    bytes_remote_read: float = 0.0
    bytes_written: float = 0.0
    accesses: dict[int, Access] = field(default_factory=dict)


@dataclass(frozen=True)
class FinishedJob:
    job: Job
    end: float


class SiteModel:
    """Runs a site forward in time; finished jobs are handed to ``on_finish`` as they end."""

    def __init__(self, site: SiteSpec, rng: np.random.Generator, on_finish: Callable[[FinishedJob], None]) -> None:
        self.site = site
        self.rng = rng
        self.on_finish = on_finish
        shared: dict[str, Queues] = {}
        self.scratch: dict[str, Scratch] = {}
        for node in site.nodes:
            cfg = node.scratch
            if cfg.shared and cfg.storage_type not in shared:
                d = cfg.device
                shared[cfg.storage_type] = Queues(
                    cfg.members, d.access_seconds, d.read_bytes_per_second, d.write_bytes_per_second
                )
            self.scratch[node.name] = Scratch(cfg, shared.get(cfg.storage_type) if cfg.shared else None)
        self.nic = {n.name: Queues(1, 0.0, n.nic_gbps * 1.25e8, n.nic_gbps * 1.25e8) for n in site.nodes}
        self.origins = [Server(s) for s in site.origins]
        self.cache = Server(site.cache)
        self.cache_content = WholeFileLRU(site.cache_capacity_bytes)
        self.free = {n.name: n.slots for n in site.nodes}
        self.pending: deque[Job] = deque()
        self.events: list[tuple[float, int, int, Job]] = []
        self._seq = 0
        self.file_sizes: np.ndarray = np.zeros(0)
        self.cache_staged_bytes = 0.0

    # -- event queue -------------------------------------------------------------------------
    def _push(self, t: float, kind: int, job: Job) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, job))

    def submit(self, job: Job) -> None:
        self._push(job.submit, 0, job)

    def run(self, until: float) -> None:
        events = self.events
        while events and events[0][0] <= until:
            t, _, kind, job = heapq.heappop(events)
            if kind == 0:
                self.pending.append(job)
                self._schedule(t)
            else:
                self._advance(job, t)

    # -- scheduling --------------------------------------------------------------------------
    def _schedule(self, t: float) -> None:
        # Look a little past the head of the queue so a multi-core job does not block single
        # cores (the effect of Slurm's backfill on a busy Tier-2).
        look = 0
        i = 0
        while i < len(self.pending) and look < 64:
            job = self.pending[i]
            fits = [n for n in self.site.nodes if self.free[n.name] >= job.cores]
            if not fits:
                i += 1
                look += 1
                continue
            node = fits[int(self.rng.integers(len(fits)))]
            del self.pending[i]
            self.free[node.name] -= job.cores
            job.node, job.start, job.step = node, t, 0
            self._push(t, 1, job)
            look += 1

    # -- one step of a job -------------------------------------------------------------------
    def _advance(self, job: Job, t: float) -> None:
        if job.step >= len(job.plan):
            self.free[job.node.name] += job.cores
            self.on_finish(FinishedJob(job, t))
            self._schedule(t)
            return
        op = job.plan[job.step]
        job.step += 1
        kind = op[0]
        cpu = 0.0
        if kind == "S":
            done = self._stage_piece(job, t, *op[1:])
        elif kind == "R":
            _, nbytes, seeks, cpu = op
            done = self.scratch[job.node.name].read(t, nbytes, seeks)
            job.bytes_local_read += nbytes
        elif kind == "D":
            _, slot, fidx, fraction, nbytes, seeks, cpu, first, last = op
            done = self._direct_chunk(job, t, slot, fidx, fraction, nbytes, seeks, first, last)
        elif kind == "C":
            done, cpu = t, op[1]
        elif kind == "W":
            done = self.scratch[job.node.name].write(t, op[1])
            job.bytes_written += op[1]
        else:  # "O": stage-out to the origin: read back from scratch, written on a server's disk
            _, fidx, nbytes = op
            origin = self.origins[fidx % len(self.origins)]
            done = max(
                self.scratch[job.node.name].read(t, nbytes, nbytes / STREAM_BYTES_PER_SEEK),
                self.nic[job.node.name].serve(0, t, nbytes / self.nic[job.node.name].write_bps),
                origin.write(t, nbytes),
            )
        job.io_seconds += done - t
        job.cpu_user += cpu * job.cpu_scale
        self._push(done + cpu * job.cpu_scale / job.cores, 1, job)

    def _open(self, job: Job, t: float, slot: int, file_index: int, fraction: float, mode: str) -> Access:
        size = float(self.file_sizes[file_index])
        if job.node.ab_arm == "B":
            hit, miss = self.cache_content.access(file_index, size, fraction)
            self.cache_staged_bytes += miss
            acc = Access(
                file_index,
                self.cache.spec.host,
                "cache",
                mode,
                start=t,
                hit_bytes=hit,
                miss_bytes=miss,
                hit_fraction=hit / (hit + miss) if hit + miss else 0.0,
            )
        else:
            origin = self.origins[file_index % len(self.origins)]
            acc = Access(file_index, origin.spec.host, "origin", mode, start=t)
        job.accesses[slot] = acc
        return acc

    def _remote(self, job: Job, acc: Access, t: float, nbytes: float, seeks: float) -> float:
        """Fetch bytes for a job from its server; cache misses go on to the origin."""
        done = self.nic[job.node.name].serve(0, t, nbytes / self.nic[job.node.name].read_bps)
        if acc.role == "cache":
            hit_b = nbytes * acc.hit_fraction
            miss_b = nbytes - hit_b
            if hit_b > 0:
                done = max(done, self.cache.read(t, hit_b, seeks * acc.hit_fraction, acc.file_index))
            if miss_b > 0:
                origin = self.origins[acc.file_index % len(self.origins)]
                done = max(
                    done,
                    origin.read(t, miss_b, seeks * (1 - acc.hit_fraction), acc.file_index),
                    self.cache.write(t, miss_b),
                )
        else:
            origin = self.origins[acc.file_index % len(self.origins)]
            done = max(done, origin.read(t, nbytes, seeks, acc.file_index))
        job.bytes_remote_read += nbytes
        return done

    def _stage_piece(
        self, job: Job, t: float, slot: int, file_index: int, nbytes: float, first: bool, last: bool
    ) -> float:
        acc = self._open(job, t, slot, file_index, 1.0, "stage") if first else job.accesses[slot]
        # xrdcp streams sequentially: one access per piece, the copy is written to scratch as it arrives.
        # Many streams interleave on an origin's disks, so even a sequential copy pays a seek
        # every few megabytes there.
        seeks = nbytes / STREAM_BYTES_PER_SEEK
        done = max(self._remote(job, acc, t, nbytes, seeks), self.scratch[job.node.name].write(t, nbytes))
        acc.read_bytes += nbytes
        acc.read_ops += max(1, math.ceil(nbytes / XROOTD_READ_BYTES))
        job.bytes_written += nbytes
        if last:
            acc.end = done
        return done

    def _direct_chunk(
        self,
        job: Job,
        t: float,
        slot: int,
        file_index: int,
        fraction: float,
        nbytes: float,
        seeks: float,
        first: bool,
        last: bool,
    ) -> float:
        acc = self._open(job, t, slot, file_index, fraction, "direct") if first else job.accesses[slot]
        done = self._remote(job, acc, t, nbytes, seeks)
        acc.readv_bytes += nbytes
        acc.readv_ops += max(1, math.ceil(nbytes / READV_SEGMENT_BYTES / SEGMENTS_PER_READV))
        if last:
            acc.end = done
        return done
