"""Run the probe job set with fio against a directory, safely, and turn fio's JSON into records.

Never hurt a site: the probe refuses a directory holding anything it did not create, checks the
free space it needs before writing, writes only inside a fresh directory of its own (created
with ``mkdir``, so an existing path or symlink makes it stop), and removes that directory
whatever happens. fio deletes each job's files as the job ends (``unlink=1``), so at most one
job's files exist at a time.
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
from .jobs import JOBS, ProbeJob

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
    seconds: float = 60.0               # the whole job set
    slots: int | None = None            # processes of the full-node jobs [default: cores]
    file_bytes: int = 1024 ** 3         # bytes of files one job uses, over all its processes
    fio: str = "fio"

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
    return (entry.name.startswith(WORKDIR_PREFIX) and entry.is_dir() and not entry.is_symlink()
            and (entry / MARKER).is_file())


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
        raise ProbeRefused(f"{path} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} the probe did not "
                           f"create ({names}); give an empty directory on the device to probe")
    return leftovers


def check_space(path: Path, need: int) -> None:
    free = shutil.disk_usage(path).free
    if free < need + SPACE_MARGIN_BYTES:
        raise ProbeRefused(f"{path}: {free / 1e9:.2f} GB free, the probe needs {(need + SPACE_MARGIN_BYTES) / 1e9:.2f} GB "
                           f"(lower --file-size)")


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


def fio_args(job: ProbeJob, workdir: Path, runtime_s: float, slots: int, file_bytes: int, direct: bool,
             fio: str = "fio") -> list[str]:
    procs = job.processes(slots)
    per_proc = max(file_bytes // procs // job.block_size, 4) * job.block_size
    args = [fio, f"--name={job.name}", f"--directory={workdir}", f"--rw={job.rw}", f"--bs={job.block_size}",
            f"--size={per_proc}", f"--numjobs={procs}", "--ioengine=psync", "--iodepth=1",
            f"--direct={int(direct)}", "--time_based=1", f"--runtime={max(int(runtime_s * 1000), 200)}ms",
            "--group_reporting=1", "--unlink=1", "--output-format=json"]
    if job.rw == "write" and not direct:
        args.append("--end_fsync=1")  # buffered writes count only once they reach the device
    return args


def parse_fio(text: str, job: ProbeJob) -> dict:
    """Bandwidth, IOPS and latencies of one fio job from its JSON output (group reported)."""
    report = json.loads(text)
    (res,) = [j for j in report["jobs"] if j["jobname"] == job.name]
    side = res["write" if job.rw == "write" else "read"]
    pct = side.get("clat_ns", {}).get("percentile", {})
    p99 = pct.get("99.000000")
    return {"bandwidth_bytes_per_second": float(side["bw_bytes"]), "iops": float(side["iops"]),
            "mean_latency_seconds": float(side["lat_ns"]["mean"]) / 1e9,
            "p99_latency_seconds": float(p99) / 1e9 if p99 is not None else None}


def run_probe(options: ProbeOptions, detect=None) -> pa.Table:
    """Run every job of :data:`JOBS` in a directory of our own under ``options.path``; the records."""
    if detect is None:
        from ..sources.condor.detect import detect
    path = options.path.resolve() if not options.path.is_symlink() else options.path
    leftovers = check_path(path)
    version = fio_version(options.fio)
    check_space(path, options.file_bytes)
    for old in leftovers:
        shutil.rmtree(old)
    found = detect(str(path))
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
        runtime = options.seconds / len(JOBS)
        for job in JOBS:
            args = fio_args(job, workdir, runtime, options.node_slots, options.file_bytes, direct, options.fio)
            began = time.perf_counter()
            out = subprocess.run(args, capture_output=True, text=True, timeout=runtime * 4 + 120)
            if out.returncode != 0:
                raise RuntimeError(f"fio job {job.name} on {path} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
            rows.append({"probe_id": probe_id, "node": options.node_name, "path": str(path),
                         "storage_type": found.storage_type, "device_models": list(found.device_models),
                         "tool": "fio", "tool_version": version, "job_name": job.name, "rw": job.rw,
                         "block_size_bytes": job.block_size, "queue_depth": 1,
                         "processes": job.processes(options.node_slots), "direct_io": direct,
                         "seconds": time.perf_counter() - began, **parse_fio(out.stdout, job),
                         "probed_at": started})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pa.Table.from_pylist(rows, schema=DEVICE_PROBE)
