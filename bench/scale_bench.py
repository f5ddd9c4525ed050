"""Scale benchmark: a 10,000-core Tier-2's history, back-filled, then run hour by hour.

    .venv/bin/python bench/scale_bench.py                                  # 1 month, then 12 months
    .venv/bin/python bench/scale_bench.py --history-days 30 365 1461       # and 48 months
    .venv/bin/python bench/scale_bench.py --history-days 2 4 --hours 2 --label dev   # a quick look

The site's records come from ``tierlens.sources.synthetic.bulk`` (numpy and Arrow, ~20,000 jobs
with steps and tags and ~300,000 file accesses a day, cache accesses with g-stream fields and the
origin fills of their misses, a site change every 45 days recorded days late), in the order a real
site delivers them: a job when it ends, an access when it closes, a change when it is recorded.

For each history length (days since the site's first day):

1. back-fill: every record arriving since the previous point is loaded through the warehouse's
   loader (validation and rejects as for any source), then ``tierlens transform`` builds the marts
   (``tierlens transform --backfill START END`` where the installed tierlens has it) and publishes;
2. ``--hours`` hourly runs, each what the hourly DAGs do: load the hour's Parquet files (written
   beforehand, untimed, as the collector and sacct would have), ``tierlens transform``, publish;
3. disk: the warehouse file per million jobs (whole jobs; with their steps, tags, accesses and
   marts), and the raw job table's own blocks per million jobs beside Open XDMoD's ~300 MB;
4. every bundled sql/ query, timed on the published snapshot.

Every timed step runs in a child process; its peak memory is the largest resident set of the
whole process tree (the child, dbt, anything dbt starts), sampled every 0.1 s from /proc. The
1-minute load average is recorded before and after each step: on a shared machine a figure is
only as good as the load beside it. Results go to bench/scale/<label>.json; big data stays in
--work (default /var/tmp/tierlens-scale-data). Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from proctree import PeakSampler  # bench/, beside this script

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "scale"
TIERLENS = (
    [sys.executable, "-m", "tierlens.cli"]
    if not (Path(sys.executable).parent / "tierlens").exists()
    else [str(Path(sys.executable).parent / "tierlens")]
)
#: Open XDMoD's hardware-requirements page: ~300 MB of disk per million jobs (jobs only).
XDMOD_MB_PER_MILLION_JOBS = 300.0
#: dbt's max_wall_days + job_lateness_days (their defaults): how far before a back-fill's new
#: records the days they change can lie
BACKFILL_MARGIN_DAYS = 9
TARGETS = {
    "hourly_wall_s": 60.0,
    "hourly_peak_mib": 4096.0,
    "hourly_ratio": 1.3,
    "backfill_peak_mib": 8192.0,
    "query_s": 5.0,
}


# ----------------------------------------------------------------------------- measuring a child


@dataclass
class Measured:
    """One timed child process: wall seconds, peak RSS of its tree, load before and after."""

    wall_s: float
    peak_mib: float
    load_before: float
    load_after: float
    detail: dict = field(default_factory=dict)


def _load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def measure(argv: list[str], env: dict[str, str], log: Path) -> Measured:
    """Run ``argv`` and sample its process tree; the child's last stdout line is JSON detail."""
    before = _load1()
    with open(log, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        with PeakSampler(proc) as sampled:
            out, _ = proc.communicate()
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... failed ({proc.returncode}): see {log}\n{out[-2000:]}")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return Measured(wall, sampled.peak_mib, before, _load1(), json.loads(lines[-1]) if lines else {})


# ----------------------------------------------------------------------------- the child steps


def _site(args: argparse.Namespace):
    from tierlens.sources.synthetic.bulk import BulkSite

    return BulkSite(jobs_per_day=args.jobs_per_day, cores=args.cores)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def _transform(warehouse: Path, backfill: tuple[datetime, datetime] | None = None, days_per_run: int = 1) -> float:
    """``tierlens transform`` (it publishes); with a back-fill window where the CLI offers one."""
    argv = [*TIERLENS, "transform", "-w", str(warehouse)]
    if (
        backfill is not None
        and "--backfill" in subprocess.run([*TIERLENS, "transform", "--help"], capture_output=True, text=True).stdout
    ):
        # UTC days [START, END): every day the window touches
        last = (backfill[1] - timedelta(microseconds=1)).date()
        argv += [
            "--backfill",
            backfill[0].date().isoformat(),
            (last + timedelta(days=1)).isoformat(),
            "--days",
            str(days_per_run),
        ]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def child_backfill(args: argparse.Namespace) -> dict:
    """Load every record arriving in [--start, --end) a day at a time, then transform and publish."""
    from tierlens.pipeline import ingest
    from tierlens.sources.synthetic.bulk import arriving

    site, t0, t1 = _site(args), _when(args.start), _when(args.end)
    rows, rejected, load_s = 0, 0, 0.0
    first = True
    day = t0
    while day < t1:
        nxt = min(t1, datetime.combine(day.date() + timedelta(days=1), datetime.min.time(), timezone.utc))
        start = time.perf_counter()
        summary = ingest(arriving(site, day, nxt, with_nodes=first and args.with_nodes), Path(args.warehouse))
        load_s += time.perf_counter() - start
        rows += sum(summary.rows_loaded.values())
        rejected += summary.total_rejected
        first, day = False, nxt
    # A record arriving in [t0, t1) can belong to an earlier day (an access opened before midnight,
    # a job's accesses up to its wall time before its record): the back-fill starts that much
    # earlier, as a site back-filling a new stretch of history would (dbt/README.md).
    margin = timedelta(days=1 if args.with_nodes else BACKFILL_MARGIN_DAYS)
    transform_s = _transform(Path(args.warehouse), (t0 - margin, t1), args.backfill_days)
    return {
        "rows_loaded": rows,
        "rows_rejected": rejected,
        "generate_and_load_s": load_s,
        "transform_and_publish_s": transform_s,
    }


def child_write_hour(args: argparse.Namespace) -> dict:
    """Write the records arriving in one hour as Parquet files, one per kind (untimed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tierlens.sources.synthetic.bulk import arriving

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    tables: dict[str, list] = {}
    for batch in arriving(_site(args), _when(args.start), _when(args.end)):
        tables.setdefault(batch.kind.value, []).append(batch.table)
    counts = {}
    for kind, parts in tables.items():
        table = pa.concat_tables(parts)
        pq.write_table(table, out / f"{kind}.parquet")
        counts[kind] = table.num_rows
    return counts


def child_hour(args: argparse.Namespace) -> dict:
    """One hourly run: load the hour's files (as `tierlens load` does), transform, publish."""
    from tierlens.pipeline import ingest, parquet_batches
    from tierlens.records import RecordKind

    start = time.perf_counter()
    loaded = rejected = 0
    for path in sorted(Path(args.dir).glob("*.parquet")):
        kind = RecordKind(path.stem)
        summary = ingest(parquet_batches(kind, [path], direct=True), Path(args.warehouse))
        loaded += sum(summary.rows_loaded.values())
        rejected += summary.total_rejected
    load_s = time.perf_counter() - start
    transform_s = _transform(Path(args.warehouse))
    out = {"rows_loaded": loaded, "rows_rejected": rejected, "load_s": load_s, "transform_and_publish_s": transform_s}
    out.update(_publish_detail(Path(args.warehouse)))
    out.update(_dbt_seconds())
    return out


def _dbt_seconds() -> dict:
    """Seconds per model, and of all tests, from the transform's dbt run_results.json."""
    path = Path(os.environ.get("TIERLENS_HOME", "")) / "dbt" / "target" / "run_results.json"
    try:
        results = json.loads(path.read_text())["results"]
    except (OSError, ValueError, KeyError):
        return {}
    models = {
        r["unique_id"].split(".")[-1]: round(r["execution_time"], 2)
        for r in results
        if r["unique_id"].startswith("model.")
    }
    tests = sum(r["execution_time"] for r in results if r["unique_id"].startswith("test."))
    return {"dbt_model_s": models, "dbt_tests_s": round(tests, 2)}


def _publish_detail(warehouse: Path) -> dict:
    """What the transform's publish did (seconds, bytes written, how it found them), where the
    installed tierlens records it."""
    try:
        from tierlens.warehouse.publish import last_publish
    except ImportError:
        return {}
    stats = last_publish(warehouse)
    if stats is None:
        return {}
    keep = ("seconds", "bytes_written", "file_bytes", "compared_by", "slot_bytes_read")
    return {"publish": {k: getattr(stats, k) for k in keep if hasattr(stats, k)}}


def child_queries(args: argparse.Namespace) -> dict:
    """Each bundled query on the published snapshot, read-only, as `tierlens sql NAME` runs it."""
    import duckdb

    from tierlens.resources import bundled_queries
    from tierlens.warehouse.publish import reader_path

    con = duckdb.connect(str(reader_path(Path(args.warehouse))), read_only=True)
    times = {}
    try:
        for q in bundled_queries():
            start = time.perf_counter()
            rows = con.execute(q.path.read_text()).fetchall()
            times[q.name] = {"s": time.perf_counter() - start, "rows": len(rows)}
    finally:
        con.close()
    return times


def child_disk(args: argparse.Namespace) -> dict:
    """Sizes on disk and what they hold, from the published snapshot."""
    import duckdb

    from tierlens.warehouse.publish import published_path

    wh = Path(args.warehouse)
    snap = published_path(wh)
    con = duckdb.connect(str(snap), read_only=True)
    try:
        jobs, rows_job = con.execute(
            "select count(*) filter (where step_id = ''), count(*) from main.raw_job"
        ).fetchone()
        accesses = con.execute("select count(*) from main.raw_file_access").fetchone()[0]
        block = con.execute("select block_size from pragma_database_size()").fetchone()[0]

        def blocks(table: str) -> int:
            return con.execute(
                f"select count(distinct block_id) from pragma_storage_info('{table}') where block_id >= 0"
            ).fetchone()[0]

        job_bytes = (blocks("raw_job") + blocks("raw_job_tag")) * block
    finally:
        con.close()
    folder = wh.parent
    return {
        "jobs": jobs,
        "job_rows": rows_job,
        "file_accesses": accesses,
        "warehouse_bytes": wh.stat().st_size,
        "published_bytes": _bytes(snap.parent),
        # a clone (XFS, btrfs) shares its unchanged blocks with the working file: what it alone holds
        "published_unshared_bytes": _unshared_bytes(snap),
        "home_bytes": _bytes(folder),
        "jobs_and_tags_bytes": job_bytes,
    }


def _unshared_bytes(path: Path) -> int:
    """Bytes of ``path``'s extents that no other file shares, from the kernel's FIEMAP (filefrag)."""
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True, check=True).stdout
    block = int(out.split(" blocks of ")[1].split()[0]) if " blocks of " in out else 4096
    total = 0
    for line in out.splitlines():
        fields = line.replace(":", " ").replace("..", " ").split()
        # "  0:   0..  25599:   24..  25623:  25600:   last,shared,eof": index, logical and
        # physical range, length in blocks, (expected), flags
        if fields and fields[0].isdigit() and len(fields) >= 6 and "shared" not in fields[-1]:
            total += int(fields[5]) * block
    return total


