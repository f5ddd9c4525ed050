"""Reads under throttled background writes, and the device settings that shape them.

A job reading its input at random while the node's stagers copy the next files in sees its reads
wait behind writes: how long depends on how busy the writes keep the device, on the I/O scheduler
(a deadline or budget scheduler lets reads pass queued writes, ``none`` does not), on whether the
kernel splits an 8 MiB write into smaller requests, and on the page cache (buffered writes are
flushed in bursts by writeback). None of this follows from a datasheet, so the probe measures it:

* ``read_under_write_<mode>_<pct>``: one reader per job slot (128 KiB random reads, one request in
  flight each, as ROOT basket reads) while one writer streams 8 MiB blocks (a stage-in copy)
  throttled with fio's ``rate=`` to ``pct`` % of the run's ``stagein_write`` bandwidth; ``pct`` 0
  runs no writer (the baseline the other points are compared with);
* ``mode`` ``buffered``: readers and writer go through the page cache, as jobs use the file system
  (the reader's files are dropped from the cache first, fio's ``invalidate``); ``direct``: both
  bypass it with O_DIRECT, which shows the device's own queueing. ``direct`` runs only where the
  file system accepts O_DIRECT (tmpfs before Linux 6.6 does not).

The readers' files are laid out once and shared by every point (fio reuses files of the right
size), so the points cost their run time and not a layout each; the writer's file is rewritten in
place (``time_based``). Every row records the latency distribution (mean, p50, p99, p99.9, max of
fio's completion latency) and the writers' target and measured utilisation.

:func:`device_settings` reads what the kernel does with the requests: the I/O scheduler of the block
device under the path (and of its members when it is stacked: md, dm), the file system type and
the online discard (TRIM) setting of its mount, and the device's ``discard_max_bytes``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .jobs import ProbeJob, parse_fio, run_fio

KIB = 1024
MIB = 1024 * KIB
READ_BYTES = 128 * KIB
WRITE_BYTES = 8 * MIB
#: Background write throttles, as fractions of the stage-in write bandwidth the probe measured.
UTILISATIONS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
MODES = ("buffered", "direct")
PREFIX = "read_under_write_"


@dataclass(frozen=True)
class UnderWriteJob:
    mode: str  # buffered | direct
    utilisation: float  # target fraction of the stage-in write bandwidth

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.mode}_{round(self.utilisation * 100):d}"


def jobs(utilisations: tuple[float, ...] = UTILISATIONS, direct: bool = True) -> tuple[UnderWriteJob, ...]:
    """The points to run: each mode (``direct`` only where O_DIRECT works) at each utilisation."""
    modes = MODES if direct else ("buffered",)
    return tuple(UnderWriteJob(m, u) for m in modes for u in sorted(set(utilisations)))


def fio_args(
    job: UnderWriteJob,
    workdir: Path,
    runtime_s: float,
    readers: int,
    file_bytes: int,
    write_bandwidth: float,
    fio: str = "fio",
) -> list[str]:
    """Readers first (their files keep the same names whatever the writer does: fio numbers files
    by job order), then the throttled writer in a reporting group of its own. Half the job's bytes
    go to the readers' files, half to the writer's."""
    per_reader = max(file_bytes // 2 // readers // READ_BYTES, 4) * READ_BYTES
    writer_bytes = max(file_bytes // 2 // WRITE_BYTES, 4) * WRITE_BYTES
    direct = int(job.mode == "direct")
    common = [
        f"--directory={workdir}",
        "--ioengine=psync",
        "--iodepth=1",
        f"--direct={direct}",
        "--time_based=1",
        f"--runtime={max(int(runtime_s * 1000), 500)}ms",
    ]
    args = [
        fio,
        "--output-format=json",
        "--group_reporting=1",
        "--name=readers",
        "--rw=randread",
        f"--bs={READ_BYTES}",
        f"--size={per_reader}",
        f"--numjobs={readers}",
        "--filename_format=uw-reader.$jobnum",
        "--invalidate=1",  # buffered: the first reads come from the device, not the layout's pages
        *common,
    ]
    rate = int(job.utilisation * write_bandwidth)
    if rate > 0:
        args += [
            "--name=writer",
            "--new_group",
            "--rw=write",
            f"--bs={WRITE_BYTES}",
            f"--size={writer_bytes}",
            "--numjobs=1",
            "--filename_format=uw-writer",
            f"--rate=,{rate}",  # read limit empty, write limit in bytes/s
            *common,
        ]
    return args


def parse(text: str, job: UnderWriteJob, write_bandwidth: float) -> dict:
    """The readers' latency distribution and the writer's measured utilisation from fio's JSON."""
    report = json.loads(text)
    groups = {j["jobname"]: j for j in report["jobs"]}
    written = groups["writer"]["write"]["bw_bytes"] if "writer" in groups else 0.0
    return {
        # the readers' group, read side: the same figures as every other job's
        **parse_fio(text, ProbeJob("readers", "randread", READ_BYTES, True)),
        "write_utilisation_target": job.utilisation,
        "write_utilisation": float(written) / write_bandwidth if write_bandwidth > 0 else None,
    }


