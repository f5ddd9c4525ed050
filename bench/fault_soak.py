"""Fault soak: the hourly cycle with SIGKILLs at random points, against the same cycle left alone.

    .venv/bin/python bench/fault_soak.py                       # 2 days + 6 hours, up to 2 kills an hour
    .venv/bin/python bench/fault_soak.py --hours 48 --kills 5  # hundreds of kill points (hours)

A small site from the scale bench's generator (``tierlens.sources.synthetic.bulk``) is built twice
in two tierlens homes, record for record the same: a back-fill of ``--days`` days, then ``--hours``
hourly runs, each loading the hour's Parquet files (``tierlens load``), running ``tierlens
transform`` (which publishes) and publishing once more (the publish alone), with one ``tierlens
transform --full-refresh --days 7`` between two hours (``--full-refresh-after``). The reference
runs every command once. The faulted copy starts each step as a child process and SIGKILLs its
whole process group (dbt included) after a delay drawn from a seeded generator between 0 and the
reference's time for that step, up to ``--kills`` times for a transform and ``--cheap-kills`` for
a load or a publish, then runs it to completion. Afterwards every table of the intermediate and marts
schemas must be equal in both warehouses and in their published snapshots (floats to 9
significant digits; the run logs excepted), and every raw table must hold each natural key once.
Retention is not among the steps (a soak of days holds nothing a month old): the equivalence
fixture (tests/support/equivalence.py) kills it.

Prints and writes bench/faults/<label>.json: kill points tried, how many hit a running step (a
kill after the step ended counts as tried, not landed), recoveries, and the differing rows per
table, with the seconds, the largest process's peak memory and the load average. Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pipelines"))
sys.path.insert(0, str(ROOT / "tests"))
from support.faults import TIERLENS, raw_duplicates, run_step, tierlens_env  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "faults"
#: run logs: one row per dbt invocation, so a killed-and-rerun cycle has more of them by design
RUN_LOGS = {"int_incremental_window"}


def _write_hour(site, t0: datetime, t1: datetime, folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tierlens.sources.synthetic.bulk import arriving

    folder.mkdir(parents=True, exist_ok=True)
    tables: dict[str, list] = {}
    for batch in arriving(site, t0, t1):
        tables.setdefault(batch.kind.value, []).append(batch.table)
    for kind, parts in tables.items():
        pq.write_table(pa.concat_tables(parts), folder / f"{kind}.parquet")


#: a cycle's transform: ("hourly", None), ("backfill", (start, end)) or ("full-refresh", None)
Transform = tuple[str, tuple[str, str] | None]
HOURLY: Transform = ("hourly", None)
FULL_REFRESH: Transform = ("full-refresh", None)


def _publish(warehouse: Path) -> list[str]:
    """The publish alone (the transform ends with one): its own kill points, on a snapshot that
    already exists, as the next hour's publish meets it."""
    code = f"from tierlens.warehouse.publish import publish; publish({str(warehouse)!r})"
    return [sys.executable, "-c", code]


def _steps(folder: Path | None, warehouse: Path, transform: Transform) -> list[list[str]]:
    """The commands of one cycle: a load per file of the hour, the transform, then a publish."""
    steps = (
        [[*TIERLENS, "load", path.stem, str(path), "-w", str(warehouse)] for path in sorted(folder.glob("*.parquet"))]
        if folder
        else []
    )
    argv = [*TIERLENS, "transform", "-w", str(warehouse)]
    kind, span = transform
    if kind == "backfill":
        argv += ["--backfill", span[0], span[1], "--days", "7"]
    elif kind == "full-refresh":
        argv += ["--full-refresh", "--days", "7"]
    return [*steps, argv, _publish(warehouse)]


def step_kind(argv: list[str]) -> str:
    """What a step is, for the tally: load, transform (hourly), transform --backfill,
    transform --full-refresh, publish."""
    if argv[0] == sys.executable:
        return "publish"
    extra = [a for a in argv[2:] if a in ("--backfill", "--full-refresh")]
    return " ".join([argv[1], *extra])


