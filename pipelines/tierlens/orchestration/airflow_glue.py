"""What the DAG files need from Airflow itself: Variables, the raw Asset, timetables, default args.

Airflow is imported inside each function, so the rest of tierlens (and its tests) never needs it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from .settings import setting

#: Name and URI of the Asset tierlens_ingest updates and tierlens_transform is scheduled on.
RAW_ASSET_NAME, RAW_ASSET_URI = "tierlens_raw", "tierlens://warehouse/raw"

_PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}


#: Variables read in this process, with when: a task process parses the DAG file, which reads
#: each setting once or more (the home behind every path), and each read of a Variable is a round
#: trip through the task's supervisor to the API server (1-2 s of a parse on a busy 2-core host).
_VARS: dict[str, tuple[float, str | None]] = {}
#: How long a Variable read is reused: a task process lives for one task, the DAG processor parses
#: each file in a process of its own; a longer-lived process reads a changed Variable after this.
VAR_HELD_S = 60.0


def airflow_var(key: str) -> str | None:
    """An Airflow Variable, or None (also when no metadata database is reachable)."""
    now = time.monotonic()
    held = _VARS.get(key)
    if held is not None and now - held[0] < VAR_HELD_S:
        return held[1]
    try:
        from airflow.sdk import Variable

        value = Variable.get(key, default=None)
    except Exception:  # noqa: BLE001 - parsing outside a running Airflow: environment only
        return None
    _VARS[key] = (now, value)
    return value


def dag_setting(name: str) -> str:
    return setting(name, airflow_var)


def raw_asset():
    from airflow.sdk import Asset

    return Asset(name=RAW_ASSET_NAME, uri=RAW_ASSET_URI)


def dag_timetable(name: str):
    """A cron schedule with real data intervals [previous tick, this tick) in UTC.

    (Airflow 3's plain ``schedule="@hourly"`` makes zero-length intervals; the tasks select
    their input by interval, so they need the interval.)
    """
    from airflow.timetables.interval import CronDataIntervalTimetable

    cron = dag_setting(name)
    return CronDataIntervalTimetable(_PRESETS.get(cron, cron), timezone="UTC")


def dag_start_date() -> datetime:
    # (not intervals.utc: that module needs pyarrow, which every parse of a DAG file would import)
    start = datetime.fromisoformat(dag_setting("start_date"))
    return start.replace(tzinfo=timezone.utc) if start.tzinfo is None else start.astimezone(timezone.utc)


def dag_catchup() -> bool:
    return dag_setting("catchup").strip().lower() in ("1", "true", "yes", "on")


def dag_default_args() -> dict:
    return {
        "owner": "tierlens",
        "retries": int(dag_setting("retries")),
        "retry_delay": timedelta(minutes=float(dag_setting("retry_delay_minutes"))),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=60),
        "execution_timeout": timedelta(minutes=float(dag_setting("task_timeout_minutes"))),
        # DuckDB has one writer at a time: every task touching the warehouse takes this pool's slot.
        "pool": dag_setting("pool"),
    }


def dag_kwargs(dag_id: str, schedule_setting: str | None = None, **overrides) -> dict:
    """What every tierlens DAG shares: its schedule (a timetable from ``schedule_setting``), start,
    catch-up, one run at a time, the default args and the tag; ``overrides`` replace any of them."""
    kwargs = {
        "dag_id": dag_id,
        "start_date": dag_start_date(),
        "catchup": dag_catchup(),
        "max_active_runs": 1,
        "default_args": dag_default_args(),
        "tags": ["tierlens"],
    }
    if schedule_setting is not None:
        kwargs["schedule"] = dag_timetable(schedule_setting)
    return kwargs | overrides


# ---- Cosmos: one watching task per dbt model (or seed) and its tests ------------------------------
# Cosmos' watcher mode renders a task for a model's run and another for its tests (TestBehavior
# AFTER_EACH), and has no build-per-node task (it refuses TestBehavior.BUILD). On a small host every
# task is a process that parses the DAG file, so the transform DAG renders TestBehavior.NONE with
# these converters instead: one task per node that reports the node and all its tests (a test of
# several models counts for each of them), as the one `dbt build` ran them.


def __getattr__(name: str):
    """``ModelBuildWatcher`` and ``NodeBuildTrigger`` by their import paths, built on first use
    (Cosmos is imported only then)."""
    if name == "ModelBuildWatcher":
        return _model_build_watcher()
    if name == "NodeBuildTrigger":
        return _node_build_trigger()
    raise AttributeError(name)


#: Where the triggerer finds the watching tasks' trigger (this module's __getattr__).
NODE_BUILD_TRIGGER = f"{__name__}.NodeBuildTrigger"
#: The watching task's method the trigger hands over to when a worker has to decide.
WATCH_ON_WORKER = "watch_on_worker"


_WATCHER: list[type] = []


def _model_build_watcher() -> type:
    if _WATCHER:
        return _WATCHER[0]
    from airflow.sdk.exceptions import AirflowException
    from cosmos.operators._watcher.aggregation import get_tests_status_xcom_key
    from cosmos.operators._watcher.state import get_xcom_val, is_dbt_node_status_success, is_producer_task_terminated
    from cosmos.operators.watcher import DbtConsumerWatcherSensor

    class ModelBuildWatcher(DbtConsumerWatcherSensor):
        """Succeeds when the build's producer reported the node and every test of it passed; fails
        with the first that did not. A retry (or a task cleared by hand) runs ``dbt build --select
        <node>``: the node and its tests again, alone."""

        base_cmd = ["build"]

        def __init__(self, *, has_tests: bool = False, **kwargs: Any) -> None:
            # Run by a worker (dag.test(), or handed over by the trigger below), the task reads the
            # build's result at once: no deferral from a worker (a second task process) and no polling.
            kwargs.setdefault("deferrable", False)
            kwargs.setdefault("poke_interval", 2)
            super().__init__(**kwargs)
            self.has_tests = has_tests
            self.has_core_tests = has_tests  # mark_core_tests knows better once the DAG is built
            # Scheduled for real, the task starts in the triggerer (NodeBuildTrigger): a node that
            # passed ends there, one coroutine instead of a task process per model; anything else
            # (a failure, a retry) is handed to a worker, which runs watch_on_worker below.
            self.start_from_trigger = True
            self.refresh_trigger_args()

        def refresh_trigger_args(self) -> None:
            from airflow.triggers.base import StartTriggerArgs

            self.start_trigger_args = StartTriggerArgs(
                trigger_cls=NODE_BUILD_TRIGGER,
                next_method=WATCH_ON_WORKER,
                trigger_kwargs={
                    "model_unique_id": self.model_unique_id,
                    "producer_task_id": self.producer_task_id,
                    "has_tests": self.has_tests,
                    "has_core_tests": self.has_core_tests,
                    "poke_interval": float(self.poke_interval),
                },
                next_kwargs=None,
                timeout=None,  # the task's execution_timeout bounds the trigger
            )

        def watch_on_worker(self, context: Any, event: Any = None) -> None:
            """What the task does when its trigger hands it over: the same as run by a worker from
            the start (report a failed node or test, or on a retry rebuild the node alone)."""
            if event:
                self.log.info("handed over by the triggerer: %s", event)
            self.execute(context)

        def _get_node_status(self, ti: Any, context: Any) -> Any:
            # the build's verdict on every node, one XCom: a node that passed (or was skipped) has
            # no XComs of its own (the producer holds them back, HeldNodeXComs)
            outcome = get_xcom_val(ti, self.producer_task_id, BUILD_OUTCOME_XCOM)
            verdict = outcome.get(self.model_unique_id) if isinstance(outcome, dict) else None
            if verdict in (NODE_PASSED, NODE_SKIPPED):
                return "success" if verdict == NODE_PASSED else "skipped"
            status = super()._get_node_status(ti, context)
            if not self.has_tests or not is_dbt_node_status_success(status):
                return status
            if not self.has_core_tests and get_xcom_val(ti, self.producer_task_id, TEST_SCOPE_XCOM) == "core":
                return status  # its only tests are column checks, and this build left them out
            tests = get_xcom_val(ti, self.producer_task_id, get_tests_status_xcom_key(self.model_unique_id))
            if tests is not None and not is_dbt_node_status_success(tests):
                self.log.error(
                    "a dbt test of %s did not pass: see the task %s", self.model_unique_id, self.producer_task_id
                )
            return tests

        def _log_startup_events(self, ti: Any) -> None:
            """Cosmos logs dbt's start-up lines at debug level in every watching task: one XCom
            request per task that shows nothing at the default level."""

        def _handle_no_dbt_node_status(self, producer_task_state: str | None, try_number: int, context: Any) -> bool:
            # The task starts once the build is over, so nothing more will come: fail now. Cosmos
            # would poll until the task's timeout (a process held per model), or run the model
            # here at once (every model's task its own dbt build, outside the writer's pool). A
            # retry of the task still builds the node alone.
            if is_producer_task_terminated(producer_task_state):
                raise AirflowException(
                    f"the build in {self.producer_task_id} ended ({producer_task_state}) "
                    f"without a result for {self.model_unique_id} or one of its tests"
                )
            return super()._handle_no_dbt_node_status(producer_task_state, try_number, context)

    ModelBuildWatcher.__module__, ModelBuildWatcher.__qualname__ = __name__, "ModelBuildWatcher"
    _WATCHER.append(ModelBuildWatcher)
    return ModelBuildWatcher


_TRIGGER: list[type] = []

# dbt's node and test statuses as Cosmos' producer pushes them (its XCom ``<node>_status``, a dict
# with ``status``, and ``<node>_tests_status``, the aggregate of the node's tests); the trigger reads
# them without importing Cosmos, which would hold the triggerer's event loop for seconds.
_PASSED = frozenset({"success", "pass", "warn"})
_SKIPPED = "skipped"
_PRODUCER_ENDED = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})


def _xcom_key(unique_id: str, suffix: str) -> str:
    return f"{unique_id.replace('.', '__')}_{suffix}"


#: The build outcome each run's watching tasks read, one read shared by all of them: every trigger
#: of a triggerer runs in one event loop, and its XCom reads go one at a time through the
#: triggerer's supervisor. Two or three reads per model (node, tests, scope) took the 47 triggers
#: of a run 1.2-1.5 s on a warm 2-core host, one shared read 0.02-0.8 s.
#: Held for OUTCOME_HELD_S: a run's watchers start together once its build is over.
_OUTCOME_READS: dict[tuple[str, str], tuple[float, Any]] = {}
OUTCOME_HELD_S = 600.0


def shared_read(key: tuple[str, str], read: Callable[[], Any]) -> Any:
    """The task reading ``key``'s value, started by the first caller and awaited by every caller
    within OUTCOME_HELD_S (``read`` is a coroutine function). A read that found nothing is not
    held: the next caller reads again."""
    now = time.monotonic()
    for stale in [k for k, (at, _) in _OUTCOME_READS.items() if now - at > OUTCOME_HELD_S]:
        del _OUTCOME_READS[stale]
    held = _OUTCOME_READS.get(key)
    if held is not None:
        task = held[1]
        if not (task.done() and (task.cancelled() or task.exception() is not None or task.result() is None)):
            return task
    task = asyncio.ensure_future(read())
    _OUTCOME_READS[key] = (now, task)
    return task


def _node_build_trigger() -> type:
    """The trigger a watching task starts in (Airflow's ``start_from_trigger``). It ends the task
    in the triggerer when the build reported the node, and its tests, passed (or skipped the
    node): no worker process. Anything it cannot settle alone goes to a worker, which reports it
    as ModelBuildWatcher.poke does: a failed node or test, a build that ended without the node's
    result, and every retry (the try number > 1: ``dbt build --select <node>``)."""
    if _TRIGGER:
        return _TRIGGER[0]
    from airflow.triggers.base import BaseTrigger, TaskSkippedEvent, TaskSuccessEvent, TriggerEvent

    class NodeBuildTrigger(BaseTrigger):
        def __init__(
            self,
            *,
            model_unique_id: str,
            producer_task_id: str,
            has_tests: bool = False,
            has_core_tests: bool = False,
            poke_interval: float = 2.0,
        ) -> None:
            super().__init__()
            self.model_unique_id, self.producer_task_id = model_unique_id, producer_task_id
            self.has_tests, self.has_core_tests = has_tests, has_core_tests
            self.poke_interval = poke_interval

        def serialize(self) -> tuple[str, dict[str, Any]]:
            return (
                NODE_BUILD_TRIGGER,
                {
                    "model_unique_id": self.model_unique_id,
                    "producer_task_id": self.producer_task_id,
                    "has_tests": self.has_tests,
                    "has_core_tests": self.has_core_tests,
                    "poke_interval": self.poke_interval,
                },
            )

        async def _producer_xcom(self, key: str) -> Any:
            from airflow.sdk.execution_time.xcom import XCom

            ti = self.task_instance
            return await asyncio.to_thread(
                XCom.get_one,
                run_id=ti.run_id,
                key=key,
                task_id=self.producer_task_id,
                dag_id=ti.dag_id,
                map_index=ti.map_index,
            )

        async def _producer_state(self) -> str | None:
            from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

            ti = self.task_instance
            states = await asyncio.to_thread(
                RuntimeTaskInstance.get_task_states,
                dag_id=ti.dag_id,
                task_ids=[self.producer_task_id],
                run_ids=[ti.run_id],
            )
            state = states.get(ti.run_id, {}).get(self.producer_task_id)
            return None if state is None else str(state)

        async def _tests_passed(self) -> bool:
            if not self.has_tests:
                return True
            if not self.has_core_tests and await self._producer_xcom(TEST_SCOPE_XCOM) == "core":
                return True  # its only tests are column checks, and this build left them out
            return await self._producer_xcom(_xcom_key(self.model_unique_id, "tests_status")) in _PASSED

        async def _build_outcome(self) -> dict | None:
            ti = self.task_instance
            read = shared_read((ti.dag_id, ti.run_id), lambda: self._producer_xcom(BUILD_OUTCOME_XCOM))
            outcome = await asyncio.shield(read)
            return outcome if isinstance(outcome, dict) else None

        async def run(self) -> Any:
            ti = self.task_instance
            if ti.try_number > 1:  # a retry, or cleared by hand: the worker rebuilds the node
                yield TriggerEvent({"handover": "retry", "try_number": ti.try_number})
                return
            outcome = await self._build_outcome()
            if outcome is not None:  # the build is over: its verdict on every node, in one read
                verdict = outcome.get(self.model_unique_id)
                if verdict == NODE_PASSED:
                    yield TaskSuccessEvent()
                elif verdict == NODE_SKIPPED:
                    yield TaskSkippedEvent()
                else:  # failed, or no verdict: the worker reads the node's own XComs and says which
                    yield TriggerEvent({"handover": "not passed", "verdict": verdict})
                return
            # No outcome (the build did not get as far as writing its results, or this task was
            # started by hand before it ended): the node's own XComs, as the producer pushed them.
            while True:
                node = await self._producer_xcom(_xcom_key(self.model_unique_id, "status"))
                status = node.get("status") if isinstance(node, dict) else None
                if status == _SKIPPED:
                    yield TaskSkippedEvent()
                    return
                if status in _PASSED and await self._tests_passed():
                    yield TaskSuccessEvent()
                    return
                if status is not None or await self._producer_state() in _PRODUCER_ENDED:
                    # failed, or no result will come: the worker says which and fails the task
                    yield TriggerEvent({"handover": "not passed", "node_status": status})
                    return
                await asyncio.sleep(self.poke_interval)

    NodeBuildTrigger.__module__, NodeBuildTrigger.__qualname__ = __name__, "NodeBuildTrigger"
    _TRIGGER.append(NodeBuildTrigger)
    return NodeBuildTrigger


def watch_node_build(*, dag: Any, task_group: Any, node: Any, task_args: dict[str, Any], **_: Any) -> Any:
    """Cosmos node converter (RenderConfig.node_converters): a ``<node>_build`` task watching the
    node and its tests in the producer's ``dbt build``; an empty task for an ephemeral model."""
    if node.has_ephemeral_materialization:
        # an ephemeral model is a CTE of the models that select from it: the build writes nothing for
        # it and records no result, so a watcher would wait for a verdict that never comes. An empty
        # task keeps its place in the graph, as Cosmos' own rendering of ephemeral models does.
        from airflow.providers.standard.operators.empty import EmptyOperator

        return EmptyOperator(task_id=f"{node.name}_build", dag=dag, task_group=task_group)
    args = {
        **task_args,
        "select": f"fqn:{'.'.join(node.fqn)}" if node.fqn else node.resource_name,
        **node.operator_kwargs_to_override,
    }
    context = {
        "dbt_node_config": node.context_dict,
        "dbt_dag_task_group_identifier": dag.dag_id,
        "package_name": node.package_name,
    }
    return _model_build_watcher()(
        task_id=f"{node.name}_build",
        dag=dag,
        task_group=task_group,
        extra_context=context,
        has_tests=bool(node.has_test),
        **args,
    )


#: The producer's XCom saying which tests its build ran ("all" or "core", transform.scope_of_tests).
TEST_SCOPE_XCOM = "tierlens_test_scope"
#: The producer's XCom with every node's verdict once its build returned (tasks.build_outcome),
#: and the verdicts
BUILD_OUTCOME_XCOM = "tierlens_build_outcome"
NODE_PASSED, NODE_SKIPPED, NODE_NOT_PASSED = "passed", "skipped", "not passed"


#: The producer's XCom with what its pre_execute loaded and the run's start (begin_build)
LANDED_XCOM = "tierlens_landed"


def begin_build(begin: Callable[[], dict]) -> Callable[[Any], None]:
    """The producer's pre_execute, before ``dbt build`` and in the same task process (a task of
    its own cost a process start, ~15 s on a busy small host): ``begin()`` loads what an ingest
    landed while the warehouse was busy and records the run's start (tasks.load_landed,
    tasks.begin_transform); its dict goes to the producer's XCom LANDED_XCOM for the publish.
    pre_execute, not on_execute_callback: Airflow logs a callback's exception and carries on, and
    a load that failed must fail the producer before dbt runs. Like the build, it is never retried.

    The run's start (``begun``) also says whether every test is due; when not, the build leaves
    the column checks out, its other tests check the days it rebuilt (the run parameters
    transform.CORE_SCOPE, in the producer's environment), and the producer expects no result from
    the column checks. A model task's retry is a build of its own with every test over whole tables."""

    def apply(context: Any) -> None:
        from ..column_checks import column_checks_left_out, is_column_check
        from ..transform import CORE_SCOPE

        landed = begin()
        context["ti"].xcom_push(key=LANDED_XCOM, value=landed)
        scope = (landed.get("begun") or {}).get("test_scope", "all")
        producer = context["task"]
        if scope == "core":
            producer.dbt_cmd_flags = [*(producer.dbt_cmd_flags or []), *column_checks_left_out()]
            producer.env = {**(producer.env or {}), **CORE_SCOPE.environment()}
            producer.tests_per_model = {
                model: [t for t in tests if not is_column_check(t)]
                for model, tests in (producer.tests_per_model or {}).items()
            }
        context["ti"].xcom_push(key=TEST_SCOPE_XCOM, value=scope)
        # from here on Cosmos' log parser pushes through a TI that holds each node's XComs until
        # the build's outcome says which a reader needs (it reads the TI from this context)
        context["ti"] = HeldNodeXComs(context["ti"])

    return apply


# ---- the producer's per-node XComs -----------------------------------------------------------
# Cosmos' producer pushes, as dbt reports each node, the node's status, its tests' aggregate, its
# compiled SQL and its dbt events, and dbt's start-up lines (read, pushed again) : 150-200 XComs in
# an hourly build, each a round trip through the task's supervisor to the API server (and, with
# Cosmos' enable_watcher_reliable_retry, a rewrite of an Airflow Variable holding all of them so
# far). dbt waits meanwhile: the producer reads its log lines one at a time. No task reads them
# during the build (every model's task starts once the build is over), and once it is over the
# build's outcome (BUILD_OUTCOME_XCOM, one XCom) gives every node's verdict: a node that passed or
# was skipped needs none of its own. So the producer holds them and, when the build has returned,
# pushes those of the nodes that did not pass (the worker that reports such a node reads them);
# when there is no outcome (dbt wrote no results, or the task failed before it could read them),
# all of them, as Cosmos would have.

#: Cosmos' per-node XCom keys: ``<unique id, dots as __>`` + one of these
_NODE_KEY_SUFFIXES = ("_tests_status", "_status", "_compiled_sql", "_dbt_event")
_NODE_KEY_PREFIXES = ("model__", "seed__", "snapshot__", "test__", "source__")
#: Cosmos' XCom of dbt's start-up lines (a consumer logs them at debug level; ModelBuildWatcher not)
_STARTUP_EVENTS_KEY = "dbt_startup_events"
#: Cosmos' last push of the producer, build returned or failed: anything still held goes first
_PRODUCER_DONE_KEY = "task_status"


def _node_of_key(key: str) -> str | None:
    """The node (unique id with dots as ``__``) a per-node XCom key belongs to, else None."""
    if not key.startswith(_NODE_KEY_PREFIXES):
        return None
    for suffix in _NODE_KEY_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return None


class HeldNodeXComs:
    """The producer's task instance as Cosmos sees it during the build: every attribute and XCom
    is the real one's, but per-node XComs (and dbt's start-up lines) are held here until
    ``release``. Pulling a held key gives the held value."""

    def __init__(self, ti: Any) -> None:
        object.__setattr__(self, "_ti", ti)
        object.__setattr__(self, "_held", {})
        object.__setattr__(self, "released", False)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_ti"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ti, name, value)

    def xcom_push(self, key: str, value: Any, *args: Any, **kwargs: Any) -> None:
        if not self.released:
            if key == _STARTUP_EVENTS_KEY or _node_of_key(key) is not None:
                self._held[key] = value
                return
            if key == _PRODUCER_DONE_KEY:  # the build's end without an outcome read: all of them
                self.release(None)
        self._ti.xcom_push(key, value, *args, **kwargs)

    def xcom_pull(self, task_ids: Any = None, *args: Any, key: str = "return_value", **kwargs: Any) -> Any:
        if not args and task_ids in (None, self._ti.task_id):
            if key in self._held:
                return self._held[key]
            if key == _STARTUP_EVENTS_KEY and not self.released:
                return None  # Cosmos reads the list before it appends to it: held from the start
        return self._ti.xcom_pull(task_ids, *args, key=key, **kwargs)

    def release(self, outcome: dict[str, str] | None) -> int:
        """Push the held XComs a reader may need: with the build's ``outcome`` (node unique id ->
        verdict), those of the nodes that did not pass or skip (and of every test); without one,
        all of them. Once; returns how many were pushed. Cosmos' backup of the producer's XComs
        (the one it restores on a retry of the producer) has them all either way."""
        if self.released:
            return 0
        object.__setattr__(self, "released", True)
        settled = set()
        if isinstance(outcome, dict):
            settled = {uid.replace(".", "__") for uid, v in outcome.items() if v in (NODE_PASSED, NODE_SKIPPED)}
        pushed = 0
        for key, value in self._held.items():
            if outcome is not None and (key == _STARTUP_EVENTS_KEY or _node_of_key(key) in settled):
                continue
            self._ti.xcom_push(key, value)
            pushed += 1
        self._held.clear()
        return pushed


def release_node_xcoms(context: Any, outcome: dict[str, str] | None) -> int:
    """The producer's held per-node XComs pushed as ``outcome`` needs them (HeldNodeXComs.release);
    0 when the producer does not hold them."""
    ti = context.get("ti") if context is not None else None
    return ti.release(outcome) if isinstance(ti, HeldNodeXComs) else 0


def _release_on_failure(context: Any) -> None:
    release_node_xcoms(context, None)


def release_held_on_failure(producer: Any) -> None:
    """The producer's on_failure_callback first pushes every per-node XCom it held: a build cut
    short before its outcome was read (its execution_timeout) leaves each node's result as Cosmos
    would have pushed it during the build. Cosmos' own callbacks (its XCom backup) follow."""
    callbacks = producer.on_failure_callback
    callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [c for c in [callbacks] if c]
    producer.on_failure_callback = [_release_on_failure, *callbacks]


def watch_in_one_wave(watchers: list[Any]) -> None:
    """Remove the dependencies Cosmos draws between model tasks (dbt's lineage), so that every
    model's task waits for the build alone. Started wave after wave along the lineage they passed
    ~3 s a level after the build was over: seven levels, 28 s of a 65 s run on a quiet host. The
    order added nothing to a run: the build already ran the models in lineage order and skipped
    those whose input failed, and each task only reports its node."""
    ids = {t.task_id for t in watchers}
    for task in watchers:
        for upstream in [u for u in task.upstream_task_ids if u in ids]:
            task.upstream_task_ids.discard(upstream)
            task.dag.task_dict[upstream].downstream_task_ids.discard(task.task_id)


def mark_core_tests(producer: Any, watchers: list[Any]) -> None:
    """Tell each model's task whether any of its tests runs in every build (not only column checks)."""
    # (not from transform, which imports duckdb: every task process of a run parses the DAG file)
    from ..column_checks import is_column_check

    tests_per_model = getattr(producer, "tests_per_model", None) or {}
    for task in watchers:
        uid = getattr(task, "model_unique_id", None)
        if uid is not None and hasattr(task, "has_core_tests"):
            task.has_core_tests = any(not is_column_check(t) for t in tests_per_model.get(uid, []))
            if hasattr(task, "refresh_trigger_args"):
                task.refresh_trigger_args()


def no_lineage_without_its_provider(producer: Any) -> None:
    """Cosmos parses the build's manifest and results into OpenLineage events after every build
    (openlineage-integration-common, a Cosmos dependency: ~0.7 s of the producer's time on two
    cores), which only Airflow's OpenLineage provider sends. Without that provider installed (the
    case of deploy/airflow/requirements.txt) the producer skips the parse; with it, nothing changes."""
    import importlib.util

    try:
        provider = importlib.util.find_spec("airflow.providers.openlineage") is not None
    except (ImportError, ValueError):
        provider = False
    if not provider:
        producer._get_dbt_local_artifact_processor = lambda: None


def build_with_tests(producer: Any) -> None:
    """Cosmos leaves the tests out of the producer's ``dbt build`` when it renders no test tasks
    (``--resource-type`` of everything else); the watchers above report the tests, so it runs them."""
    flags = list(producer.dbt_cmd_flags or [])
    kept: list[str] = []
    while flags:
        flag = flags.pop(0)
        if flag == "--resource-type" and flags:
            flags.pop(0)
            continue
        kept.append(flag)
    producer.dbt_cmd_flags = kept