def run(
    workdir: Path,
    points: tuple[UnderWriteJob, ...],
    runtime_s: float,
    readers: int,
    file_bytes: int,
    write_bandwidth: float,
    fio: str = "fio",
) -> list[dict]:
    """Run every point; device_probe fields per point (the caller adds the run's common fields)."""
    out = []
    try:
        for job in points:
            args = fio_args(job, workdir, runtime_s, readers, file_bytes, write_bandwidth, fio)
            began = time.perf_counter()
            res = run_fio(args, f"job {job.name}", workdir, timeout=runtime_s * 4 + 300)
            out.append(
                {
                    "job_name": job.name,
                    "rw": "randread",
                    "block_size_bytes": READ_BYTES,
                    "queue_depth": 1,
                    "processes": readers,
                    "direct_io": job.mode == "direct",
                    "seconds": time.perf_counter() - began,
                    **parse(res, job, write_bandwidth),
                }
            )
    finally:  # the shared files outlive each point, not the set
        for f in workdir.glob("uw-*"):
            f.unlink()
    return out


# ----------------------------------------------------------------------------- device settings


def _mount_of(path: Path, mountinfo: str) -> tuple[str, str, str] | None:
    """(mount point, fs type, mount and super options) of the longest mount point holding path."""
    best = None
    target = str(path)
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 6 or len(r) < 3:
            continue
        point = f[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, r[0], f"{f[5]},{r[2]}")
    return best


def _discard(options: str) -> str:
    opts = options.split(",")
    for o in opts:
        if o.startswith("discard="):  # btrfs: discard=async / discard=sync
            return o
    return "discard" if "discard" in opts else "off"


def _scheduler(queue: Path) -> str | None:
    try:
        text = (queue / "scheduler").read_text()
    except OSError:
        return None
    chosen = [w.strip("[]") for w in text.split() if w.startswith("[")]
    return chosen[0] if chosen else text.strip() or None


def _block_device(path: Path, sys_root: Path) -> Path | None:
    """/sys/block/DEV of the whole device under path (the parent of a partition); None when the
    file system is on no block device (tmpfs, overlay, NFS)."""
    st = os.stat(path)
    link = sys_root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        dev = link.resolve(strict=True)
    except OSError:
        return None
    if not (dev / "queue").is_dir() and (dev.parent / "queue").is_dir():
        dev = dev.parent  # a partition: the queue belongs to its disk
    return dev if (dev / "queue").is_dir() else None


def device_settings(path: Path, sys_root: Path = Path("/sys"), mountinfo: str | None = None) -> dict:
    """io_scheduler, filesystem, discard and discard_max_bytes of the device under ``path``."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            mountinfo = ""
    mount = _mount_of(path.resolve(), mountinfo)
    out: dict = {
        "filesystem": mount[1] if mount else None,
        "discard": _discard(mount[2]) if mount else None,
        "io_scheduler": None,
        "discard_max_bytes": None,
    }
    dev = _block_device(path, sys_root)
    if dev is None:
        return out
    sched = _scheduler(dev / "queue")
    # md and dm pass requests on to their members, whose schedulers order them
    members = sorted((dev / "slaves").iterdir()) if (dev / "slaves").is_dir() else []
    parts = []
    for m in members:
        mdev = m.resolve()
        if not (mdev / "queue").is_dir() and (mdev.parent / "queue").is_dir():
            mdev = mdev.parent
        parts.append(f"{mdev.name}: {_scheduler(mdev / 'queue')}")
    out["io_scheduler"] = "; ".join([str(sched)] + parts) if parts else sched
    try:
        out["discard_max_bytes"] = int((dev / "queue" / "discard_max_bytes").read_text().strip())
    except (OSError, ValueError):
        pass
    return out
