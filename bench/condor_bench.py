"""Benchmark: history file → canonical job/job_tag batches, next to classad2's own parse.

    .venv/bin/python bench/condor_bench.py --ads 1000000 [--dir /tmp]

Writes a history file of N ads (each a realistic ~60-attribute completed job with tierlens tags,
followed by its banner), then times

* the floor: ``classad2.parseAds`` over the same text with the banners turned into blank lines
  (the one way parseAds reads it correctly), i.e. classad2's parse alone;
* tierlens: ``history_batches`` — read a block at a time, one compiled pass over its bytes for
  the lines, names and values, check and pivot the needed literals by ad without classad2 (``fast.read_block``;
  classad2 only for an ad where a needed value is an expression or a line does not parse), map
  them as column expressions and build the Arrow batches (no warehouse load). ``--classad2-path``
  also times the same with classad2 reading every ad.

Prints ads/s (wall and CPU) for each, their ratios, peak RSS and the load average. Both sides'
modules are imported before the timing starts.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

_AD = """Arguments = "-c 'run.sh --events 1000' --seed {cid}"
BlockReadKbytes = 204800
BlockWriteKbytes = 10240
BytesRecvd = 1234567.0
BytesSent = 7654321.0
ClusterId = {cid}
Cmd = "/home/atlas/pilot/runpilot2-wrapper.sh"
CommittedSlotTime = 14400.0
CommittedSuspensionTime = 0
CommittedTime = 3600
CompletionDate = {end}
CpusProvisioned = 4
CumulativeRemoteSysCpu = 320.0
CumulativeRemoteUserCpu = 12000.0
CumulativeSlotTime = 14400.0
DiskProvisioned = 20971520
DiskUsage = 1250000
EnteredCurrentStatus = {end}
Environment = "XRD_MONINFO=htcondor.bench.ap01.example.org#{cid}.0#{q} HOME=/home/atlas"
ExitBySignal = false
ExitCode = 0
GlobalJobId = "ap01.example.org#{cid}.0#{q}"
ImageSize = 2000000
Iwd = "/home/atlas/work/{cid}"
JobCurrentStartDate = {start}
JobPrio = 0
JobRunCount = 1
JobStartDate = {start}
JobStatus = 4
JobUniverse = 5
LastJobStatus = 2
LastRemoteHost = "slot1_{slot}@wn{node:03d}.example.org"
LastRemoteWallClockTime = 3600.0
MachineAttrCpus0 = 4
MachineAttrSlotWeight0 = 4
MachineAttrTierlensAbArm0 = "{arm}"
MachineAttrTierlensCacheRoute0 = "cache:xcache01.example.org:1094"
MachineAttrTierlensNodeSlots0 = 64
MachineAttrTierlensScratchDevices0 = {{ "ST2000NM0055-1V4104", "WDC WD2003FZEX-00SRLA0" }}
MachineAttrTierlensScratchPath0 = "/var/lib/condor/execute"
MachineAttrTierlensStorageType0 = "raid0"
MemoryProvisioned = 8192
NumJobStarts = 1
NumShadowStarts = 1
Owner = "atlas"
AccountingGroup = "group_atlas.prod.atlas"
ProcId = 0
QDate = {q}
RemoteSysCpu = 320.0
RemoteUserCpu = 12000.0
RemoteWallClockTime = 3600.0
RequestCpus = 4
RequestDisk = 20971520
RequestMemory = 8192
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)
TierlensCluster = "bench"
TierlensJobIdentity = "htcondor.bench.ap01.example.org#{cid}.0#{q}"
TransferInputStats = [ CedarFilesCount = 2; CedarSizeBytes = 123456 ]
User = "atlas@example.org"
x509UserProxyVOName = "atlas"
"""


def write_history(path: Path, n: int) -> int:
    t0 = 1794816000
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            start = t0 + i
            ad = _AD.format(
                cid=1000 + i, q=start - 600, start=start, end=start + 3600, slot=i % 64, node=i % 500, arm="AB"[i % 2]
            )
            f.write(ad)
            f.write(
                f'*** Offset = {size} ClusterId = {1000 + i} ProcId = 0 Owner = "atlas" '
                f"CompletionDate = {start + 3600}\n"
            )
            size += len(ad.encode()) + 0  # approximate is fine for the banner
    return path.stat().st_size


def floor_parse(path: Path) -> int:
    import classad2

    n = 0
    chunk: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("*** "):
                chunk.append("\n")
                if len(chunk) > 200_000:
                    n += sum(1 for _ in classad2.parseAds("".join(chunk)))
                    chunk = []
                continue
            chunk.append(line)
    if chunk:
        n += sum(1 for _ in classad2.parseAds("".join(chunk)))
    return n


def tierlens_parse(path: Path, fast: bool = True) -> int:
    from tierlens.sources.condor.history import history_batches

    return sum(b.table.num_rows for b in history_batches([path], "bench", fast=fast) if b.kind.value == "job")


def _measure(label: str, fn, floor: tuple[float, float] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of fn(); the machine is shared, so CPU is the steadier figure."""
    w, c = time.perf_counter(), time.process_time()
    n = fn()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ratio = f" = {floor[0] / wall:.2f}x the floor's ads/s wall, {floor[1] / cpu:.2f}x CPU" if floor else ""
    print(
        f"{label}: {n:,} ads in {wall:.1f} s wall ({n / wall:,.0f}/s), {cpu:.1f} s CPU "
        f"({n / cpu:,.0f}/s){ratio}; peak RSS so far {rss:,.0f} MB; load {os.getloadavg()[0]:.2f}"
    )
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ads", type=int, default=100_000)
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument(
        "--classad2-path", action="store_true", help="also time tierlens with every ad read by classad2 (fast=False)"
    )
    args = p.parse_args()
    # imports are not parsing: both sides' modules are loaded before anything is timed
    import classad2  # noqa: F401

    import tierlens.sources.condor.history  # noqa: F401

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "history"
        t = time.perf_counter()
        size = write_history(path, args.ads)
        print(f"wrote {args.ads:,} ads, {size / 1e6:,.0f} MB in {time.perf_counter() - t:.1f} s")
        # tierlens first: peak RSS is the process's high-water mark, and the floor's chunks are larger
        ours = _measure("tierlens history -> Arrow (fast path)", lambda: tierlens_parse(path))
        floor = _measure("classad2.parseAds (floor)", lambda: floor_parse(path))
        print(
            f"tierlens fast path: {floor[0] / ours[0]:.2f}x the floor's ads/s (wall), {floor[1] / ours[1]:.2f}x (CPU)"
        )
        if args.classad2_path:
            _measure(
                "tierlens history -> Arrow (classad2 for every ad)", lambda: tierlens_parse(path, fast=False), floor
            )


if __name__ == "__main__":
    main()
