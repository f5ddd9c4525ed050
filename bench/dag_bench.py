"""The scheduled tierlens_transform DAG run against `tierlens transform` on the same warehouse.

Runs tests/test_airflow_standalone.py's deployment test (deploy/airflow/standalone.sh: scheduler,
DAG processor, triggerer and API server, LocalExecutor, SQLite; the synthetic site, two days, one
node per type; the scheduled ingest, then the transform its Asset triggers) under a sampler of the
whole process tree's resident memory. That test times the DAG run from the scheduler's own record
and then `tierlens transform` on a copy of the same raw warehouse. This script prints the two, their
ratio, the peak RSS, the load average, and where the DAG run's time went, read from the
scheduler's task_instance table: the task count, each phase (until the build, the one dbt build, the
watching tasks after it, publish_snapshot), the median task duration, and how many watching tasks
a worker ran (the others started and ended in the triggerer).

    nice -n 10 python bench/dag_bench.py [--keep DIR]

Not part of make test (a figure for dags/README.md and bench/README.md, not an assertion).
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proctree import PeakSampler  # noqa: E402  bench/, beside this script

REPO = Path(__file__).resolve().parents[1]
TEST = "tests/test_airflow_standalone.py::test_standalone_script_schedules_ingest_and_triggers_transform"
FIGURE = re.compile(r"scheduled tierlens_transform run: ([\d.]+) s; .*?: ([\d.]+) s; ratio ([\d.]+)")


@dataclass
class TaskSpan:
    task_id: str
    state: str
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def scheduler_rows(db: Path, sql: str) -> list[tuple]:
    """The rows of a query on the scheduler's SQLite database, opened read-only."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def transform_tasks(db: Path) -> list[TaskSpan]:
    """The task instances of the successful tierlens_transform run the ingest triggered (the test
    then triggers one with a broken model by hand)."""
    rows = scheduler_rows(
        db,
        "SELECT ti.task_id, ti.state, ti.start_date, ti.end_date FROM task_instance ti "
        "JOIN dag_run r ON r.dag_id = ti.dag_id AND r.run_id = ti.run_id "
        "WHERE ti.dag_id = 'tierlens_transform' AND r.state = 'success' AND r.run_type = 'asset_triggered' "
        "AND ti.start_date IS NOT NULL",
    )
    return [TaskSpan(t, s, datetime.fromisoformat(a), datetime.fromisoformat(b)) for t, s, a, b in rows]


def phases(spans: list[TaskSpan]) -> dict[str, float]:
    """Seconds of each phase of the run, and the watching tasks' count and median duration."""
    by_id = {s.task_id: s for s in spans}
    first = min(s.start for s in spans)
    build = by_id["dbt_producer_watcher"]
    watchers = [s for s in spans if s.task_id.endswith("_build")]
    out = {
        "tasks": float(len(spans)),
        "until_build_s": (build.start - first).total_seconds(),
        "dbt_build_s": build.seconds,
    }
    if watchers:
        out |= {
            "watchers": float(len(watchers)),
            "watchers_after_build_s": (max(w.end for w in watchers) - build.end).total_seconds(),
            "watcher_median_s": statistics.median(w.seconds for w in watchers),
        }
    if "publish_snapshot" in by_id:
        out["publish_s"] = by_id["publish_snapshot"].seconds
    out["run_span_s"] = (max(s.end for s in spans) - first).total_seconds()
    return out


def warm_watchers_after_build(db: Path) -> float | None:
    """Seconds from the end of the build to the last watching task that passed on its first try,
    in the test's second transform run (the one with a model broken by hand, triggered once the
    first is over): the same wave with the triggerer warm, as every hourly run after the first of
    a deployment finds it. The first run's wave includes the triggerer's first use of the
    execution API (~5 s on this host, once per triggerer process)."""
    rows = scheduler_rows(
        db,
        "SELECT max(w.end_date), p.end_date FROM task_instance w "
        "JOIN dag_run r ON r.dag_id = w.dag_id AND r.run_id = w.run_id "
        "JOIN task_instance p ON p.dag_id = w.dag_id AND p.run_id = w.run_id "
        "AND p.task_id = 'dbt_producer_watcher' "
        "WHERE w.dag_id = 'tierlens_transform' AND r.run_type = 'manual' AND w.task_id LIKE '%\\_build' ESCAPE '\\' "
        "AND w.state = 'success' AND w.try_number = 1 GROUP BY p.end_date",
    )
    row = rows[0] if rows else None
    if not row or row[0] is None:
        return None
    return (datetime.fromisoformat(row[0]) - datetime.fromisoformat(row[1])).total_seconds()


def watchers_on_a_worker(af_home: Path) -> int:
    """Watching tasks of the transform run the ingest triggered that a worker ran (a log
    ``attempt=<n>.log`` of their own, not only their trigger's): 0 when every model passed and its
    task ended in the triggerer. (The test's later run, with a model broken on purpose, has one.)"""
    runs = af_home / "logs" / "dag_id=tierlens_transform"
    return sum(
        1
        for w in runs.glob("run_id=asset_triggered__*/task_id=*_build")
        if any(re.fullmatch(r"attempt=\d+\.log", f.name) for f in w.iterdir())
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="pytest --basetemp: keep the run's Airflow home and logs here")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="dag-bench-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "pipelines"), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", f"--basetemp={base}", TEST]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        with PeakSampler(proc) as peak:
            proc.wait()
        out.seek(0)
        text = out.read().decode(errors="replace")
    found = FIGURE.search(text)
    if proc.returncode != 0 or not found:
        print(text[-6000:])
        print(f"the standalone test failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    dag_s, by_hand_s, ratio = (float(g) for g in found.groups())
    print(
        f"scheduled tierlens_transform run {dag_s:.1f} s; `tierlens transform` on a copy {by_hand_s:.1f} s; "
        f"ratio {ratio:.2f}; peak RSS of the whole tree (Airflow, tasks, dbt, the test) {peak.peak_mib:.0f} MiB; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    dbs = sorted(base.rglob("airflow/airflow.db"))
    if dbs:
        for name, value in phases(transform_tasks(dbs[-1])).items():
            print(f"  {name}: {value:.1f}")
        print(f"  watchers_on_a_worker: {watchers_on_a_worker(dbs[-1].parent)}")
        warm = warm_watchers_after_build(dbs[-1])
        if warm is not None:
            print(f"  second run, triggerer warm: watchers_after_build_s: {warm:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
