"""marts.ab_uncertainty and marts.change_effects: the hourly run's cost, old code against new.

Reads a built warehouse READ-ONLY (default: the 12-month dev-size bench warehouse) and runs, each
in its own child process (peak RSS from os.wait4; wall time without imports):

* old: the two models' computation as the code of --old-ref (default: the commit before the
  Poisson bootstrap) runs it in an hourly dbt run: every column of every job into Arrow, then
  ab_uncertainty / change_effects with the window an hourly run rebuilds;
* new: this checkout's code, reading what its dbt models read (the columns used; for
  change_effects only the jobs of the rebuilt changes' windows), same window;
* both again on the first month of the same history (jobs and cache hours before its end), the
  "1-month" point the hourly cost should stay close to.

The window: the day after the newest job day minus the models' lookback (max_wall_days 7 +
job_lateness_days 2), as dbt_window.rebuild_window gives an hourly run. Prints one JSON line per
measurement and the ratios; writes them to --out.

    .venv/bin/python bench/ab_bench.py [--warehouse PATH] [--out bench/out/ab-blocks]

--mode totals: ab_uncertainty's hourly cost before and after its 'all' rows came from stored
month totals (int_ab_totals). "base" is the code of --base-ref running the dbt model as it was
(the used columns of every job, every 'all' row from all of them); "totals" is this checkout
running what an hourly dbt run now runs: int_ab_totals' rebuild of the months its window
touches (their jobs), then ab_uncertainty from the stored month totals (all of history's, made
once beforehand in a separate untimed child and kept as Parquet in --out, the stand-in for the
table) and the jobs of the window's weeks. The two steps are timed apart; peak RSS covers both.

    .venv/bin/python bench/ab_bench.py --mode totals --out bench/out/ab-totals
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOKBACK_DAYS = 9
DEFAULT_WAREHOUSE = "/var/tmp/tierlens-scale-data/dev12m/warehouse.duckdb"
DEFAULT_OLD_REF = "7c55680"
DEFAULT_BASE_REF = "800caca"

# What every child starts with: the warehouse read-only in UTC, the window an hourly run of the
# models would rebuild (the newest job day before `until`, minus the lookback), what it reports,
# and how it times one model's computation: its seconds, the rows it made, and the model's seconds
# in all (the reads before it and the computation), the same keys in every child.
PREAMBLE = r"""
import datetime as dt, json, sys, time
import duckdb
args = json.loads(sys.argv[1])
con = duckdb.connect(args["warehouse"], read_only=True)
con.execute("set TimeZone = 'UTC'")
until = args["until"]
newest = con.sql(f"select max(day) from marts.job_efficiency where day < date '{until}'").fetchone()[0]
window = newest - dt.timedelta(days=args["lookback"])
out = {"code": args["code"], "until": until, "window_from": str(window)}
def computed(step, seconds, rows, total=None, before=()):
    t = time.perf_counter()
    table = step()
    out[seconds] = time.perf_counter() - t
    out[rows] = table.num_rows
    if total is not None:
        out[total] = sum(out[k] for k in before) + out[seconds]
    return table
"""

CHILD = (
    PREAMBLE
    + r"""
from tierlens.analysis.uncertainty import ab_uncertainty, JOB_COLUMNS, CACHE_COLUMNS
from tierlens.analysis import change as change_mod
jobs_rel = f"(select * from marts.job_efficiency where day < date '{until}')"
cache_rel = f"(select * from marts.cache_hourly where \"hour\" < timestamptz '{until} 00:00:00+00')"
changes = con.sql(f"select * from staging.stg_site_change where changed_at < timestamptz '{until} 00:00:00+00'").to_arrow_table()
t = time.perf_counter()
if args["code"] == "old":
    jobs = con.sql(f"select * from {jobs_rel}").to_arrow_table()
    cache = con.sql(f"select * from {cache_rel}").to_arrow_table()
else:
    jobs = con.sql("select " + ", ".join(f'"{c}"' for c in JOB_COLUMNS) + f" from {jobs_rel}").to_arrow_table()
    cache = con.sql("select " + ", ".join(f'"{c}"' for c in CACHE_COLUMNS) + f" from {cache_rel}").to_arrow_table()
