"""marts.change_effects: what the before/after analysis costs on a demo-sized month.

A month of jobs like the demo site's (16 nodes, ~60,000 jobs, hourly shared shocks), four recorded
changes (nodes, a storage type, an arm, the whole site). Each measurement runs in a child process
(peak RSS from os.wait4, imports excluded from the wall time):

* change_effects: tierlens.analysis.change over the month, 999 resamples per interval;
* peer: tierlens.analysis.uncertainty.ab_uncertainty on the same jobs, the A/B mart whose
  hour-block bootstrap change_effects reuses.

    .venv/bin/python bench/change_bench.py [--jobs-per-hour 85] [--days 30]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

CHILD = r"""
import json, sys, time
from datetime import datetime, timedelta, timezone
import numpy as np, pyarrow as pa
from tierlens.records import SITE_CHANGE
args = json.loads(sys.argv[1])
rng = np.random.default_rng(1)
hours = args["days"] * 24
n = hours * args["jobs_per_hour"]
t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
hour = np.repeat(np.arange(hours), args["jobs_per_hour"])
nodes = np.array([f"wn{i:02d}" for i in range(16)])
node = rng.choice(nodes, n)
storage = np.array(["hdd", "raid0", "ssd", "nvme"])[np.searchsorted(nodes, node) % 4]
arm = np.where(np.searchsorted(nodes, node) % 2 == 0, "A", "B")
end_us = int(t0.timestamp() * 1e6) + hour * 3_600_000_000 + rng.integers(0, 3_600_000_000, n)
wall = rng.uniform(600, 4 * 3600, n)
start_us = end_us - (wall * 1e6).astype(np.int64)
cores = rng.choice([1, 4], n, p=[0.8, 0.2])
eff = np.clip(0.75 + rng.normal(0, 0.03, hours)[hour] + rng.normal(0, 0.1, n), 0.05, 1.2)
ts = lambda us: pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
end = ts(end_us)
jobs = pa.table({"cluster": ["c"] * n, "node": node, "storage_type": storage, "ab_arm": arm,
                 "job_class": rng.choice(["analysis", "production"], n, p=[0.9, 0.1]),
                 "start_time": ts(start_us), "end_time": end, "cpu_seconds": eff * wall * cores,
                 "wall_seconds": wall, "core_wall_seconds": wall * cores,
                 "bytes_read": rng.lognormal(np.log(8e9), 1.0, n).astype(np.int64),
                 "bytes_read_remote": pa.nulls(n, pa.int64()),
                 "day": end.cast(pa.date32()), "week": end.cast(pa.date32()),
                 "account": ["a"] * n, "vo": ["atlas"] * n})
base = {f.name: None for f in SITE_CHANGE}
changes = pa.Table.from_pylist([base | {"change_id": f"c{i}", "changed_at": t0 + timedelta(days=d),
                                        "description": "x", **scope}
    for i, (d, scope) in enumerate([(8, {"scope_nodes": ["wn01", "wn02"]}), (13, {"scope_storage_type": "hdd"}),
                                    (19, {"scope_ab_arm": "B"}), (24, {})])], schema=SITE_CHANGE)
cache = pa.table({"hour": pa.array([], pa.timestamp("us", tz="UTC")), "gb_delivered_from_cache": pa.array([], pa.float64()),
                  "gb_staged_in": pa.array([], pa.float64()), "gb_bypassed": pa.array([], pa.float64())})
started = time.perf_counter()
if args["what"] == "change_effects":
    from tierlens.analysis.change import change_effects
    rows = change_effects(jobs, changes).num_rows
else:
    from tierlens.analysis.uncertainty import ab_uncertainty
    rows = ab_uncertainty(jobs, cache).num_rows
print("RESULT " + json.dumps({"seconds": time.perf_counter() - started, "rows": rows, "jobs": n}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--jobs-per-hour", type=int, default=85)
    args = ap.parse_args()
    results = {}
    for what in ("change_effects", "ab_uncertainty"):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(w, 1)
            os.execv(
                sys.executable,
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    json.dumps({"what": what, "days": args.days, "jobs_per_hour": args.jobs_per_hour}),
                ],
            )
        os.close(w)
        with os.fdopen(r) as fh:
            out = fh.read()
        _, _, usage = os.wait4(pid, 0)
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        results[what] = json.loads(line[7:]) | {"peak_rss_mib": usage.ru_maxrss / 1024}
    load = os.getloadavg()
    c, a = results["change_effects"], results["ab_uncertainty"]
    print(
        f"{c['jobs']:,} jobs over {args.days} days, 4 changes; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"{'':16} {'seconds':>8} {'rows':>6} {'peak RSS MiB':>13}")
    for what, res in results.items():
        print(f"{what:16} {res['seconds']:8.2f} {res['rows']:6d} {res['peak_rss_mib']:13.0f}")
    print(
        f"change_effects / ab_uncertainty: {c['seconds'] / a['seconds']:.2f} x the time, "
        f"{c['peak_rss_mib'] / a['peak_rss_mib']:.2f} x the peak memory"
    )


if __name__ == "__main__":
    main()
