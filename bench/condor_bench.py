"""Benchmark: history file → canonical job/job_tag batches, next to classad2's own parse.

    .venv/bin/python bench/condor_bench.py --ads 1000000 [--dir /tmp]

Writes a history file of N ads (each a realistic ~60-attribute completed job with tierlens tags,
followed by its banner), then times

* the floor: ``classad2.parseAds`` over the same text with the banners turned into blank lines
  (the one way parseAds reads it correctly), i.e. classad2's parse alone;
* tierlens: ``history_batches`` — read, split on banners, parse each ad with classad2, check it,
  map it and build the Arrow batches (no warehouse load).

Prints records/s for both and peak RSS.
"""

from __future__ import annotations

import argparse
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
            ad = _AD.format(cid=1000 + i, q=start - 600, start=start, end=start + 3600, slot=i % 64,
                            node=i % 500, arm="AB"[i % 2])
            f.write(ad)
            f.write(f'*** Offset = {size} ClusterId = {1000 + i} ProcId = 0 Owner = "atlas" '
                    f"CompletionDate = {start + 3600}\n")
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


def tierlens_parse(path: Path) -> int:
    from tierlens.sources.condor.history import history_batches

    return sum(b.table.num_rows for b in history_batches([path], "bench") if b.kind.value == "job")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ads", type=int, default=100_000)
    p.add_argument("--dir", type=Path, default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "history"
        t = time.perf_counter()
        size = write_history(path, args.ads)
        print(f"wrote {args.ads:,} ads, {size / 1e6:,.0f} MB in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        n = floor_parse(path)
        floor = time.perf_counter() - t
        print(f"classad2.parseAds (floor): {n:,} ads in {floor:.1f} s = {n / floor:,.0f} ads/s")
        t = time.perf_counter()
        n = tierlens_parse(path)
        ours = time.perf_counter() - t
        print(f"tierlens history → Arrow:  {n:,} jobs in {ours:.1f} s = {n / ours:,.0f} records/s "
              f"({ours / floor:.2f}x the floor)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
