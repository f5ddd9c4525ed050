"""Cache simulator speed: tierlens' compiled replay against libCacheSim, one core each.

    .venv/bin/python bench/sim_bench.py                    # 20 M requests, 1 M files, Zipf 0.9
    .venv/bin/python bench/sim_bench.py --requests 2000000 # quick look
    .venv/bin/python bench/sim_bench.py --only lru --only cachesim-lru --repeat 3

The trace is generated once, seeded, as a libCacheSim oracleGeneral file in bench/out/sim/ (git
ignored): Zipf(alpha) popularity over ``--files`` files (rank -> id by a random permutation),
log-normal sizes (median 200 MB, below 4 GiB so oracleGeneral's uint32 holds them), opens spread
evenly over 30 days. Each measurement runs in its own child process pinned to one CPU; the
child times only the replay (trace loading and JIT loading excluded: the kernels are compiled
once and cached on disk, and a warm-up call on 1000 requests loads them), the parent takes the
child's peak RSS from ``os.wait4``. The cache holds 10 % of the trace's distinct bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NO_HITS = np.zeros(0, np.int8)  # the replay benchmark does not ask for per-request hit flags
OUT = HERE / "out" / "sim"
sys.path.insert(0, str(HERE.parent / "pipelines"))

MEASURES = ("lru", "fifo", "s3fifo", "lfu", "belady", "slac2", "slac3", "mrc100", "cachesim-lru", "cachesim-fifo")


def make_trace(n: int, files: int, alpha: float, seed: int) -> Path:
    from tierlens.simulator.trace import ORACLE_DTYPE

    path = OUT / f"zipf-{n}-{files}-{alpha}-{seed}.oracleGeneral"
    if path.exists():
        return path
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, files + 1) ** alpha
    cdf = np.cumsum(w) / w.sum()
    rank = np.searchsorted(cdf, rng.random(n))
    ids = rng.permutation(files)[np.minimum(rank, files - 1)]
    sizes = np.clip(rng.lognormal(np.log(2e8), 1.0, files), 1e5, 4.2e9).astype(np.uint32)
    rec = np.empty(n, ORACLE_DTYPE)
    rec["time"] = (1.7e9 + np.sort(rng.uniform(0, 30 * 86400, n))).astype(np.uint32)
    rec["obj"] = ids.astype(np.uint64)
    rec["size"] = sizes[ids]
    from tierlens.simulator.kernels import next_access_kernel

    rec["next"] = next_access_kernel(ids.astype(np.int32), files)
    tmp = path.with_suffix(".tmp")
    rec.tofile(tmp)
    tmp.replace(path)
    return path


def child(measure: str, path: Path) -> dict:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    rec_n = path.stat().st_size // 24
    if measure.startswith("cachesim"):
        import libcachesim as lcs

        from tierlens.simulator.trace import ORACLE_DTYPE

        rec = np.fromfile(path, ORACLE_DTYPE)
        _, first = np.unique(rec["obj"], return_index=True)
        cap = int(rec["size"][first].astype(np.int64).sum() // 10)
        del rec
        cls = {"cachesim-lru": lcs.LRU, "cachesim-fifo": lcs.FIFO}[measure]
        cache = cls(cap)
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        t, c = time.perf_counter(), time.thread_time()
        mr, bmr = cache.process_trace(reader)
        dt, dc = time.perf_counter() - t, time.thread_time() - c
        return {"requests": rec_n, "seconds": dt, "cpu_seconds": dc, "hit_ratio": 1 - mr, "byte_hit_ratio": 1 - bmr}
    from tierlens.simulator import engine, kernels
    from tierlens.simulator.trace import next_access, read_oracle

    tr = read_oracle(path)
    if measure.startswith("slac"):
        rng = np.random.default_rng(1)
        tr.read = (tr.size * rng.uniform(0.05, 1.0, len(tr))).astype(np.int64)
    osize = engine.object_sizes(tr)
    cap = np.int64(osize.sum() // 10)
    t0, hr, nh = engine.hours(tr)
    args = None
    if measure in ("lru", "fifo"):
        fn, args = kernels.lru_kernel, (tr.obj, osize, tr.read, hr, nh, cap, measure == "lru", NO_HITS)
    elif measure == "s3fifo":
        fn, args = kernels.s3fifo_kernel, (tr.obj, osize, tr.read, hr, nh, cap, 0.1, NO_HITS)
    elif measure == "lfu":
        fn, args = kernels.lfu_kernel, (tr.obj, osize, tr.read, hr, nh, cap, NO_HITS)
    elif measure == "belady":
        fn, args = kernels.belady_kernel, (tr.obj, osize, tr.read, hr, nh, cap, next_access(tr.obj), NO_HITS)
    elif measure.startswith("slac"):
        algo = int(measure[-1])
        up_o, up_s = engine.upcoming(tr) if algo == 3 else (np.zeros(0, np.int64), np.zeros(0))
        trace = kernels.SlacTrace(tr.time, tr.obj, osize, tr.read, hr, nh, t0, up_o, up_s)
        policy = kernels.SlacPolicy(
            cap, algo, 5, 0.02, 5 * 86400.0, 12 * 3600.0, 10, 1200.0 if algo == 3 else 3600.0, 0.1
        )
        fn, args = kernels.slac_kernel, (trace, policy, NO_HITS)
    elif measure == "mrc100":
        sizes = engine.log_sizes(int(osize.max()), int(osize.sum()), 100)
        fn, args = kernels.mrc_kernel, (tr.obj, osize, tr.read, sizes)
    # warm-up: load the cached machine code on a small slice
    small = [a[:1000] if isinstance(a, np.ndarray) and a.shape[:1] == tr.obj.shape else a for a in args]
    if measure.startswith("slac"):
        small[0] = args[0]._replace(
            time=tr.time[:1000],
            obj=tr.obj[:1000],
            read=tr.read[:1000],
            hr=hr[:1000],
            up_order=np.zeros(0, np.int64),
            up_start=np.zeros(0, np.float64),
        )
    fn(*small)
    t, c = time.perf_counter(), time.thread_time()
    out = fn(*args)
    dt, dc = time.perf_counter() - t, time.thread_time() - c
    res = {"requests": len(tr), "seconds": dt, "cpu_seconds": dc}
    if measure == "mrc100":
        res["sizes"] = len(args[3])
        res["hit_ratio_at_10pct"] = float(out[0][np.searchsorted(args[3], cap)] / len(tr))
    else:
        res["hit_ratio"] = float(out[0].sum() / len(tr))
        res["byte_hit_ratio"] = float(out[1].sum() / tr.read.sum())
    return res


def run(measure: str, path: Path) -> dict:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", measure, "--trace", str(path)], stdout=subprocess.PIPE, text=True
    )
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{measure} failed ({proc.returncode})")
    res = json.loads(out.strip().splitlines()[-1])
    res.update(measure=measure, peak_rss_mib=ru.ru_maxrss / 1024, cpu_s=ru.ru_utime + ru.ru_stime)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000_000)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--alpha", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", action="append", choices=MEASURES)
    ap.add_argument("--child")
    ap.add_argument("--trace", type=Path)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.trace)))
        return
    path = make_trace(a.requests, a.files, a.alpha, a.seed)
    best: dict[str, dict] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(a.repeat):
        for m in a.only or MEASURES:
            r = run(m, path)
            loads.append(os.getloadavg()[0])
            if m not in best or r["cpu_seconds"] < best[m]["cpu_seconds"]:
                best[m] = r
            print(
                f"{m:14s} {r['requests'] / r['cpu_seconds'] / 1e6:7.2f} M req/CPU-s  "
                f"{r['requests'] / r['seconds'] / 1e6:7.2f} M req/s wall  {r['seconds']:6.2f} s  "
                f"peak RSS {r['peak_rss_mib']:6.0f} MiB  hit ratio {r.get('hit_ratio', r.get('hit_ratio_at_10pct')):.4f}",
                flush=True,
            )
    print(
        f"\nbest of {a.repeat}; load average (1 min) during the run: {min(loads):.1f}-{max(loads):.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    print(
        "| measurement | M requests per CPU-s | replay CPU | replay wall | peak RSS | hit ratio |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    for m, r in best.items():
        hr = r.get("hit_ratio", r.get("hit_ratio_at_10pct"))
        print(
            f"| {m} | {r['requests'] / r['cpu_seconds'] / 1e6:.2f} | {r['cpu_seconds']:.2f} s | {r['seconds']:.2f} s | "
            f"{r['peak_rss_mib']:.0f} MiB | {hr:.4f} |"
        )
    for p in ("lru", "fifo"):
        if p in best and f"cachesim-{p}" in best:
            print(
                f"{p.upper()} speed-up over libCacheSim: "
                f"{best[f'cachesim-{p}']['cpu_seconds'] / best[p]['cpu_seconds']:.1f}x CPU, "
                f"{best[f'cachesim-{p}']['seconds'] / best[p]['seconds']:.1f}x wall"
            )
    (OUT / "last.json").write_text(json.dumps(best, indent=1))


if __name__ == "__main__":
    main()