def _bytes(folder: Path) -> int:
    """Disk taken by the files under ``folder``, each hard-linked file once (snapshot slots)."""
    seen: dict[tuple[int, int], int] = {}
    for f in folder.rglob("*"):
        if f.is_file() and not f.is_symlink():
            st = f.stat()
            seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(seen.values())


CHILDREN = {
    "_backfill": child_backfill,
    "_write_hour": child_write_hour,
    "_hour": child_hour,
    "_queries": child_queries,
    "_disk": child_disk,
}


# ----------------------------------------------------------------------------- the driver


def _child(args: argparse.Namespace, step: str, **kw: str) -> list[str]:
    argv = [
        sys.executable,
        __file__,
        step,
        "--warehouse",
        str(args.warehouse),
        "--jobs-per-day",
        str(args.jobs_per_day),
        "--cores",
        str(args.cores),
        "--backfill-days",
        str(args.backfill_days),
    ]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", v]
    return argv


def _env(work: Path) -> dict[str, str]:
    return dict(
        os.environ,
        TIERLENS_HOME=str(work),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "pipelines"), os.environ.get("PYTHONPATH", "")) if p),
    )


def run(args: argparse.Namespace) -> dict:
    from tierlens.sources.synthetic.bulk import BulkSite

    work: Path = args.work
    if args.fresh and args.continue_from:
        raise SystemExit("--fresh and --continue-from exclude each other")
    if args.fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    args.warehouse = work / "warehouse.duckdb"
    env = _env(work)
    start = BulkSite().start
    results: dict = {
        "label": args.label,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "site": {"cores": args.cores, "jobs_per_day": args.jobs_per_day, "backfill_days": args.backfill_days},
        "cpus": os.cpu_count(),
        "tierlens_commit": _commit(),
        "continued_from": args.continue_from,
        "points": [],
    }
    loaded_to = _loaded_to(args.continue_from, start) if args.continue_from else start
    for days in args.history_days:
        point: dict = {"history_days": days}
        # an earlier run's hours are loaded already: time the next hours after them
        upto = max(start + timedelta(days=days), loaded_to)
        if upto > loaded_to:
            m = measure(
                _child(
                    args,
                    "_backfill",
                    start=loaded_to.isoformat(),
                    end=upto.isoformat(),
                    **({"with_nodes": "1"} if loaded_to == start else {}),
                ),
                env,
                work / f"backfill-{days}.log",
            )
            point["backfill"] = asdict(m)
            print(
                f"back-fill to day {days}: {m.wall_s:,.0f} s, peak {m.peak_mib:,.0f} MiB, "
                f"load {m.load_before:.1f}->{m.load_after:.1f}; {m.detail}",
                flush=True,
            )
        point["hourly"] = []
        for h in range(args.hours):
            t0, t1 = upto + timedelta(hours=h), upto + timedelta(hours=h + 1)
            folder = work / "hours" / t0.strftime("%Y%m%dT%H")
            shutil.rmtree(folder, ignore_errors=True)
            written = measure(
                _child(args, "_write_hour", dir=str(folder), start=t0.isoformat(), end=t1.isoformat()),
                env,
                work / "write-hour.log",
            ).detail
            m = measure(_child(args, "_hour", dir=str(folder)), env, work / f"hour-{days}-{h}.log")
            m.detail["rows_in_files"] = written
            point["hourly"].append(asdict(m))
            print(
                f"hourly run at day {days} +{h} h: {m.wall_s:,.1f} s, peak {m.peak_mib:,.0f} MiB, "
                f"load {m.load_before:.1f}->{m.load_after:.1f}; {m.detail}",
                flush=True,
            )
            shutil.rmtree(folder, ignore_errors=True)
        loaded_to = upto + timedelta(hours=args.hours)
        disk = measure(_child(args, "_disk"), env, work / "disk.log").detail
        point["disk"] = disk
        q = measure(_child(args, "_queries"), env, work / f"queries-{days}.log")
        point["queries"] = asdict(q)
        print(f"disk at day {days}: {json.dumps(disk)}", flush=True)
        print(
            f"queries at day {days}: slowest {max(v['s'] for v in q.detail.values()):.2f} s, "
            f"peak {q.peak_mib:,.0f} MiB, load {q.load_before:.1f}->{q.load_after:.1f}",
            flush=True,
        )
        results["points"].append(point)
        _write(results)
    results["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results["summary"] = summarise(results)
    _write(results)
    print(table(results))
    return results


def _loaded_to(label: str, start: datetime) -> datetime:
    """Where an earlier run of this bench on the same --work left the warehouse: each point's
    history plus the hours run after it, after the runs it continued."""
    earlier = json.loads((RESULTS / f"{label}.json").read_text())
    # a continuation's first point starts where the run it continued left off, not at its day
    loaded_to = _loaded_to(earlier["continued_from"], start) if earlier.get("continued_from") else start
    for point in earlier["points"]:
        loaded_to = max(start + timedelta(days=point["history_days"]), loaded_to)
        loaded_to += timedelta(hours=len(point["hourly"]))
    return loaded_to


def _commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


def _write(results: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{results['label']}.json").write_text(json.dumps(results, indent=1) + "\n")


def _median(values: list[float]) -> float:
    s = sorted(values)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def summarise(results: dict) -> dict:
    """Per history point: median hourly wall and peak, ratios to the first point, targets met."""
    points = results["points"]
    out: dict = {"points": []}
    base = None
    for p in points:
        hourly = p["hourly"]
        row = {
            "history_days": p["history_days"],
            "hourly_wall_s": _median([h["wall_s"] for h in hourly]) if hourly else None,
            "hourly_peak_mib": max(h["peak_mib"] for h in hourly) if hourly else None,
            "hourly_load": [round(h["load_before"], 1) for h in hourly],
            "backfill_wall_s": p.get("backfill", {}).get("wall_s"),
            "backfill_peak_mib": p.get("backfill", {}).get("peak_mib"),
            "slowest_query_s": max(v["s"] for v in p["queries"]["detail"].values()),
            "slowest_query": max(p["queries"]["detail"].items(), key=lambda kv: kv[1]["s"])[0],
            "mb_per_million_jobs": p["disk"]["warehouse_bytes"] / 1e6 / max(p["disk"]["jobs"] / 1e6, 1e-9),
            "jobs_mb_per_million_jobs": p["disk"]["jobs_and_tags_bytes"] / 1e6 / max(p["disk"]["jobs"] / 1e6, 1e-9),
        }
        if base is None and row["hourly_wall_s"]:
            base = row
        if base is not None and row["hourly_wall_s"]:
            row["wall_ratio"] = row["hourly_wall_s"] / base["hourly_wall_s"]
            row["peak_ratio"] = row["hourly_peak_mib"] / base["hourly_peak_mib"]
        out["points"].append(row)
    return out


def table(results: dict) -> str:
    lines = [
        "| history | back-fill (s) | back-fill peak (MiB) | hourly run, median (s) | ratio | hourly peak (MiB) "
        "| ratio | load (1 min) | slowest sql/ query (s) | MB per M jobs (all) | MB per M jobs (job+tag) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in results.get("summary", summarise(results))["points"]:
        lines.append(
            f"| {r['history_days']} d | {_f(r['backfill_wall_s'])} | {_f(r['backfill_peak_mib'])} "
            f"| {_f(r['hourly_wall_s'], 1)} | {_f(r.get('wall_ratio'), 2)} | {_f(r['hourly_peak_mib'])} "
            f"| {_f(r.get('peak_ratio'), 2)} | {', '.join(map(str, r['hourly_load']))} "
            f"| {r['slowest_query_s']:.2f} ({r['slowest_query']}) | {r['mb_per_million_jobs']:,.0f} "
            f"| {r['jobs_mb_per_million_jobs']:,.0f} |"
        )
    lines.append(f"(Open XDMoD: ~{XDMOD_MB_PER_MILLION_JOBS:.0f} MB per million jobs, jobs only)")
    return "\n".join(lines)


def _f(v: float | None, digits: int = 0) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", nargs="?", default="run", choices=["run", "table", *CHILDREN])
    ap.add_argument("--history-days", type=int, nargs="+", default=[30, 365])
    ap.add_argument("--hours", type=int, default=3, help="hourly runs timed at each history length")
    ap.add_argument("--jobs-per-day", type=int, default=20_000)
    ap.add_argument("--cores", type=int, default=10_000)
    ap.add_argument(
        "--backfill-days",
        type=int,
        default=7,
        help="days per dbt run of a back-fill (tierlens transform --days): its memory follows this",
    )
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/tierlens-scale-data"))
    ap.add_argument("--label", default="scale")
    ap.add_argument(
        "--continue-from",
        metavar="LABEL",
        help="the --work folder holds what the run LABEL loaded: time more hourly runs after it "
        "(e.g. again on a quieter machine) without back-filling again",
    )
    ap.add_argument("--fresh", action="store_true", help="start from an empty --work folder")
    # for the child steps
    ap.add_argument("--warehouse", type=Path)
    ap.add_argument("--dir")
    ap.add_argument("--start")
    ap.add_argument("--end")
    ap.add_argument("--with-nodes", default="")
    args = ap.parse_args()
    if args.step == "run":
        run(args)
    elif args.step == "table":
        print(table(json.loads((RESULTS / f"{args.label}.json").read_text())))
    else:
        print(json.dumps(CHILDREN[args.step](args)), flush=True)


if __name__ == "__main__":
    main()
