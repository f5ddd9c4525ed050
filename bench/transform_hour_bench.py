"""The hourly transform as a new user sees it: the tierlens_transform DAG triggered in Airflow
standalone, from trigger to finish, against `tierlens transform` by hand, on the same new hour.

Like for like: one warehouse is built (the synthetic site's first ``--days`` days loaded and
transformed), then copied whole (warehouse, dbt state, published snapshot) into two homes. For each
of ``--hours`` new hours the same hour is loaded into both (the function the ingest DAG calls),
then one home is transformed by hand (`tierlens transform`) and the other by the DAG, triggered as
the UI's Trigger button does, by a REST call to the API server (deploy/airflow/README.md), in
deploy/airflow/standalone.sh (scheduler,
DAG processor, triggerer, API server; LocalExecutor; SQLite). The order alternates from hour to
hour so neither side always finds the page cache warm. Each figure is printed with its peak
resident memory (the whole process tree: for the DAG, all of Airflow while the run lasts) and the
load average, then the DAG run's phases from the scheduler's task_instance table, and the two
warehouses' marts are compared (row counts) to show both did the same work. A trigger typed in a
shell (`deploy/airflow/airflow dags trigger`) costs an Airflow CLI process more: each hour also
times that command's process on the same DAG (`dags unpause`, which returns as soon as it has
written, as a trigger does) and prints the DAG's figure with it added.

    .venv/bin/python bench/transform_hour_bench.py [--hours 2] [--keep DIR]

Not niced: the figure is a ratio of two timings, and a niced run gives the side with more processes
(Airflow) less of the CPU. Report the load average beside each figure. On a checkout other people
are editing, run it from a snapshot so their half-made changes stay out of both sides:

    git archive HEAD | tar -x -C SNAP && ln -s $PWD/.venv $PWD/.venv-airflow SNAP/
    cd SNAP && PYTHONPATH=SNAP/pipelines TIERLENS_AIRFLOW_VENV=SNAP/.venv-airflow .venv/bin/python bench/transform_hour_bench.py

Not part of make test (a figure for bench/README.md, not an assertion).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from dag_bench import TaskSpan, phases  # noqa: E402  bench/, beside this script
from proctree import PeakSampler  # noqa: E402
from support.airflow import AIRFLOW_VENV  # noqa: E402  the tests' Airflow virtualenv
from support.processes import free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TIERLENS = Path(sys.executable).parent / "tierlens"
START = datetime(2026, 10, 1, tzinfo=timezone.utc)
DAG = "tierlens_transform"


def load_hour(home: Path, site: dict, start: datetime, end: datetime) -> dict:
    """[start, end) of the synthetic site into ``home``'s warehouse, as the ingest DAG loads it."""
    warehouse, cache = home / "warehouse.duckdb", home.parent / "synthetic"
    from tierlens.ingest.synthetic import SyntheticSourceOptions, load_interval

    return load_interval(warehouse, start, end, SyntheticSourceOptions(**site, cache_dir=str(cache)))


def tierlens_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIERLENS_"))}
    env["TIERLENS_HOME"] = str(home)
    return env


