"""Run the probe job set with fio against a directory, safely, and turn fio's JSON into records.

Never hurt a site: the probe refuses a directory holding anything it did not create, checks the
free space it needs before writing, writes only inside a fresh directory of its own (created
with ``mkdir``, so an existing path or symlink makes it stop), and removes that directory
whatever happens. fio deletes each job's files as the job ends (``unlink=1``), so at most one
job's files exist at a time (the reads-under-writes points share one job's worth, removed after
the last point).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from ..records import DEVICE_PROBE
from . import under_write
from .jobs import JOBS, ProbeJob, parse_fio, run_fio
from .sustained import BLOCK_BYTES, Budget, analyse, rows as sustained_rows

WORKDIR_PREFIX = ".tierlens-probe-"
MARKER = ".tierlens-probe"
#: Extra free space asked for beyond the job files (fio's own files, file system slack).
SPACE_MARGIN_BYTES = 64 * 1024 * 1024


class ProbeRefused(Exception):
    """The probe will not run on this path; the message says why and what to do."""


@dataclass(frozen=True)
class ProbeOptions:
    path: Path
    node: str | None = None
    seconds: float = 120.0  # the whole job set, the reads under writes included
    slots: int | None = None  # processes of the full-node jobs [default: cores]
    file_bytes: int = 1024**3  # bytes of files one job uses, over all its processes
    fio: str = "fio"
    #: write past the fast-write region within this budget (probe/sustained.py); None: do not
    sustained: Budget | None = None
    #: background write throttles of the read_under_write_* points (fractions of the stage-in
    #: write bandwidth, probe/under_write.py); empty: do not run them
    under_write: tuple[float, ...] = under_write.UTILISATIONS

    @property
    def node_name(self) -> str:
        return self.node or socket.gethostname()

    @property
    def node_slots(self) -> int:
        return self.slots or os.cpu_count() or 1


def fio_version(fio: str = "fio") -> str:
    try:
        out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise ProbeRefused(f"fio is not available ({e}); install the Debian package fio") from e
    return out.stdout.strip()


def _ours(entry: Path) -> bool:
    return (
        entry.name.startswith(WORKDIR_PREFIX)
        and entry.is_dir()
        and not entry.is_symlink()
        and (entry / MARKER).is_file()
    )


def check_path(path: Path) -> list[Path]:
    """Refuse unless ``path`` is a real directory holding nothing but earlier probes' directories,
    which are returned (a probe that was killed leaves one; the next run removes it)."""
    if path.is_symlink():
        raise ProbeRefused(f"{path} is a symbolic link; give the directory it points to")
    if not path.is_dir():
        raise ProbeRefused(f"{path} is not a directory")
    leftovers, foreign = [], []
    for entry in sorted(path.iterdir()):
        (leftovers if _ours(entry) else foreign).append(entry)
    if foreign:
        names = ", ".join(e.name for e in foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise ProbeRefused(
            f"{path} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} the probe did not "
            f"create ({names}); give an empty directory on the device to probe"
        )
    return leftovers


def check_space(path: Path, need: int) -> None:
    free = shutil.disk_usage(path).free
    if free < need + SPACE_MARGIN_BYTES:
        raise ProbeRefused(
            f"{path}: {free / 1e9:.2f} GB free, the probe needs {(need + SPACE_MARGIN_BYTES) / 1e9:.2f} GB "
            f"(lower --file-size)"
        )


def direct_io_supported(workdir: Path) -> bool:
    """Whether the file system accepts O_DIRECT (tmpfs does not); without it reads would come from
    the page cache, so buffered jobs drop the file's cached pages first (fio's invalidate=1)."""
    probe = workdir / "direct-test"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    probe.unlink()
    return True


def fio_args(
    job: ProbeJob, workdir: Path, runtime_s: float, slots: int, file_bytes: int, direct: bool, fio: str = "fio"
) -> list[str]:
    procs = job.processes(slots)
    per_proc = max(file_bytes // procs // job.block_size, 4) * job.block_size
    args = [
        fio,
        f"--name={job.name}",
        f"--directory={workdir}",
        f"--rw={job.rw}",
        f"--bs={job.block_size}",
        f"--size={per_proc}",
        f"--numjobs={procs}",
        "--ioengine=psync",
        "--iodepth=1",
        f"--direct={int(direct)}",
        "--time_based=1",
        f"--runtime={max(int(runtime_s * 1000), 200)}ms",
        "--group_reporting=1",
        "--unlink=1",
        "--output-format=json",
    ]
    if job.rw == "write" and not direct:
        args.append("--end_fsync=1")  # buffered writes count only once they reach the device
    return args


def run_probe(options: ProbeOptions, detect=None) -> pa.Table:
    """Run every job of :data:`JOBS` in a directory of our own under ``options.path``; the records."""
    if detect is None:
        from .detect import detect
    path = options.path.resolve() if not options.path.is_symlink() else options.path
    leftovers = check_path(path)
    version = fio_version(options.fio)
    check_space(path, options.file_bytes)
    budget = options.sustained
    if budget is not None:  # never fill the device: at most 80 % of what is free, said in the row count
        free = shutil.disk_usage(path).free - SPACE_MARGIN_BYTES
        if free < budget.window_bytes * 2:
            raise ProbeRefused(
                f"{path}: {free / 1e9:.2f} GB free is too little for a sustained write "
                f"(lower --sustained-bytes, or 0 to skip it)"
            )
        budget = Budget(min(budget.max_bytes, 0.8 * free), budget.max_seconds, budget.min_bytes, budget.window_bytes)
    for old in leftovers:
        shutil.rmtree(old)
    found = detect(str(path))
    settings = under_write.device_settings(path)
    probe_id = uuid.uuid4().hex[:16]
    started = datetime.now(timezone.utc)
    workdir = path / f"{WORKDIR_PREFIX}{probe_id}"
    os.mkdir(workdir, 0o700)
    rows = []
    try:
        fd = os.open(workdir / MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
        os.write(fd, f"tierlens probe {probe_id} {started.isoformat()}\n".encode())
        os.close(fd)
        direct = direct_io_supported(workdir)
        points = under_write.jobs(options.under_write, direct) if options.under_write else ()
        runtime = options.seconds / (len(JOBS) + len(points))
        for job in JOBS:
            args = fio_args(job, workdir, runtime, options.node_slots, options.file_bytes, direct, options.fio)
            began = time.perf_counter()
            out = run_fio(args, f"job {job.name}", path, timeout=runtime * 4 + 120)
            rows.append(
                {
                    "probe_id": probe_id,
                    "node": options.node_name,
                    "path": str(path),
                    "storage_type": found.storage_type,
                    "device_models": list(found.device_models),
                    "tool": "fio",
                    "tool_version": version,
                    "job_name": job.name,
                    "rw": job.rw,
                    "block_size_bytes": job.block_size,
                    "queue_depth": 1,
                    "processes": job.processes(options.node_slots),
                    "direct_io": direct,
                    "seconds": time.perf_counter() - began,
                    **parse_fio(out, job),
                    "probed_at": started,
                    **settings,
                }
            )
        common = {
            k: rows[0][k]
            for k in (
                "probe_id",
                "node",
                "path",
                "storage_type",
                "device_models",
                "tool",
                "tool_version",
                "direct_io",
                "probed_at",
                *settings,
            )
        }
        if points:
            # throttles are fractions of what one stage-in copy wrote here a moment ago
            stagein = next(r for r in rows if r["job_name"] == "stagein_write")["bandwidth_bytes_per_second"]
            rows += [
                {**common, **r}
                for r in under_write.run(
                    workdir, points, runtime, options.node_slots, options.file_bytes, stagein, options.fio
                )
            ]
        if budget is not None:
            rows += [{**common, **r} for r in run_sustained(workdir, options, budget, direct)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pa.Table.from_pylist(rows, schema=DEVICE_PROBE)


def bandwidth_series(log: Path) -> tuple[list[float], list[float]]:
    """fio's bandwidth log (``time_msec, KiB/s, ddir, bs, offset``; every writer's samples in one
    file) as one window per second: bytes written by all writers, and its seconds."""
    per_second: dict[int, float] = {}
    for line in log.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or parts[2] != "1":  # ddir 1: writes
            continue
        second = int(parts[0]) // 1000
        per_second[second] = per_second.get(second, 0.0) + float(parts[1]) * 1024.0
    seconds = sorted(per_second)
    return [per_second[t] for t in seconds], [1.0] * len(seconds)


def run_sustained(workdir: Path, options: ProbeOptions, budget: Budget, direct: bool) -> list[dict]:
    """Every slot writes 8 MiB blocks until the byte or time budget ends (fio stops at whichever
    comes first); the per-second bandwidth log gives the burst, the cliff and whether the rate had
    settled (probe/sustained.py). Then one process reads at random while the others write."""
    slots = options.node_slots
    per_proc = max(int(budget.max_bytes // slots // BLOCK_BYTES), 1) * BLOCK_BYTES
    log = workdir / "sustained"
    args = [
        options.fio,
        "--name=sustained_write",
        f"--directory={workdir}",
        "--rw=write",
        f"--bs={BLOCK_BYTES}",
        f"--size={per_proc}",
        f"--numjobs={slots}",
        "--ioengine=psync",
        "--iodepth=1",
        f"--direct={int(direct)}",
        f"--runtime={int(budget.max_seconds)}s",
        "--group_reporting=1",
        "--unlink=1",
        "--output-format=json",
        f"--write_bw_log={log}",
        "--log_avg_msec=1000",
        "--per_job_logs=0",
    ]
    if not direct:
        args.append("--end_fsync=1")
    out = run_fio(args, "sustained write", workdir, timeout=budget.max_seconds * 2 + 300)
    logs = sorted(workdir.glob("sustained_bw*.log"))
    if not logs:
        raise RuntimeError(f"fio wrote no bandwidth log in {workdir}")
    b, s = bandwidth_series(logs[0])
    if not b:
        # fio logs its first sample after a second: a device that wrote the whole budget faster
        # has only the run's total, one window
        write = json.loads(out)["jobs"][0]["write"]
        b, s = [float(write["io_bytes"])], [max(float(write["runtime"]) / 1000.0, 1e-3)]
    # windows of the budget's size: whole seconds summed until they hold window_bytes
    wb, ws, acc_b, acc_s = [], [], 0.0, 0.0
    for x, t in zip(b, s):
        acc_b, acc_s = acc_b + x, acc_s + t
        if acc_b >= budget.window_bytes:
            wb.append(acc_b)
            ws.append(acc_s)
            acc_b, acc_s = 0.0, 0.0
    if not wb:
        wb, ws = [acc_b], [acc_s]
    result = analyse(wb, ws, budget.min_bytes)
    for f in logs:
        f.unlink()
    read = read_under_write(workdir, options, direct)
    return sustained_rows(result, read, slots)


def read_under_write(workdir: Path, options: ProbeOptions, direct: bool, seconds: float = 20.0) -> dict:
    """One process reading 128 KiB at random while the node's other slots write 8 MiB blocks."""
    writers = max(options.node_slots - 1, 1)
    per_writer = max(options.file_bytes // writers // BLOCK_BYTES, 4) * BLOCK_BYTES
    reader = ProbeJob("read_under_write", "randread", 128 * 1024, False)
    common = [
        f"--directory={workdir}",
        "--ioengine=psync",
        "--iodepth=1",
        f"--direct={int(direct)}",
        "--time_based=1",
        f"--runtime={int(seconds)}s",
        "--unlink=1",
    ]
    args = [
        options.fio,
        "--output-format=json",
        "--group_reporting=1",
        "--name=writers",
        "--rw=write",
        f"--bs={BLOCK_BYTES}",
        f"--size={per_writer}",
        f"--numjobs={writers}",
        *common,
        "--name=read_under_write",
        "--new_group",
        "--rw=randread",
        "--bs=131072",
        f"--size={max(options.file_bytes // 4, 16 * 1024 * 1024)}",
        "--numjobs=1",
        *common,
    ]
    began = time.perf_counter()
    out = run_fio(args, "read-under-write", workdir, timeout=seconds * 4 + 300)
    return {
        "block_size_bytes": reader.block_size,
        "seconds": time.perf_counter() - began,
        **parse_fio(out, reader),
    }
