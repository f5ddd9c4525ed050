"""The hourly transform's peak memory and time under DuckDB memory limits.

    .venv/bin/python bench/memory_limit_bench.py WAREHOUSE --limits 19GB 4GB 3GB 2GB

For each limit (TIERLENS_DUCKDB_MEMORY_LIMIT, DuckDB's `memory_limit`; 19GB is about DuckDB's own
default on this 24 GB host, 80 % of its memory) a copy of WAREHOUSE is transformed by a plain incremental ``tierlens transform``, which
rebuilds each incremental model's lookback window as an hourly run does. Prints, per limit, the
wall time, the peak RSS of the whole process tree (dbt, DuckDB, the Python models) and the
1-minute load average before and after, and the ratio of each to the first limit. The copies live
beside WAREHOUSE (--work to put them elsewhere) and are deleted after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from proctree import PeakSampler  # bench/, beside this script

TIERLENS = str(Path(sys.executable).parent / "tierlens")


def _load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def one(warehouse: Path, work: Path, limit: str) -> dict:
    copy = work / f"memory-limit-{limit}.duckdb"
    shutil.copyfile(warehouse, copy)
    home = work / f"home-{limit}"
    env = dict(os.environ, TIERLENS_HOME=str(home), TIERLENS_DUCKDB_MEMORY_LIMIT=limit)
    before = _load1()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [TIERLENS, "transform", "-w", str(copy)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    with PeakSampler(proc) as peak:
        out, _ = proc.communicate()
    wall = time.perf_counter() - start
    copy.unlink(missing_ok=True)
    shutil.rmtree(home, ignore_errors=True)
    for tmp in work.glob(copy.name + "*"):
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink()
    if proc.returncode != 0:
        return {"limit": limit, "failed": out[-2000:]}
    return {
        "limit": limit,
        "wall_s": round(wall, 1),
        "peak_mib": round(peak.peak_mib),
        "load_before": before,
        "load_after": _load1(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("warehouse", type=Path)
    ap.add_argument("--limits", nargs="+", default=["19GB", "4GB", "3GB", "2GB"])
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    work = args.work or args.warehouse.parent
    rows = [one(args.warehouse, work, limit) for limit in args.limits]
    first = next((r for r in rows if "wall_s" in r), None)
    for r in rows:
        if "wall_s" in r and first:
            r["wall_ratio"] = round(r["wall_s"] / first["wall_s"], 2)
            r["peak_ratio"] = round(r["peak_mib"] / first["peak_mib"], 2)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
