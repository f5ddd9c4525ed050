"""tierlens_transform: the dbt project (staging -> intermediate -> marts) through astronomer-cosmos.

One ``dbt build`` per run (Cosmos ExecutionMode.WATCHER): the ``dbt_producer_watcher`` task runs
it, incremental models taking only new and late data, and every model (and seed) still has a task
of its own that shows its status and its tests' as dbt reported them, once the build is over. Such
a task starts in the triggerer and, when its node passed, ends there (no worker process); a failed
node's task goes to a worker and fails there, and retrying it rebuilds that model alone. Scheduled by the ``tierlens_raw`` Asset that tierlens_ingest
updates. The producer first loads what an ingest landed while the warehouse was busy (its
pre_execute, begin_landed_build); publish_snapshot records the run in the warehouse's history,
applies raw retention and (on DuckDB) publishes the snapshot that readers open; on a Spark
target python_marts then computes the marts dbt-spark cannot build (the dbt Python models) by
their CLI twins. Only the producer and the
publish take the warehouse pool (one writer); the model tasks watch, they do not write. The dbt target (engine) comes from the ``dbt_target`` setting: duckdb (default),
spark or spark_thrift. dbt runs as a subprocess of the dbt in tierlens' own virtualenv
(``dbt_executable`` setting), so Airflow's and dbt's pins never meet.
Completeness thresholds (tests on marts.data_completeness): a warning marks the run
(the build hands its warned tests to ``completeness_alert``, below), a hard floor fails the test
task. Settings: dags/README.md.
"""

from __future__ import annotations

import os
from typing import Any

# Before cosmos is imported: it reads these once. Nothing phones home.
os.environ.setdefault("AIRFLOW__COSMOS__ENABLE_TELEMETRY", "False")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
# (deploy/airflow sets it for every Airflow process, which may import Cosmos before this file)
os.environ.setdefault("AIRFLOW__COSMOS__ENABLE_WATCHER_RELIABLE_RETRY", "False")

from airflow.sdk import get_current_context, task  # noqa: E402
from airflow.sdk.exceptions import AirflowSkipException  # noqa: E402
from cosmos import DbtDag, ExecutionConfig, ProfileConfig, ProjectConfig, RenderConfig  # noqa: E402
from cosmos.constants import (
    PRODUCER_WATCHER_TASK_ID,
    DbtResourceType,
    ExecutionMode,
    InvocationMode,  # noqa: E402
    LoadMode,
    TestBehavior,
)

from tierlens.orchestration import (
    airflow_glue as af,  # noqa: E402
    settings as cfg,  # noqa: E402
)

# tierlens.orchestration.tasks is imported where a task runs, not here: it needs pyarrow (about a
# second to import), and every task process of a run parses this file.

var = af.airflow_var
_project = cfg.dbt_project_dir(var)
_dbt = cfg.dbt_executable(var)
# The engine is configuration: setting dbt_target (Variable tierlens_dbt_target, env
# TIERLENS_DBT_TARGET) names a dbt/profiles.yml output; the Spark ones read the lake.
_target = cfg.dbt_target(var)
_env = cfg.dbt_env(var)
_pool = af.dag_setting("pool")


def begin_landed_build() -> dict:
    """What an ingest landed while the warehouse was busy, loaded, and the run's start recorded
    (the test scope, the publish's baseline): the producer's first step (af.begin_build)."""
    from tierlens.orchestration import tasks

    wh = cfg.warehouse_path(var)
    return tasks.load_landed(wh) | {"begun": tasks.begin_transform(wh, var) if wh.exists() else None}


# The producer's XCom that hands the build's warned tests to the completeness_alert task
WARNED_XCOM = "dbt_warned_tests"


