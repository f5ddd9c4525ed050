"""Time `tierlens demo` end to end, with peak memory, and each stage on its own.

    .venv/bin/python bench/demo_bench.py              # the default month (what `make demo` runs)
    .venv/bin/python bench/demo_bench.py --days 7

Each stage runs in a child process so its peak RSS is its own. The floor for the simulation
stage is the same generator with its batches dropped instead of loaded: the difference is what
ingest costs on top of producing the data.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERLENS = Path(sys.executable).parent / "tierlens"

GENERATE_ONLY = """
import sys
from tierlens.sources.synthetic import SyntheticOptions, generate
rows = sum(b.table.num_rows for b in generate(SyntheticOptions(days=float(sys.argv[1]))))
print(rows)
"""


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB (of this child alone, via wait4), and its output."""
    with tempfile.TemporaryFile(mode="w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{out}")
    return wall, usage.ru_maxrss / 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=30.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tierlens-demo-bench-") as tmp:
        env = dict(os.environ, TIERLENS_HOME=tmp, COLUMNS="100")
        gen_wall, gen_rss, out = measure([sys.executable, "-c", GENERATE_ONLY, str(args.days)], env)
        rows = int(out.strip().splitlines()[-1])
        demo_wall, demo_rss, out = measure([str(TIERLENS), "demo", "--days", str(args.days)], env)
    print(f"days simulated        {args.days:g}")
    print(f"records generated     {rows:,}")
    print(f"generate only (floor) {gen_wall:7.1f} s   peak RSS {gen_rss:7.0f} MiB")
    print(
        f"tierlens demo         {demo_wall:7.1f} s   peak RSS {demo_rss:7.0f} MiB   "
        f"ratio to floor {demo_wall / gen_wall:.2f}x"
    )
    print("  (demo = simulate + ingest + lake export + dbt build with tests + report + node tests)")


if __name__ == "__main__":
    main()