def _compare(a: Path, b: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    diffs: dict[str, int] = {}
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'a' "
        "AND schema_name IN ('intermediate', 'marts') ORDER BY ALL"
    ).fetchall()
    for schema, name in tables:
        if name in RUN_LOGS:
            continue
        cols = con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'a' "
            "AND schema_name = ? AND table_name = ? ORDER BY column_index",
            [schema, name],
        ).fetchall()
        sel = ", ".join(
            f'format(\'{{:.9g}}\', "{c}") AS "{c}"' if t in ("DOUBLE", "FLOAT", "REAL") else f'"{c}"' for c, t in cols
        )
        try:
            n = con.execute(
                f"SELECT (SELECT count(*) FROM (SELECT {sel} FROM a.{schema}.{name} EXCEPT ALL "
                f"SELECT {sel} FROM b.{schema}.{name})) + (SELECT count(*) FROM (SELECT {sel} FROM "
                f"b.{schema}.{name} EXCEPT ALL SELECT {sel} FROM a.{schema}.{name}))"
            ).fetchone()[0]
        except duckdb.Error as e:  # a table missing on one side
            n = -1
            print(f"{schema}.{name}: {e}", flush=True)
        diffs[f"{schema}.{name}"] = int(n)
    return diffs


def finish(args: argparse.Namespace) -> None:
    """Bring both warehouses of an interrupted soak to the same point, unkilled: every hour's files
    loaded (a no-op for what had landed) and one transform each, then compare."""
    homes = {name: args.work / name for name in ("reference", "faulted")}
    hours = sorted((args.work / "hours").iterdir())
    for home in homes.values():
        wh = home / "warehouse.duckdb"
        steps = [s for folder in hours for s in _steps(folder, wh, HOURLY)[:-2]] + _steps(None, wh, HOURLY)
        for step in steps:
            status, _ = run_step(step, tierlens_env(home))
            if status != "ok":
                raise SystemExit(f"{' '.join(step)}: {status}")
    diffs = _compare(homes["reference"] / "warehouse.duckdb", homes["faulted"] / "warehouse.duckdb")
    dups = raw_duplicates(homes["faulted"] / "warehouse.duckdb")
    result = {
        "finished_through_hour": hours[-1].name,
        "tables_compared": len(diffs),
        "differing_rows": {k: v for k, v in diffs.items() if v},
        "raw_duplicate_keys": {k: v for k, v in dups.items() if v},
    }
    print(json.dumps(result, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--hours", type=int, default=6)
    ap.add_argument("--kills", type=int, default=2, help="kill points per transform at most")
    # a load or a publish of an hour takes seconds, a transform minutes: more of the soak's kill
    # points for its time land in them
    ap.add_argument("--cheap-kills", type=int, default=None, help="kill points per load or publish at most [--kills]")
    ap.add_argument("--jobs-per-day", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/tierlens-fault-soak"))
    ap.add_argument("--label", default="dev")
    ap.add_argument("--minutes", type=float, default=None, help="start no cycle after this many minutes")
    ap.add_argument(
        "--full-refresh-after", type=int, default=2, help="hour after which a --full-refresh --days 7 cycle runs"
    )
    ap.add_argument(
        "--finish",
        action="store_true",
        help="an interrupted soak in --work: run the last hour's steps on both warehouses unkilled, then compare",
    )
    args = ap.parse_args()
    if args.cheap_kills is None:
        args.cheap_kills = args.kills
    if args.finish:
        finish(args)
        return

    from tierlens.pipeline import ingest
    from tierlens.sources.synthetic.bulk import BulkSite, arriving
    from tierlens.warehouse.publish import reader_path

    shutil.rmtree(args.work, ignore_errors=True)
    homes = {name: args.work / name for name in ("reference", "faulted")}
    rng = np.random.default_rng(args.seed)
    site = BulkSite(jobs_per_day=args.jobs_per_day)
    start = site.start
    t_hist = start + timedelta(days=args.days)
    tally = {"kill_points": 0, "landed": 0, "finished_before_kill": 0, "recoveries": 0, "failures": []}
    landed_by_step: dict[str, int] = {}
    tried_by_step: dict[str, int] = {}
    load_before = os.getloadavg()[0]
    t0_all = time.perf_counter()
    # the history, loaded the same way in both (the back-fill's transform is a step like any)
    for home in homes.values():
        home.mkdir(parents=True)
        ingest(arriving(site, start, t_hist, with_nodes=True), home / "warehouse.duckdb")
    backfill = ((start - timedelta(days=1)).date().isoformat(), (t_hist.date() + timedelta(days=1)).isoformat())
    cycles: list[tuple[Path | None, Transform]] = [(None, ("backfill", backfill))]
    for h in range(args.hours):
        folder = args.work / "hours" / f"{h:03d}"
        _write_hour(site, t_hist + timedelta(hours=h), t_hist + timedelta(hours=h + 1), folder)
        cycles.append((folder, HOURLY))
        if h == args.full_refresh_after:
            # a site's rebuild between two hours (nothing new loaded): every day from raw, a day per
            # dbt run; early in the soak, so --minutes never leaves it out
            cycles.append((None, FULL_REFRESH))
    for folder, transform in cycles:
        if args.minutes is not None and time.perf_counter() - t0_all > args.minutes * 60:
            break
        ref_steps = _steps(folder, homes["reference"] / "warehouse.duckdb", transform)
        fault_steps = _steps(folder, homes["faulted"] / "warehouse.duckdb", transform)
        for ref, faulted in zip(ref_steps, fault_steps):
            status, seconds = run_step(ref, tierlens_env(homes["reference"]))
            if status != "ok":
                raise SystemExit(f"reference step failed: {' '.join(ref)}: {status}")
            most = args.kills if step_kind(faulted).startswith("transform") else args.cheap_kills
            for _ in range(int(rng.integers(0, most + 1))):
                delay = float(rng.uniform(0.0, seconds))
                tally["kill_points"] += 1
                status, _ = run_step(faulted, tierlens_env(homes["faulted"]), kill_after=delay)
                kind = step_kind(faulted)
                tried_by_step[kind] = tried_by_step.get(kind, 0) + 1
                if status == "killed":
                    tally["landed"] += 1
                    landed_by_step[kind] = landed_by_step.get(kind, 0) + 1
                elif status == "finished-before-kill":
                    tally["finished_before_kill"] += 1
                else:
                    tally["failures"].append({"step": step_kind(faulted), "status": status[:500]})
            status, _ = run_step(faulted, tierlens_env(homes["faulted"]))
            if status != "ok":
                tally["failures"].append({"step": step_kind(faulted), "recovery": status[:2000]})
            else:
                tally["recoveries"] += 1
        print(
            f"cycle {folder.name if folder else transform[0]}: {tally} tried {tried_by_step} landed {landed_by_step}",
            flush=True,
        )
    diffs = _compare(homes["reference"] / "warehouse.duckdb", homes["faulted"] / "warehouse.duckdb")
    # and what readers open: the faulted warehouse's published snapshot against the reference's
    snapshot_diffs = _compare(
        reader_path(homes["reference"] / "warehouse.duckdb"), reader_path(homes["faulted"] / "warehouse.duckdb")
    )
    dups = raw_duplicates(homes["faulted"] / "warehouse.duckdb")
    result = {
        "label": args.label,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "args": {k: str(v) for k, v in vars(args).items()},
        **tally,
        "tried_by_step": tried_by_step,
        "landed_by_step": landed_by_step,
        "differing_rows": {k: v for k, v in diffs.items() if v},
        "snapshot_differing_rows": {k: v for k, v in snapshot_diffs.items() if v},
        "tables_compared": len(diffs),
        "raw_duplicate_keys": {k: v for k, v in dups.items() if v},
        "seconds": round(time.perf_counter() - t0_all, 1),
        # the largest single process (dbt's, usually), not the sum of a tree
        "peak_mib": round(
            max(resource.getrusage(r).ru_maxrss for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
        ),
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if (
        result["differing_rows"]
        or result["snapshot_differing_rows"]
        or result["raw_duplicate_keys"]
        or tally["failures"]
    ):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
