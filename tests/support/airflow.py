"""The Airflow virtualenv (.venv-airflow, or TIERLENS_AIRFLOW_VENV) and the environment and driver
the tests run real Airflow with, in a child process of that virtualenv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_VENV = Path(os.environ.get("TIERLENS_AIRFLOW_VENV", REPO / ".venv-airflow"))
AIRFLOW_PY = AIRFLOW_VENV / "bin" / "python"
AIRFLOW_EXE = AIRFLOW_VENV / "bin" / "airflow"
DBT = Path(sys.executable).parent / "dbt"


def require_airflow() -> None:
    """Skips the test when the Airflow virtualenv is missing."""
    if not AIRFLOW_PY.exists():
        pytest.skip(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make test` (or `make airflow-venv`) creates it")


def airflow_env(af_home: Path, settings: dict[str, str]) -> dict[str, str]:
    """The environment of an Airflow child process: this one's without its AIRFLOW_* and TIERLENS_*
    variables, a SQLite AIRFLOW_HOME at ``af_home`` (migrated here), no telemetry, tasks not
    retried, dbt from this venv, then ``settings``. Skips when the Airflow venv is missing."""
    require_airflow()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIERLENS_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(af_home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            # Cosmos renders the dbt project while the DAG file is parsed (a `dbt ls` child): on a busy
            # 2-core machine that outlasts Airflow's default 30 s import timeout
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__COSMOS__ENABLE_TELEMETRY": "False",
            "AIRFLOW__COSMOS__CACHE_DIR": str(af_home / "cosmos"),
            "DO_NOT_TRACK": "1",
            "SCARF_NO_ANALYTICS": "true",
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "False",
            "TIERLENS_DBT_EXECUTABLE": str(DBT),
            "TIERLENS_RETRIES": "0",
            "DBT_INDIRECT_SELECTION": "cautious",  # no test of a model left out of TIERLENS_DBT_SELECT
            **settings,
        }
    )
    r = subprocess.run([str(AIRFLOW_EXE), "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return env


#: runs a plan of DAG runs in-process with DagBag, printing DRIVER-RESULT and a JSON line
DRIVER = r"""
import json, sys
from datetime import datetime
from airflow.dag_processing.dagbag import DagBag

plan = json.loads(sys.argv[1])


def from_trigger(task):
    # what the triggerer does with a task that starts from its trigger: the class by its path,
    # built from the task's kwargs, serialized back the same
    import importlib
    args = task.start_trigger_args
    module, name = args.trigger_cls.rsplit(".", 1)
    trigger = getattr(importlib.import_module(module), name)(**args.trigger_kwargs)
    return {"next_method": args.next_method, "round_trip": trigger.serialize() == (args.trigger_cls, args.trigger_kwargs),
            "callable": callable(getattr(task, args.next_method, None))}


def core_tests(dag):
    # each model's task: whether it expects a test result in an hourly build without the column
    # checks, beside the producer's own list of the model's tests
    producer = dag.task_dict.get("dbt_producer_watcher")
    tests = getattr(producer, "tests_per_model", None) or {}
    return {t.task_id: [t.has_core_tests, tests.get(t.model_unique_id, [])]
            for t in dag.tasks if hasattr(t, "has_core_tests")}


bag = DagBag(dag_folder=plan["dags"])
out = {"import_errors": {k: str(v)[-2000:] for k, v in bag.import_errors.items()},
       "dags": {d: {"tasks": sorted(t.task_id for t in dag.tasks),
                    "from_trigger": {t.task_id: from_trigger(t) for t in dag.tasks if t.start_from_trigger},
                    "core_tests": core_tests(dag),
                    "upstream": {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks},
                    "timetable": type(dag.timetable).__name__,
                    "outlets": sorted(str(getattr(o, "name", o)) for t in dag.tasks for o in t.outlets)}
                for d, dag in bag.dags.items()},
       "runs": []}
for run in plan.get("runs", []):
    dag = bag.dags[run["dag"]]
    kw = {"logical_date": datetime.fromisoformat(run["logical_date"])} if run.get("logical_date") else {}
    dr = dag.test(**kw)
    out["runs"].append({"dag": run["dag"], "state": str(dr.state),
                        "start": dr.data_interval_start.isoformat() if dr.data_interval_start else None,
                        "end": dr.data_interval_end.isoformat() if dr.data_interval_end else None,
                        "tasks": {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}})
print("DRIVER-RESULT " + json.dumps(out))
"""


def run_dags(env: dict[str, str], cwd: Path, runs: list[dict], timeout: float = 1200) -> dict:
    """DRIVER in a child of the Airflow virtualenv: the DagBag's summary and each of ``runs``
    ({"dag": id, "logical_date": iso, optional}) run by ``dag.test()``, one after the other."""
    import json

    plan = {"dags": str(REPO / "dags"), "runs": runs}
    r = subprocess.run(
        [str(AIRFLOW_PY), "-c", DRIVER, json.dumps(plan)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    lines = [x for x in r.stdout.splitlines() if x.startswith("DRIVER-RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-6000:] + r.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("DRIVER-RESULT "))
