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
DEFAULT_WAREHOUSE = "/work/scale-data/dev12m/warehouse.duckdb"
DEFAULT_OLD_REF = "7c55680"

CHILD = r"""
import datetime as dt, json, sys, time
import duckdb
args = json.loads(sys.argv[1])
from tierlens.analysis.uncertainty import ab_uncertainty, JOB_COLUMNS, CACHE_COLUMNS
from tierlens.analysis import change as change_mod
con = duckdb.connect(args["warehouse"], read_only=True)
con.execute("set TimeZone = 'UTC'")
until = args["until"]
jobs_rel = f"(select * from marts.job_efficiency where day < date '{until}')"
cache_rel = f"(select * from marts.cache_hourly where \"hour\" < timestamptz '{until} 00:00:00+00')"
changes = con.sql(f"select * from staging.stg_site_change where changed_at < timestamptz '{until} 00:00:00+00'").to_arrow_table()
newest = con.sql(f"select max(day) from {jobs_rel}").fetchone()[0]
window = newest - dt.timedelta(days=args["lookback"])
out = {"code": args["code"], "until": until, "window_from": str(window)}
t = time.perf_counter()
if args["code"] == "old":
    jobs = con.sql(f"select * from {jobs_rel}").to_arrow_table()
    cache = con.sql(f"select * from {cache_rel}").to_arrow_table()
else:
    jobs = con.sql("select " + ", ".join(f'"{c}"' for c in JOB_COLUMNS) + f" from {jobs_rel}").to_arrow_table()
    cache = con.sql("select " + ", ".join(f'"{c}"' for c in CACHE_COLUMNS) + f" from {cache_rel}").to_arrow_table()
out["ab_read_s"] = time.perf_counter() - t
out["jobs"] = jobs.num_rows
t = time.perf_counter()
rows = ab_uncertainty(jobs, cache, None, window, None)
out["ab_compute_s"] = time.perf_counter() - t
out["ab_rows"] = rows.num_rows
out["ab_s"] = out["ab_read_s"] + out["ab_compute_s"]
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
t = time.perf_counter()
crow = change_mod.change_effects(cjobs, changes, params, window, None)
out["change_compute_s"] = time.perf_counter() - t
out["change_rows"] = crow.num_rows
out["change_s"] = out["change_read_s"] + out["change_compute_s"]
print(json.dumps(out))
"""


def old_code(ref: str, into: Path) -> Path:
    """The pipelines/ tree of a commit, extracted from this repository (git archive)."""
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", ref, "pipelines/tierlens"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "pipelines"


def run(code: str, pythonpath: Path, warehouse: str, until: str) -> dict:
    args = {"code": code, "warehouse": warehouse, "until": until, "lookback": LOOKBACK_DAYS}
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], env=env, stdout=subprocess.PIPE)
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
    a = ap.parse_args()
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


if __name__ == "__main__":
    main()
