"""One worker node queued request by request: jobs reading from scratch while their stagers write.

The generator's site model (model.py) serves a job's reads as chunks; this node serves every random
read and every stage-in write unit as its own request, so a read can find a write in service and
wait for it. It shares no formula with the predictor (simulator/requests.py): service times are
drawn from gamma distributions with the given mean and coefficient of variation, requests wait in
one first-come-first-served line (or reads first, as a scheduler holding writes back would do), and
efficiency is counted from the clock.

Each job alternates CPU slices (exponential, mean one read interval) with one synchronous read.
Its stager (ATLAS FileStager) writes the job's input in write units while the job runs, keeping at
most ``ahead_cpu_seconds`` of input ahead of the job; a job whose next data is not written yet
waits for it. In ``blocking`` mode the job copies each file before it reads it.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class QueuedDevice:
    read_mean: float
    read_cv: float
    write_mean: float
    write_cv: float
    read_channels: int = 1
    read_priority: bool = False


@dataclass(frozen=True)
class QueuedNodeResult:
    efficiency: float
    mean_read_response: float
    write_utilisation: float
    reads: int
    writes: int


def _sampler(rng: np.random.Generator, mean: float, cv: float):
    if cv <= 1e-9:
        return lambda: mean
    shape = 1.0 / (cv * cv)
    scale = mean / shape
    return lambda: float(rng.gamma(shape, scale))


def run_node(
    device: QueuedDevice,
    jobs: int,
    reads_per_cpu_second: float,
    write_units_per_cpu_second: float,
    cpu_seconds: float = 900.0,
    ahead_cpu_seconds: float = 600.0,
    stage_in: str = "background",
    seed: int = 1,
) -> QueuedNodeResult:
    """Run ``jobs`` jobs of ``cpu_seconds`` each on ``device``; efficiency = ΣCPU / Σwall."""
    rng = np.random.default_rng(seed)
    read_time = _sampler(rng, device.read_mean, device.read_cv)
    write_time = _sampler(rng, device.write_mean, device.write_cv)
    slice_mean = 1.0 / reads_per_cpu_second
    unit_cpu = 1.0 / write_units_per_cpu_second  # CPU seconds of input one write unit holds
    channels = device.read_channels

    events: list[tuple[float, int, str, int]] = []
    seq = 0

    def push(t: float, kind: str, job: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, job))

    # the device: requests wait in arrival order; a write holds every channel
    line: deque[tuple[str, int]] = deque()
    reads_first: deque[tuple[str, int]] = deque()
    busy = 0
    busy_write_time = 0.0
    read_issued = [0.0] * jobs
    read_responses: list[float] = []

    def start_waiting(now: float) -> None:
        nonlocal busy, busy_write_time
        while True:
            q = reads_first if (device.read_priority and reads_first) else line
            if not q:
                return
            kind, job = q[0]
            need = channels if kind == "W" else 1
            if busy + need > channels:
                return
            q.popleft()
            busy += need
            service = write_time() if kind == "W" else read_time()
            if kind == "W":
                busy_write_time += service
            push(now + service, "done_" + kind, job)

    def submit(now: float, kind: str, job: int) -> None:
        (reads_first if (device.read_priority and kind == "R") else line).append((kind, job))
        start_waiting(now)

    cpu_done = [0.0] * jobs  # CPU seconds each job has run
    written = [ahead_cpu_seconds] * jobs  # input on scratch, in CPU seconds of the job (first file staged)
    writing = [False] * jobs
    waiting_for_data = [False] * jobs
    finished = [0.0] * jobs
    next_slice = [float(rng.exponential(slice_mean)) for _ in range(jobs)]
    reads = writes = 0
    first_end: float | None = None
    cpu_at_first_end = write_busy_at_first_end = 0.0

    def stager(now: float, job: int) -> None:
        nonlocal writes
        if writing[job]:
            return
        if written[job] < cpu_done[job] + ahead_cpu_seconds:
            writing[job] = True
            writes += 1
            submit(now, "W", job)

    def run_slice(now: float, job: int) -> None:
        """Compute the next slice if its input is on scratch, else wait for the stager."""
        left = cpu_seconds - cpu_done[job]
        if left <= 0:
            finished[job] = now
            return
        need = min(next_slice[job], left)
        if cpu_done[job] + need > written[job] + 1e-9:
            waiting_for_data[job] = True
            stager(now, job)  # a copy-then-run job copies its next file now
            return
        push(now + need, "cpu", job)

    if stage_in == "blocking":  # nothing staged yet: each file is copied before it is read
        written = [0.0] * jobs
    for j in range(jobs):
        run_slice(0.0, j)
        stager(0.0, j)
    while events:
        now, _, kind, j = heapq.heappop(events)
        if kind == "cpu":
            step = min(next_slice[j], cpu_seconds - cpu_done[j])
            cpu_done[j] += step
            next_slice[j] = float(rng.exponential(slice_mean))
            if cpu_done[j] >= cpu_seconds - 1e-12:
                finished[j] = now
                if first_end is None:  # steady state ends when the first job does
                    first_end, cpu_at_first_end = now, sum(cpu_done)
                    write_busy_at_first_end = busy_write_time
                continue
            read_issued[j] = now
            reads += 1
            submit(now, "R", j)
            if stage_in == "background":
                stager(now, j)
        elif kind == "done_R":
            busy -= 1
            read_responses.append(now - read_issued[j])
            start_waiting(now)
            run_slice(now, j)
        else:  # done_W
            busy -= channels
            writing[j] = False
            written[j] += unit_cpu
            start_waiting(now)
            stager(now, j)
            if waiting_for_data[j] and written[j] >= cpu_done[j] + next_slice[j]:
                # a copy-then-run job starts reading only once its whole next file is there
                if stage_in == "background" or written[j] >= cpu_done[j] + ahead_cpu_seconds:
                    waiting_for_data[j] = False
                    run_slice(now, j)
    # efficiency while every job runs (the node full, as the studies measured it)
    return QueuedNodeResult(
        cpu_at_first_end / (jobs * first_end),
        float(np.mean(read_responses)) if read_responses else 0.0,
        write_busy_at_first_end / first_end,
        reads,
        writes,
    )


__all__ = ["QueuedDevice", "QueuedNodeResult", "run_node"]
