"""Lake benchmark: the hourly append against the full export, on the scale bench's site.

    nice -n 19 .venv/bin/python bench/lake_hour_bench.py                        # full size, 30 days, 3 hours
    nice -n 19 .venv/bin/python bench/lake_hour_bench.py --jobs-per-day 2000 --cores 1000 --label dev
    ... --reuse --first-hour 3      # the same warehouse again (3 hours loaded already): a new lake

The site's records come from ``tierlens.sources.synthetic.bulk`` as in bench/scale_bench.py (the
same ``arriving`` order, the same site sizes by default: ~20,000 jobs and ~300,000 file accesses a
day). Steps, each timed in a child process with its peak memory (the process tree's resident set)
and the 1-minute load average before and after it:

1. back-fill: ``--days`` days of arrivals loaded through the warehouse's loader (untimed here);
2. ``tierlens lake export``: the full export, what the ingest publish did every hour before;
3. ``--hours`` hours: the hour's arrivals loaded (untimed), then ``append_lake``, timed; then
   100 job records re-sent with a changed value (replaced by key) and ``append_lake`` again;
4. a full export again at the final size, and a check that the appended lake holds the same rows
   as that fresh export (rows and an order-free hash of every row, per table).

Results go to bench/lake/<label>.json; data stays in --work (default /tmp/tierlens-lake-bench).
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scale_bench import _load1, _site, _when, measure  # bench/, beside this script

RESULTS = Path(__file__).resolve().parent / "lake"
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def child_load(args: argparse.Namespace) -> dict:
    """Load every record arriving in [--start, --end) a day at a time."""
    from tierlens.pipeline import ingest
    from tierlens.sources.synthetic.bulk import arriving

    site, t0, t1 = _site(args), _when(args.start), _when(args.end)
    rows, day, first = 0, t0, args.with_nodes
    while day < t1:
        nxt = min(t1, datetime.combine(day.date() + timedelta(days=1), datetime.min.time(), timezone.utc))
        summary = ingest(arriving(site, day, nxt, with_nodes=first), Path(args.warehouse))
        rows += sum(summary.rows_loaded.values())
        first, day = False, nxt
    return {"rows_loaded": rows}


def child_export(args: argparse.Namespace) -> dict:
    from tierlens.warehouse import export_lake

    start = time.perf_counter()
    counts = export_lake(args.warehouse, args.lake)
    return {"seconds": time.perf_counter() - start, "rows": sum(counts.values())}


def child_append(args: argparse.Namespace) -> dict:
    from tierlens.warehouse.lake import append_lake

    start = time.perf_counter()
    done = append_lake(args.warehouse, args.lake) or {}
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "rows_written": sum(t.rows_written for t in done.values()),
        "tables_scanned": sorted(t.table for t in done.values() if t.scanned),
        "tables_digested_whole": sorted(t.table for t in done.values() if t.digested_all),
        "partitions": {
            t.table: [t.appended_partitions, t.rewritten_partitions, t.removed_partitions]
            for t in done.values()
            if t.committed
        },
    }


def child_resend(args: argparse.Namespace) -> dict:
    """Re-send the accounting records of 100 jobs of the last hour with a changed value (their CPU
    time), as a batch system re-sends a corrected record: the warehouse replaces them by key."""
    import pyarrow.compute as pc

    from tierlens.records import JOB, Batch, RecordKind
    from tierlens.warehouse import Warehouse

    with Warehouse(args.warehouse) as wh:
        rows = wh.con.execute("SELECT * FROM raw_job ORDER BY end_time DESC NULLS LAST LIMIT 100").to_arrow_table()
        rows = rows.select(JOB.names).cast(JOB)
        changed = rows.set_column(
            rows.schema.get_field_index("cpu_user_seconds"),
            JOB.field("cpu_user_seconds"),
            pc.add(pc.fill_null(rows["cpu_user_seconds"], 0.0), 1.0),
        )
        result = wh.load(Batch(RecordKind.JOB, changed, "resend"))
    return {"rows_loaded": result.rows_loaded}


def child_compare(args: argparse.Namespace) -> dict:
    """Rows and an order-free hash of the rows of each table, in the appended lake and a fresh export."""
    import duckdb

    con = duckdb.connect()
    differ = []
    for table in sorted(p.name for p in Path(args.reference).iterdir() if not p.name.startswith((".", "_"))):
        digests = []
        for root in (args.lake, args.reference):
            if not list((Path(root) / table).rglob("*.parquet")):
                digests.append((0, None))
                continue
            files = f"read_parquet('{root}/{table}/**/*.parquet', hive_partitioning = false)"
            cols = ", ".join(f'"{d[0]}"' for d in con.execute(f"SELECT * FROM {files} LIMIT 0").description)
            digests.append(tuple(con.execute(f"SELECT count(*), sum(hash({cols})) FROM {files}").fetchall()[0]))
        if digests[0] != digests[1]:
            differ.append({"table": table, "appended": str(digests[0]), "export": str(digests[1])})
    return {"tables_differing": differ}


CHILDREN = {
    "load": child_load,
    "export": child_export,
    "append": child_append,
    "resend": child_resend,
    "compare": child_compare,
}


def _child(args: argparse.Namespace, step: str, script: str = __file__, **kw: str) -> list[str]:
    """The argv of a child step of ``script`` (this file, or a bench that reuses its children)."""
    argv = [sys.executable, script, "--child", step, "--work", str(args.work)]
    argv += ["--jobs-per-day", str(args.jobs_per_day), "--cores", str(args.cores)]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", v] if v != "" else [f"--{k.replace('_', '-')}"]
    return argv


def _step(args: argparse.Namespace, name: str, step: str, **kw: str) -> dict:
    import os

    logs = args.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    m = measure(_child(args, step, **kw), dict(os.environ), logs / f"{name}.log")
    out = {"wall_s": m.wall_s, "peak_mib": m.peak_mib, "load_before": m.load_before, "load_after": m.load_after}
    out.update(m.detail)
    print(f"{name}: {m.wall_s:.1f} s, peak {m.peak_mib:,.0f} MiB, load {m.load_before}-{m.load_after}", flush=True)
    return out


def run(args: argparse.Namespace) -> dict:
    work: Path = args.work
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    warehouse, lake = work / "warehouse.duckdb", work / "lake"
    end = START + timedelta(days=args.days)
    results: dict = {
        "label": args.label,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "site": {"days": args.days, "jobs_per_day": args.jobs_per_day, "cores": args.cores},
        "cpus": __import__("os").cpu_count(),
    }
    wh = str(warehouse)
    if not args.reuse:
        results["backfill"] = _step(
            args, "backfill", "load", warehouse=wh, start=START.isoformat(), end=end.isoformat(), with_nodes=""
        )
    end += timedelta(hours=args.first_hour)
    results["export_first"] = _step(args, "export-first", "export", warehouse=wh, lake=str(lake))
    hours = []
    for h in range(args.hours):
        t0, t1 = end + timedelta(hours=h), end + timedelta(hours=h + 1)
        loaded = _step(args, f"load-hour-{h}", "load", warehouse=wh, start=t0.isoformat(), end=t1.isoformat())
        hour = _step(args, f"append-hour-{h}", "append", warehouse=wh, lake=str(lake))
        hour["rows_loaded"] = loaded["rows_loaded"]
        hours.append(hour)
    results["hours"] = hours
    # The hard case: records re-sent with changed values, replaced by key in the warehouse.
    resent = _step(args, "resend", "resend", warehouse=wh)
    results["resend"] = _step(args, "append-resend", "append", warehouse=wh, lake=str(lake))
    results["resend"]["rows_loaded"] = resent["rows_loaded"]
    reference = work / "reference"
    results["export_final"] = _step(args, "export-final", "export", warehouse=wh, lake=str(reference))
    results["compare"] = _step(args, "compare", "compare", lake=str(lake), reference=str(reference))
    results["load1_end"] = _load1()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=30, help="history loaded before the hours")
    ap.add_argument("--hours", type=int, default=3, help="hourly appends timed")
    ap.add_argument("--jobs-per-day", type=int, default=20_000)
    ap.add_argument("--cores", type=int, default=10_000)
    ap.add_argument("--label", default="full-30d")
    ap.add_argument("--work", type=Path, default=Path("/tmp/tierlens-lake-bench"))
    ap.add_argument("--child", choices=sorted(CHILDREN))
    ap.add_argument(
        "--reuse", action="store_true", help="keep --work's warehouse (no back-fill): a rerun after a change"
    )
    ap.add_argument("--first-hour", type=int, default=0, help="with --reuse: the hours an earlier run loaded already")
    for name in ("warehouse", "lake", "reference", "start", "end"):
        ap.add_argument(f"--{name}")
    ap.add_argument("--with-nodes", action="store_true")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    if args.reuse:
        shutil.rmtree(args.work / "lake", ignore_errors=True)
        shutil.rmtree(args.work / "reference", ignore_errors=True)
    results = run(args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps({k: results[k] for k in ("export_first", "export_final", "compare")}, indent=1))


if __name__ == "__main__":
    main()