def by_hand(home: Path) -> tuple[float, float, str]:
    """Seconds of `tierlens transform` on ``home``, its tree's peak MiB, the load average after."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [str(TIERLENS), "transform", "-w", str(home / "warehouse.duckdb"), "--project-dir", str(project(home))],
            env=tierlens_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        with PeakSampler(proc) as peak:
            proc.wait()
        seconds = time.monotonic() - t0
        if proc.returncode != 0:
            out.seek(0)
            sys.exit(f"tierlens transform failed:\n{out.read().decode(errors='replace')[-4000:]}")
    return seconds, peak.peak_mib, load()


def project(home: Path) -> Path:
    """The bench's own copy of the dbt project, beside the homes: a checkout being edited would
    change the project between hours (Cosmos then lists it again with `dbt ls` and dbt parses it
    whole), which no deployment sees."""
    return home.parent / "dbt"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Standalone:
    """deploy/airflow/standalone.sh for one tierlens home, on free loopback ports, in a session of
    its own so that stopping it stops everything it started."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.db = home / "airflow" / "airflow.db"
        self.env = tierlens_env(home) | {
            "AIRFLOW_VENV": str(AIRFLOW_VENV),
            "AIRFLOW__API__PORT": str(free_port()),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "TIERLENS_DBT_EXECUTABLE": str(Path(sys.executable).parent / "dbt"),
            "TIERLENS_RETRIES": "0",
            "TIERLENS_DBT_PROJECT_DIR": str(project(home)),
        }
        self.log = home.parent / "standalone.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Standalone:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(REPO / "deploy" / "airflow" / "standalone.sh")],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        # standalone.sh stops its components on SIGINT or SIGTERM; then anything left in its session
        for sig, grace in ((signal.SIGINT, 90), (signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue

    def airflow(self, *args: str) -> subprocess.CompletedProcess:
        """The README's second-shell command: deploy/airflow/airflow with only TIERLENS_HOME."""
        return subprocess.run(
            [str(REPO / "deploy" / "airflow" / "airflow"), *args],
            # the deployment's settings, as the service has them (the same dbt project)
            env=tierlens_env(self.home) | {"TIERLENS_DBT_PROJECT_DIR": str(project(self.home))},
            capture_output=True,
            text=True,
            timeout=300,
        )

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            try:
                return con.execute(sql, params).fetchall()
            finally:
                con.close()
        except sqlite3.Error:  # not migrated yet, or busy: ask again
            return []

    def unpaused(self, deadline: float) -> None:
        """Unpause the transform DAG once the DAG processor has stored it (Cosmos' `dbt ls` first)."""
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.tail()
            if self.rows("SELECT is_paused FROM dag WHERE dag_id = ?", (DAG,)):
                r = self.airflow("dags", "unpause", DAG, "-y")
                if r.returncode == 0 and self.rows("SELECT is_paused FROM dag WHERE dag_id = ?", (DAG,)) == [(0,)]:
                    return
            time.sleep(5)
        sys.exit(f"{DAG} never appeared unpaused\n{self.tail()}")

    def api(self, path: str, body: dict, token: str | None = None) -> dict:
        """POST ``body`` to the API server, as the UI does; the answer's JSON."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.env['AIRFLOW__API__PORT']}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {}),
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    def token(self) -> str:
        """A token for the standalone's admin: the simple auth manager's generated password (the one
        standalone prints), from its file in AIRFLOW_HOME."""
        passwords = json.loads((self.home / "airflow" / "simple_auth_manager_passwords.json.generated").read_text())
        return self.api("/auth/token", {"username": "admin", "password": passwords["admin"]})["access_token"]

    def cli_seconds(self) -> float:
        """Seconds of an Airflow CLI command on the DAG (`dags unpause`, already unpaused): the
        process a trigger typed in a shell costs before the scheduler sees the run."""
        t0 = time.monotonic()
        r = self.airflow("dags", "unpause", DAG, "-y")
        if r.returncode != 0:
            sys.exit(f"airflow dags unpause failed: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        return time.monotonic() - t0

    def trigger(self) -> tuple[float, float, str, str]:
        """Seconds from the REST trigger (the UI's button) to the run's end as the scheduler records
        it, the Airflow tree's peak MiB meanwhile, the load average after and the run's id."""
        assert self.proc is not None
        before = {r[0] for r in self.rows("SELECT run_id FROM dag_run WHERE dag_id = ?", (DAG,))}
        token = self.token()  # the UI's session is open before its button is pressed
        with PeakSampler(self.proc) as peak:
            t0 = time.monotonic()
            self.api(f"/api/v2/dags/{DAG}/dagRuns", {"logical_date": None}, token)
            while True:
                runs = [
                    x
                    for x in self.rows("SELECT run_id, state FROM dag_run WHERE dag_id = ?", (DAG,))
                    if x[0] not in before
                ]
                if runs and runs[0][1] in ("success", "failed"):
                    seconds = time.monotonic() - t0
                    break
                if time.monotonic() - t0 > 1800:
                    sys.exit(f"the triggered run did not end in 30 min\n{self.tail()}")
                time.sleep(0.2)
        run_id, state = runs[0]
        if state != "success":
            sys.exit(f"the triggered run {run_id} {state}\n{self.tail()}")
        return seconds, peak.peak_mib, load(), run_id

    def spans(self, run_id: str) -> list[TaskSpan]:
        rows = self.rows(
            "SELECT task_id, state, start_date, end_date FROM task_instance WHERE dag_id = ? AND run_id = ? "
            "AND start_date IS NOT NULL AND end_date IS NOT NULL",
            (DAG, run_id),
        )
        return [TaskSpan(t, s, datetime.fromisoformat(a), datetime.fromisoformat(b)) for t, s, a, b in rows]

    def run_times(self, run_id: str) -> tuple[datetime, datetime, datetime]:
        (q, s, e), *_ = self.rows(
            "SELECT queued_at, start_date, end_date FROM dag_run WHERE dag_id = ? AND run_id = ?", (DAG, run_id)
        )
        return tuple(datetime.fromisoformat(x) for x in (q, s, e))  # type: ignore[return-value]

    def tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


def mart_counts(home: Path) -> dict[str, int]:
    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'marts' ORDER BY 1"
            ).fetchall()
        ]
        return {n: con.execute(f'SELECT count(*) FROM marts."{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=1.0, help="history loaded and transformed before (days)")
    ap.add_argument("--hours", type=int, default=3, help="new hours, each transformed both ways")
    ap.add_argument("--nodes-per-type", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder, removed)")
    args = ap.parse_args()
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        sys.exit(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make airflow-venv` creates it")
    base = args.keep or Path(tempfile.mkdtemp(prefix="transform-hour-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    # the site runs past the measured hours, so each new hour has jobs ending in it
    options = {
        "start": START.date().isoformat(),
        "days": args.days + 1,
        "seed": args.seed,
        "nodes_per_type": args.nodes_per_type,
    }
    setup, dag_home, hand_home = base / "setup", base / "dag", base / "by-hand"
    setup.mkdir()
    shutil.copytree(REPO / "dbt", project(setup), ignore=shutil.ignore_patterns("target", "logs", ".user.yml"))
    history_end = START + timedelta(days=args.days)
    t0 = time.monotonic()
    load_hour(setup, options, START, history_end)
    first, _, _ = by_hand(setup)
    print(f"history: {args.days:g} days loaded and built in {time.monotonic() - t0:.1f} s (transform {first:.1f} s)")
    shutil.copytree(setup, dag_home)
    shutil.copytree(setup, hand_home)

    with Standalone(dag_home) as af:
        t0 = time.monotonic()
        af.unpaused(time.monotonic() + 1200)
        print(f"Airflow standalone up, {DAG} parsed and unpaused in {time.monotonic() - t0:.1f} s; load {load()}")
        for h in range(args.hours):
            start = history_end + timedelta(hours=h)
            end = start + timedelta(hours=1)
            loaded = [load_hour(home, options, start, end) for home in (dag_home, hand_home)]
            jobs = loaded[0].get("rows_loaded", loaded[0])
            print(f"\nnew hour [{start:%Y-%m-%d %H:%M}, {end:%H:%M}) UTC loaded into both homes: {jobs}")
            # alternate which side goes first: neither always finds the page cache warm
            order = ("hand", "dag") if h % 2 == 0 else ("dag", "hand")
            figures: dict[str, tuple] = {}
            for side in order:
                figures[side] = af.trigger() if side == "dag" else by_hand(hand_home)
            dag_s, dag_mib, dag_load, run_id = figures["dag"]
            hand_s, hand_mib, hand_load = figures["hand"]
            cli_s = af.cli_seconds()
            queued, started, ended = af.run_times(run_id)
            print(
                f"  DAG run, trigger to finish: {dag_s:.1f} s (queued to end {(ended - queued).total_seconds():.1f} s, "
                f"start to end {(ended - started).total_seconds():.1f} s); peak RSS of Airflow's tree "
                f"{dag_mib:,.0f} MiB; load {dag_load}"
            )
            print(f"  `tierlens transform`: {hand_s:.1f} s; peak RSS {hand_mib:,.0f} MiB; load {hand_load}")
            print(f"  ratio {dag_s / hand_s:.2f} (first: {order[0]})")
            print(
                f"  with a CLI trigger's process ({cli_s:.1f} s, load {load()}): {dag_s + cli_s:.1f} s, "
                f"ratio {(dag_s + cli_s) / hand_s:.2f}"
            )
            for name, value in phases(af.spans(run_id)).items():
                print(f"    {name}: {value:.1f}")
            a, b = mart_counts(dag_home), mart_counts(hand_home)
            differ = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
            print(f"  marts: {len(a)} tables, row counts " + ("equal" if not differ else f"differ: {differ}"))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