out["ab_read_s"] = time.perf_counter() - t
out["jobs"] = jobs.num_rows
computed(lambda: ab_uncertainty(jobs, cache, None, window, None), "ab_compute_s", "ab_rows", "ab_s", ["ab_read_s"])
del jobs, cache
# change_effects: its window is by inputs_until; an hourly run rebuilds from the newest one - lookback
params = change_mod.ChangeParams()
t = time.perf_counter()
if args["code"] == "old":
    cjobs = con.sql(f"select * from {jobs_rel}").to_arrow_table()
else:
    since = change_mod.jobs_needed_from(changes, params, window, None)
    cjobs = con.sql(change_mod.needed_jobs_sql(jobs_rel, since)).to_arrow_table()
out["change_read_s"] = time.perf_counter() - t
out["change_jobs_read"] = cjobs.num_rows
computed(
    lambda: change_mod.change_effects(cjobs, changes, params, window, None),
    "change_compute_s",
    "change_rows",
    "change_s",
    ["change_read_s"],
)
print(json.dumps(out))
"""
)


CHILD_BASE = (
    PREAMBLE
    + r"""
from tierlens.analysis.uncertainty import ab_uncertainty, JOB_COLUMNS, CACHE_COLUMNS
t = time.perf_counter()
jobs = con.sql("select " + ", ".join(f'"{c}"' for c in JOB_COLUMNS) + f" from marts.job_efficiency where day < date '{until}'").to_arrow_table()
cache = con.sql("select " + ", ".join(f'"{c}"' for c in CACHE_COLUMNS) + f" from marts.cache_hourly where \"hour\" < timestamptz '{until} 00:00:00+00'").to_arrow_table()
out["read_s"] = time.perf_counter() - t
out["jobs_read"] = jobs.num_rows
computed(lambda: ab_uncertainty(jobs, cache, None, window, None), "compute_s", "ab_rows", "ab_s", ["read_s"])
print(json.dumps(out))
"""
)

CHILD_TOTALS = (
    PREAMBLE
    + r"""
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
from tierlens.analysis.uncertainty import ab_totals, ab_uncertainty, months_to_rebuild, JOB_COLUMNS, CACHE_COLUMNS
cols = ", ".join(f'"{c}"' for c in JOB_COLUMNS)
ccols = ", ".join(f'"{c}"' for c in CACHE_COLUMNS)
def jobs_from(first):
    return con.sql(f"select {cols} from marts.job_efficiency where ab_arm in ('A', 'B') and core_wall_seconds > 0 "
                   f"and day >= date '{first}' and day < date '{until}'").to_arrow_table()
def cache_from(first):
    return con.sql(f"select {ccols} from marts.cache_hourly where \"hour\" >= timestamptz '{first} 00:00:00+00' "
                   f"and \"hour\" < timestamptz '{until} 00:00:00+00'").to_arrow_table()
if args["code"] == "store":  # untimed: the month totals a previous build stored
    t = time.perf_counter()
    totals = ab_totals(jobs_from("1970-01-01"), cache_from("1970-01-01"), None, None, None, newest)
    pq.write_table(totals, args["totals"])
    print(json.dumps({"code": "store", "until": until, "rows": totals.num_rows, "s": time.perf_counter() - t,
                      "bytes_arrow": totals.nbytes}))
    sys.exit(0)
# int_ab_totals: the months holding a window day, whole
t = time.perf_counter()
first, _ = months_to_rebuild(window, None, newest)
jobs = jobs_from(first)
cache = cache_from(first)
out["totals_read_s"] = time.perf_counter() - t
out["totals_jobs_read"] = jobs.num_rows
rebuilt = computed(lambda: ab_totals(jobs, cache, None, window, None, newest), "totals_compute_s", "totals_rebuilt_rows")
del jobs, cache
# replace_days: the stored rows of the window's rebuild days give way to the rebuilt ones
t = time.perf_counter()
stored = pq.read_table(args["totals"])
day = pa.scalar(window, pa.date32())
totals = pa.concat_tables([stored.filter(pc.less(stored.column("rebuild_day"), day)),
                           rebuilt.filter(pc.greater_equal(rebuilt.column("rebuild_day"), day))])
