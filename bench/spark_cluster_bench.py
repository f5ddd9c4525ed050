"""Cluster benchmark: the hourly cycle on a Spark standalone cluster beside DuckDB, on the same data.

    nice -n 19 .venv/bin/python bench/spark_cluster_bench.py --days 7 --jobs-per-day 2000 --cores 1000 --label dev-7d
    nice -n 19 .venv/bin/python bench/spark_cluster_bench.py --days 30 --jobs-per-day 2000 --cores 1000 --label dev-30d

The site is the scale bench's (``tierlens.sources.synthetic.bulk``, the ``arriving`` order), loaded
by bench/lake_hour_bench.py's children. Steps, each in a child process timed with its peak memory
(its process tree) and the 1-minute load average before and after:

1. back-fill: ``--days`` days of arrivals into the DuckDB warehouse; the first publish exports the
   lake;
2. the first builds: ``dbt build`` of the whole project, models only (the tests' cost is their
   own question), on DuckDB (the warehouse, as ``tierlens transform`` builds it) and on the
   cluster (``spark_thrift``, from the lake);
3. ``--hours`` hours: the hour's arrivals loaded (untimed), ``append_lake`` (timed: the ingest
   DAG's publish on a Spark target), then the same incremental build on each engine.

The cluster is tests/support/spark_cluster.py's, started here: a master, two one-core workers
(768 MiB executors) and the Thrift server (1 GiB driver), with the small-host JVM options make test
uses. A dbt build on it runs in the JVMs, not in the dbt process, so beside each cluster build a
sampler sums the resident memory of every JVM of the cluster (each daemon's process tree: the
workers' executors are their children) and keeps its peak.

Results go to bench/spark/<label>.json; data stays in --work (default /tmp/tierlens-spark-bench).
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from lake_hour_bench import START, _child, child_append, child_export, child_load  # bench/, beside this script
from proctree import tree_rss_kib
from scale_bench import _load1, measure

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "spark"
#: the dbt build both engines run: models only
MODELS_ONLY = ["--exclude-resource-type", "test"]


def child_build(args: argparse.Namespace) -> dict:
    """One ``dbt build`` (models only) on ``--target``: duckdb from the warehouse, spark_thrift from
    the lake (the cluster named by TIERLENS_SPARK_HOST/PORT in the environment)."""
    from tierlens.transform import run_dbt

    spark = args.target != "duckdb"
    start = time.perf_counter()
    result = run_dbt(
        Path(args.warehouse) if not spark else Path(args.work) / "unused.duckdb",
        Path(args.state),
        "build",
        MODELS_ONLY,
        target=args.target,
        lake=Path(args.lake) if spark else None,
    )
    if not result.success:
        raise SystemExit(f"dbt build on {args.target} failed: " + "; ".join(result.failures)[:3000])
    return {"seconds": time.perf_counter() - start, "models": result.models}


CHILDREN = {"load": child_load, "export": child_export, "append": child_append, "build": child_build}


class ClusterMemory:
    """The summed resident memory of every JVM of ``cluster`` (each daemon's process tree), sampled
    every ``every`` seconds on a thread; ``peak_mib()`` and ``reset()`` per step."""

    def __init__(self, cluster, every: float = 0.5) -> None:
        self.cluster, self.every, self.peak_kib = cluster, every, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _pids(self) -> list[int]:
        daemons = [self.cluster.master, self.cluster.thrift, *self.cluster.worker_daemons.values()]
        return [d.proc.pid for d in daemons if d is not None and d.alive()]

    def now_kib(self) -> int:
        return sum(tree_rss_kib(pid) for pid in self._pids())

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak_kib = max(self.peak_kib, self.now_kib())
            time.sleep(self.every)

    def reset(self) -> None:
        self.peak_kib = self.now_kib()

    def peak_mib(self) -> float:
        return self.peak_kib / 1024

    def __enter__(self) -> ClusterMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def _step(args: argparse.Namespace, name: str, step: str, env: dict[str, str], jvms: ClusterMemory | None = None, **kw):
    logs = args.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if jvms is not None:
        jvms.reset()
    m = measure(_child(args, step, __file__, **kw), env, logs / f"{name}.log")
    out = {"wall_s": m.wall_s, "peak_mib": m.peak_mib, "load_before": m.load_before, "load_after": m.load_after}
    out.update(m.detail)
    cluster = ""
    if jvms is not None:
        out["cluster_jvms_peak_mib"] = jvms.peak_mib()
        cluster = f", cluster JVMs peak {out['cluster_jvms_peak_mib']:,.0f} MiB"
    print(
        f"{name}: {m.wall_s:.1f} s, peak {m.peak_mib:,.0f} MiB{cluster}, load {m.load_before}-{m.load_after}",
        flush=True,
    )
    return out


def _builds(args, name: str, env: dict[str, str], jvms: ClusterMemory) -> dict:
    wh, lake = str(args.work / "warehouse.duckdb"), str(args.work / "lake")
    return {
        "duckdb": _step(
            args, f"{name}-duckdb", "build", env, target="duckdb", warehouse=wh, state=str(args.work / "dbt-duckdb")
        ),
        "cluster": _step(
            args,
            f"{name}-cluster",
            "build",
            env,
            jvms,
            target="spark_thrift",
            lake=lake,
            state=str(args.work / "dbt-spark"),
        ),
    }


def run(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from support.spark_cluster import SparkCluster

    work: Path = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    wh, lake = str(work / "warehouse.duckdb"), str(work / "lake")
    end = START + timedelta(days=args.days)
    results: dict = {
        "label": args.label,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "site": {"days": args.days, "jobs_per_day": args.jobs_per_day, "cores": args.cores},
        "cpus": os.cpu_count(),
    }
    env = dict(os.environ)
    results["backfill"] = _step(
        args, "backfill", "load", env, warehouse=wh, start=START.isoformat(), end=end.isoformat(), with_nodes=""
    )
    results["export_first"] = _step(args, "export-first", "export", env, warehouse=wh, lake=lake)
    cluster = SparkCluster(work / "cluster")
    started = time.monotonic()
    cluster.start()
    results["cluster_start_s"] = time.monotonic() - started
    env |= cluster.thrift_env()
    try:
        with ClusterMemory(cluster) as jvms:
            results["cluster_idle_mib"] = jvms.now_kib() / 1024
            results["first"] = _builds(args, "first", env, jvms)
            hours = []
            for h in range(args.hours):
                t0, t1 = end + timedelta(hours=h), end + timedelta(hours=h + 1)
                loaded = _step(
                    args, f"load-hour-{h}", "load", env, warehouse=wh, start=t0.isoformat(), end=t1.isoformat()
                )
                hour = {"rows_loaded": loaded["rows_loaded"]}
                hour["append"] = _step(args, f"append-hour-{h}", "append", env, warehouse=wh, lake=lake)
                hour |= _builds(args, f"hour-{h}", env, jvms)
                hours.append(hour)
            results["hours"] = hours
    finally:
        cluster.stop()
    results["load1_end"] = _load1()
    results["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return results


def table(results: dict) -> str:
    """The README's rows: per step, DuckDB against the cluster (seconds, peak MiB)."""
    rows = ["| step | DuckDB s | DuckDB peak MiB | cluster s | cluster JVMs peak MiB | cluster / DuckDB | load |"]
    rows.append("|---|---|---|---|---|---|---|")
    steps = [("first build", results["first"])] + [(f"hour {n + 1}", h) for n, h in enumerate(results["hours"])]
    for name, s in steps:
        d, c = s["duckdb"], s["cluster"]
        rows.append(
            f"| {name} | {d['wall_s']:.1f} | {d['peak_mib']:,.0f} | {c['wall_s']:.1f} | "
            f"{c['cluster_jvms_peak_mib']:,.0f} | {c['wall_s'] / d['wall_s']:.1f}× | "
            f"{d['load_before']}-{c['load_after']} |"
        )
    appends = ", ".join(f"{h['append']['wall_s']:.1f}" for h in results["hours"])
    rows.append(f"\nlake append per hour (s, the child process): {appends}")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=30, help="history loaded before the hours")
    ap.add_argument("--hours", type=int, default=3, help="hourly cycles timed")
    ap.add_argument("--jobs-per-day", type=int, default=2000)
    ap.add_argument("--cores", type=int, default=1000)
    ap.add_argument("--label", default="dev-30d")
    ap.add_argument("--work", type=Path, default=Path("/tmp/tierlens-spark-bench"))
    ap.add_argument("--child", choices=sorted(CHILDREN))
    for name in ("warehouse", "lake", "start", "end", "target", "state"):
        ap.add_argument(f"--{name}")
    ap.add_argument("--with-nodes", action="store_true")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    results = run(args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