def hand_over_warnings(project_dir: str, context: Any = None, **_: Any) -> None:
    """Cosmos calls this in the producer once ``dbt build`` has returned, failed or not, with the
    build's temporary project folder (deleted right after): the tests dbt reported 'warn' in that
    build's target/run_results.json go to the producer's XCom for completeness_alert, each with the
    rows it found (its compiled SQL run read-only on the warehouse the build has just released),
    and the tests that ran to a verdict. The watcher build calls no on_warning_callback, and its
    watching test tasks report pass or fail only. Every node's verdict goes to one more XCom
    (tasks.build_outcome), which the model tasks' triggers read once per run."""
    from dataclasses import asdict
    from pathlib import Path

    from tierlens.orchestration import tasks

    results = Path(project_dir) / "target" / "run_results.json"
    handed: dict[str, Any] = {
        "run_results": results.is_file(),
        "tests": [],
        "judged": [],
        "error": None,
        "rows_unknown": None,
    }
    outcome = None
    try:
        if handed["run_results"]:  # dbt writes none when the project does not even parse
            try:
                warned = tasks.warned_tests(results)
                handed["judged"] = tasks.judged_tests(results)
                # every node's verdict in one XCom: the model tasks read it once per run
                outcome = tasks.build_outcome(results, getattr(context["task"], "tests_per_model", None) or {})
                context["ti"].xcom_push(key=af.BUILD_OUTCOME_XCOM, value=outcome)
            except tasks.RunResultsError as e:  # the alert task fails with it; the build's own state stands
                handed["error"] = str(e)
                warned = []
            if warned and _target == "duckdb":
                warned, handed["rows_unknown"] = tasks.failing_rows(cfg.warehouse_path(var), warned)
            elif warned:
                handed["rows_unknown"] = f"dbt target {_target}: each warned test counts as one condition"
            handed["tests"] = [asdict(w) | {"compiled_sql": ""} for w in warned]
        context["ti"].xcom_push(key=WARNED_XCOM, value=handed)
    finally:
        # the per-node XComs the producer held during the build: those of the nodes that did not
        # pass (all of them without an outcome), for the workers that report those nodes
        af.release_node_xcoms(context, outcome)


def mark_run(run_id: str, build: dict[str, Any], ti: Any) -> dict[str, Any]:
    """Mark a run whose build warned (e.g. a completeness threshold) once per condition: a
    condition (test, day, subject) alerted by an earlier run and still found is not alerted again
    (<home>/alerts/tierlens_transform.open-conditions.json remembers them); one that cleared and
    came back is. A run with new conditions writes <home>/alerts/tierlens_transform/<run_id>.json,
    and with ``alert_email`` set mails them through smtp_default. The task's XCom ``warnings``
    holds every warned test either way. A failed hard floor is not a warning: that test errors
    and fails its task."""
    from tierlens.orchestration import tasks

    warned = [
        tasks.WarnedTest(w["unique_id"], w["failures"], w["message"], "", tuple(w["rows"])) for w in build["tests"]
    ]
    alerts = cfg.paths(var).alerts
    new, still_open = tasks.new_conditions(alerts, "tierlens_transform", run_id, warned, build.get("judged", []))
    tests = [w.unique_id for w in warned]
    failures = [w.failures for w in warned]
    results = [w.message for w in warned]
    marked: dict[str, Any] = {
        "tests": tests,
        "failures": failures,
        "new_conditions": new,
        "still_open": still_open,
        "rows_unknown": build.get("rows_unknown"),
        "alert_file": None,
    }
    if new:
        path = tasks.record_alert(alerts, "tierlens_transform", run_id, tests, results, failures, new, still_open)
        marked["alert_file"] = str(path)
    ti.xcom_push(key="warnings", value=marked)
    to = cfg.settings_list("alert_email", var)
    if to and new:
        from airflow.providers.smtp.hooks.smtp import SmtpHook

        body = (
            "<p>tierlens_transform run {} found new completeness conditions:</p><ul>{}</ul>"
            "<p>{} alerted before and still open. Tests: {}</p><p>{}</p>".format(
                run_id,
                "".join(f"<li>{c}</li>" for c in new),
                len(still_open),
                "; ".join(f"{t}: {'?' if n is None else n} rows ({m})" for t, n, m in zip(tests, failures, results)),
                marked["alert_file"],
            )
        )
        with SmtpHook(smtp_conn_id="smtp_default") as hook:
            hook.send_email_smtp(to=to, subject=f"tierlens: data completeness warning ({run_id})", html_content=body)
    return marked


tierlens_transform = DbtDag(
    **af.dag_kwargs("tierlens_transform", schedule=[af.raw_asset()], catchup=False),
    doc_md=__doc__,
    # no dbt_vars: the render's `dbt ls` saves dbt's parse of the project (Cosmos hands it to the
    # build), and dbt parses the whole project again (about a minute on two cores) when a build's
    # vars differ from that parse's; a build's test scope reaches dbt in its environment instead
    # (test_scope_from, transform.RunParameters)
    project_config=ProjectConfig(dbt_project_path=_project, env_vars=_env),
    profile_config=ProfileConfig(
        profile_name="tierlens", target_name=_target, profiles_yml_filepath=_project / "profiles.yml"
    ),
    # one dbt build per run, holding the writer pool; it is never retried by Airflow (Cosmos skips a
    # producer's retry): a failed model's own task reruns that model
    execution_config=ExecutionConfig(
        execution_mode=ExecutionMode.WATCHER,
        dbt_executable_path=_dbt,
        invocation_mode=InvocationMode.SUBPROCESS,
        setup_operator_args={
            "pool": _pool,
            "retries": 0,
            "callback": hand_over_warnings,
            # the landed files loaded and the run begun in the producer's own process; the column
            # checks only when every test is due (the run's start)
            "pre_execute": af.begin_build(begin_landed_build),
        },
    ),
    # One task per model (and seed) reporting the model and its tests as the build ran them, not a
    # run task and a test task apiece: each task is a process that parses this file, and on a small
    # host those processes, not the build, made most of the run's time. A test of several models
    # counts for each of them.
    render_config=RenderConfig(
        load_method=LoadMode.DBT_LS,
        test_behavior=TestBehavior.NONE,
        invocation_mode=InvocationMode.SUBPROCESS,
        dbt_executable_path=_dbt,
        emit_datasets=False,
        node_converters={DbtResourceType.MODEL: af.watch_node_build, DbtResourceType.SEED: af.watch_node_build},
        select=cfg.settings_list("dbt_select", var),
    ),
    # the per-model tasks only watch the build: the default pool, so they never hold the writer's slot
    operator_args={"install_deps": False, "emit_datasets": False, "pool": "default_pool"},
)