out["totals_stored_rows"] = totals.num_rows
# ab_uncertainty: the month totals, and the jobs of the window's weeks
monday = window - dt.timedelta(days=window.weekday())
jobs = jobs_from(monday)
cache = cache_from(monday)
out["ab_read_s"] = time.perf_counter() - t
out["jobs_read"] = jobs.num_rows
computed(
    lambda: ab_uncertainty(jobs, cache, None, window, None, totals),
    "ab_compute_s",
    "ab_rows",
    "ab_s",
    ["totals_read_s", "totals_compute_s", "ab_read_s"],
)
print(json.dumps(out))
"""
)


def old_code(ref: str, into: Path) -> Path:
    """The pipelines/ tree of a commit, extracted from this repository (git archive)."""
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", ref, "pipelines/tierlens"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "pipelines"


def run(code: str, pythonpath: Path, warehouse: str, until: str, child: str = CHILD, **extra: str) -> dict:
    args = {"code": code, "warehouse": warehouse, "until": until, "lookback": LOOKBACK_DAYS, **extra}
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", child, json.dumps(args)], env=env, stdout=subprocess.PIPE)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{code} {until}: child failed ({status})")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result.update(
        process_s=round(time.perf_counter() - start, 2),
        peak_rss_mib=round(usage.ru_maxrss / 1024, 1),
        load_1min=[round(load_before, 2), round(os.getloadavg()[0], 2)],
    )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warehouse", default=DEFAULT_WAREHOUSE)
    ap.add_argument("--old-ref", default=DEFAULT_OLD_REF)
    ap.add_argument("--one-month-until", default="2025-02-01", help="end (exclusive) of the 1-month point")
    ap.add_argument("--until", default="2026-01-02", help="end (exclusive) of the full history")
    ap.add_argument("--out", default=str(HERE / "out" / "ab-blocks"))
    ap.add_argument("--mode", choices=("blocks", "totals"), default="blocks")
    ap.add_argument("--base-ref", default=DEFAULT_BASE_REF, help="--mode totals: the code before the month totals")
    a = ap.parse_args()
    if a.mode == "totals":
        totals_mode(a)
        return
    new_path = HERE.parent / "pipelines"
    tmp = Path(tempfile.mkdtemp(prefix="ab_bench_"))
    try:
        old_path = old_code(a.old_ref, tmp)
        results = {}
        for until, label in ((a.until, "history"), (a.one_month_until, "1-month")):
            for code, path in (("old", old_path), ("new", new_path)):
                r = run(code, path, a.warehouse, until)
                results[f"{code} {label}"] = r
                print(json.dumps({"run": f"{code} {label}", **r}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios = {}
    for model in ("ab", "change"):
        key = f"{model}_s"
        ratios[f"{model}: new/old at full history"] = results["new history"][key] / results["old history"][key]
        ratios[f"{model}: new full history / new 1 month"] = results["new history"][key] / results["new 1-month"][key]
        ratios[f"{model}: old full history / old 1 month"] = results["old history"][key] / results["old 1-month"][key]
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ab_bench.json").write_text(json.dumps({"results": results, "ratios": ratios}, indent=1))


def totals_mode(a: argparse.Namespace) -> None:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    new_path = HERE.parent / "pipelines"
    tmp = Path(tempfile.mkdtemp(prefix="ab_bench_"))
    results = {}
    try:
        base_path = old_code(a.base_ref, tmp)
        for until, label in ((a.until, "history"), (a.one_month_until, "1-month")):
            stored = out / f"int_ab_totals-{label}.parquet"
            r = run("store", new_path, a.warehouse, until, CHILD_TOTALS, totals=str(stored))
            r["parquet_bytes"] = stored.stat().st_size
            results[f"store {label}"] = r
            print(json.dumps({"run": f"store {label}", **r}), flush=True)
            for code, path, child in (("base", base_path, CHILD_BASE), ("totals", new_path, CHILD_TOTALS)):
                r = run(code, path, a.warehouse, until, child, totals=str(stored))
                results[f"{code} {label}"] = r
                print(json.dumps({"run": f"{code} {label}", **r}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios = {
        "totals/base at full history (ab_s)": results["totals history"]["ab_s"] / results["base history"]["ab_s"],
        "totals: full history / 1 month": results["totals history"]["ab_s"] / results["totals 1-month"]["ab_s"],
        "base: full history / 1 month": results["base history"]["ab_s"] / results["base 1-month"]["ab_s"],
        "peak RSS totals/base at full history": results["totals history"]["peak_rss_mib"]
        / results["base history"]["peak_rss_mib"],
    }
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")
    (out / "ab_bench_totals.json").write_text(json.dumps({"results": results, "ratios": ratios}, indent=1))


if __name__ == "__main__":
    main()