# Readers (tierlens sql, the report, duckdb -readonly) open a published snapshot, never the file the
# pipeline writes: brought up to date once every model and test of this run has passed.
with tierlens_transform:
    _producer = tierlens_transform.task_dict[PRODUCER_WATCHER_TASK_ID]

    @task(task_id="publish_snapshot", pool=_pool)
    def publish_snapshot() -> dict:
        """The run recorded in the warehouse's history (on every target: the next run's test scope
        and new rows count from it), raw retention, and on DuckDB the snapshot readers open."""
        from tierlens.orchestration import tasks

        landed = get_current_context()["ti"].xcom_pull(task_ids=_producer.task_id, key=af.LANDED_XCOM)
        if not landed:
            raise ValueError(f"{_producer.task_id} left no {af.LANDED_XCOM} XCom: the run's start is unknown")
        return tasks.finish_transform(cfg.warehouse_path(var), landed["begun"], var)

    _dbt_tasks = [t for t in tierlens_transform.tasks if t is not _producer]  # a task per model and seed
    af.watch_in_one_wave(_dbt_tasks)
    af.build_with_tests(_producer)  # the one build runs the tests too
    af.release_held_on_failure(_producer)  # the per-node XComs it held, when cut short
    af.no_lineage_without_its_provider(_producer)
    af.mark_core_tests(_producer, _dbt_tasks)
    # Every model's task reads its node's result once the build has finished, in the triggerer
    # (ModelBuildWatcher starts from its trigger): the build has no CPU to spare for dozens of
    # polling watchers, and after it each one is a coroutine rather than a task process. The order
    # also suits `dag.test()`, which runs every task on a worker, one after the other (a watcher
    # run before the build would wait forever). all_done: a failed build still lets each model's
    # task report its own node.
    for _t in list(tierlens_transform.tasks):
        if _t is not _producer and (not _t.upstream_task_ids or _t.upstream_task_ids == {_producer.task_id}):
            _producer >> _t
            _t.trigger_rule = "all_done"

    @task(task_id="completeness_alert", trigger_rule="all_done")
    def completeness_alert() -> dict[str, Any]:
        """Marks the run when its build warned; all_done: a build that failed on a hard floor may
        have warned too."""
        ctx = get_current_context()
        build = ctx["ti"].xcom_pull(task_ids=_producer.task_id, key=WARNED_XCOM)
        if not build or not build["run_results"]:
            # the build ended before dbt wrote its results: it failed, and says why itself
            return {"run_results": False, "tests": []}
        if build["error"]:
            raise ValueError(f"the build's warned tests cannot be read: {build['error']}")
        # every run passes here, warned or not: a condition that cleared must be forgotten
        return {"run_results": True} | mark_run(str(ctx["run_id"]), build, ctx["ti"])

    _producer >> completeness_alert()
    # after every model's task, not after the build alone: a model that failed in the build is
    # published only once its task's retry rebuilt it, and trigger rules cannot say "after the
    # build when it passed, else after the retries" without a second task (a process more)
    # (the producer is no upstream: a build that failed leaves the publish to the retries)
    _published = publish_snapshot()
    _dbt_tasks >> _published

    @task(task_id="python_marts", pool="default_pool")
    def python_marts() -> dict:
        """On a Spark target, the marts dbt-spark cannot build (Python models): computed by their
        CLI twins from the marts the build wrote (settings spark_warehouse, python_marts_dir).
        After the publish: only from a build whose every model passed."""
        if _target == "duckdb":
            raise AirflowSkipException("dbt target duckdb: the build ran the Python models itself")
        from tierlens.orchestration import spark_marts

        return spark_marts.python_marts(var)

    _published >> python_marts()
