"""Run the dbt project (staging → intermediate → marts) against a warehouse file."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb

from .column_checks import COLUMN_CHECKS, column_checks_left_out, is_column_check  # noqa: F401
from .resources import dbt_project_dir
from .saved_parse import share, slot_for_run, start_from_shared
from .warehouse.history import RunRecord

# dbt phones home unless told not to; a site's batch nodes often have no way out anyway.
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
os.environ.setdefault("DO_NOT_TRACK", "1")


@dataclass
class TransformResult:
    success: bool
    models: int = 0
    tests: int = 0
    seeds: int = 0
    failures: list[str] = field(default_factory=list)


def _holding_lock(run: Callable) -> Callable:
    """``run(warehouse, ...)`` holding the warehouse's writer lock (warehouse/lock.py) from start to
    end: its dbt invocations and the Python steps between them are one writer's work."""

    @functools.wraps(run)
    def locked(warehouse, *args, **kwargs):
        from .warehouse.lock import warehouse_lock

        with warehouse_lock(warehouse, "transform"):
            return run(warehouse, *args, **kwargs)

    return locked


def _dbt_executable() -> list[str]:
    """dbt from the same environment as tierlens, whichever virtualenv that is."""
    beside = Path(sys.executable).parent / "dbt"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("dbt")
    if found:
        return [found]
    raise FileNotFoundError("dbt is not installed beside tierlens: pip install 'dbt-duckdb<1.12'")


@dataclass(frozen=True)
class RunParameters:
    """The parameters of one dbt run (dbt/README.md, "Invocation contract"): a back-fill's UTC days
    [backfill_start, backfill_end) and the tests' scope ("core": what the run rebuilt; "all": whole
    tables). They reach dbt as environment variables (dbt/macros/run_parameters.sql), not --vars:
    dbt discards its whole saved parse of the project when a run's --vars differ from the last
    run's, which cost each chunk of a back-fill about 12 s of parsing."""

    backfill_start: date | None = None
    backfill_end: date | None = None
    test_scope: str = "all"

    def environment(self) -> dict[str, str]:
        """The variables dbt reads them from; a parameter left out is one not given."""
        values = {
            "backfill_start": self.backfill_start.isoformat() if self.backfill_start else None,
            "backfill_end": self.backfill_end.isoformat() if self.backfill_end else None,
            "test_scope": None if self.test_scope == "all" else self.test_scope,
        }
        return {parameter_variable(name): v for name, v in values.items() if v is not None}


def parameter_variable(name: str) -> str:
    """The environment variable of a run parameter (dbt/macros/run_parameters.sql: TIERLENS_<NAME>)."""
    return "TIERLENS_" + name.upper()


#: Every run parameter's variable: cleared from the environment dbt inherits, so a value left in a
#: shell or a service's environment never reaches a run that did not ask for it.
RUN_PARAMETER_VARIABLES = tuple(parameter_variable(f.name) for f in fields(RunParameters))


def backfill(start: date, end: date) -> RunParameters:
    """The run that rebuilds exactly the UTC days [start, end) of each incremental model."""
    return RunParameters(backfill_start=start, backfill_end=end)


def dbt_environment(
    warehouse: Path,
    parameters: RunParameters | None = None,
    *,
    lake: Path | None = None,
    spark_warehouse: Path | None = None,
) -> dict[str, str]:
    """The environment of a dbt run: this process's, with the run's own parameters only (none left
    from a shell), the warehouse, and the lake and Spark folders when given."""
    env = {k: v for k, v in os.environ.items() if k not in RUN_PARAMETER_VARIABLES}
    env |= (parameters or RunParameters()).environment()
    env["TIERLENS_WAREHOUSE"] = str(Path(warehouse).resolve())
    if lake is not None:
        env["TIERLENS_LAKE"] = str(_lake_dir(lake))
    if spark_warehouse is not None:
        env["TIERLENS_SPARK_WAREHOUSE"] = str(Path(spark_warehouse).resolve())
    return env


def run_dbt(
    warehouse: Path,
    state_dir: Path,
    command: str = "build",
    extra: list[str] | None = None,
    project_dir: Path | None = None,
    target: str | None = None,
    lake: Path | None = None,
    spark_warehouse: Path | None = None,
    parameters: RunParameters | None = None,
) -> TransformResult:
    """Run dbt in a child process; the caller must have closed its own connections to ``warehouse``.

    A child process, not dbt's in-process runner: dbt-duckdb keeps its DuckDB connection open for
    the life of the process, which would lock the warehouse against the report that follows.
    dbt's target/ and logs/ go to ``state_dir`` so the source tree stays clean.

    ``target`` picks a profiles.yml output (duckdb, spark, spark_thrift; default: the profile's).
    ``lake`` makes the raw sources the Parquet lake instead of the warehouse's raw tables (the
    spark targets need one). ``spark_warehouse`` is where the spark session target keeps its tables.
    ``project_dir``: a site's own dbt project; default ``$TIERLENS_DBT_PROJECT_DIR``, else the shipped one.
    ``parameters``: the run's back-fill range and test scope (none: a plain build, every test).
    """
    project_dir = project_dir or dbt_project_dir()
    target_name = target
    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / "target"
    _forget_parse_of_another_project(target, project_dir)
    here, name = _warehouse_folder(warehouse)
    shared = slot_for_run(project_dir, name, target_name, extra or [])
    start_from_shared(target, shared)
    args = [
        *_dbt_executable(),
        command,
        "--project-dir",
        str(project_dir),
        "--profiles-dir",
        str(project_dir),
        "--target-path",
        str(target),
        "--log-path",
        str(state_dir / "logs"),
        *(extra or []),
    ]
    if target_name:
        args += ["--target", target_name]
    env = dbt_environment(warehouse, parameters, lake=lake, spark_warehouse=spark_warehouse)
    if here is not None:
        # the profile's path is the file's name, dbt running in its folder: the connection dbt
        # hashes into its saved parse is the same in every home (saved_parse.py)
        env["TIERLENS_WAREHOUSE"] = name
    from .warehouse.lock import held_fds

    # dbt holds the writer lock with this process: a transform killed alone leaves its dbt running,
    # and the warehouse stays locked until that dbt has ended too
    proc = subprocess.run(args, env=env, cwd=here, capture_output=True, text=True, pass_fds=held_fds(warehouse))
    share(target, shared)
    result = TransformResult(success=proc.returncode == 0)
    run_results = target / "run_results.json"
    if run_results.exists():
        for r in json.loads(run_results.read_text()).get("results", []):
            rtype = r["unique_id"].split(".", 1)[0]
            if rtype == "model":
                result.models += 1
            elif rtype == "test":
                result.tests += 1
            elif rtype == "seed":
                result.seeds += 1
            if r["status"] in ("error", "fail", "runtime error"):
                result.failures.append(f"{r['unique_id']}: {r['status']}: {r.get('message')}")
    if not result.success and not result.failures:
        result.failures.append(f"dbt {command} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return result


def _warehouse_folder(warehouse: Path) -> tuple[Path | None, str]:
    """The folder dbt runs in and the name it opens the warehouse by: the file's own folder and
    name, or (a folder that does not exist) no folder and the whole path."""
    path = Path(warehouse).resolve()
    return (path.parent, path.name) if path.parent.is_dir() else (None, str(path))


#: Beside dbt's saved parse in the target folder: the project folder that parse was made from.
PARSED_PROJECT_FILE = "tierlens-parsed-project.json"
PARSED_PROJECT_FORMAT = 1


def _forget_parse_of_another_project(target: Path, project_dir: Path) -> None:
    """Drop dbt's saved parse (``partial_parse.msgpack``) when it was made from another project folder.

    dbt reuses a saved parse when the project's files are unchanged, and the parse holds absolute
    paths (a seed's CSV, for one): after the project moves (a checkout elsewhere, tierlens
    installed into a new folder) the next build would look for the old files and fail. One full
    parse, a few seconds, after a move."""
    project = str(Path(project_dir).resolve())
    marker = target / PARSED_PROJECT_FILE
    wanted = {"format_version": PARSED_PROJECT_FORMAT, "project_dir": project}
    try:
        if json.loads(marker.read_text()) == wanted:
            return
    except (FileNotFoundError, ValueError):
        pass
    (target / "partial_parse.msgpack").unlink(missing_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / f".{PARSED_PROJECT_FILE}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    # root writes here in a site's setup: never through a symlink someone left in the folder
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(wanted, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise OSError(e.errno, e.strerror, str(marker)) from e
    os.replace(tmp, marker)


def _lake_dir(lake: Path) -> Path:
    """The lake as an absolute path dbt can put into SQL, or a clear error before dbt starts."""
    path = Path(lake).resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no Parquet lake at {lake}: write one with `tierlens lake export`")
    if "'" in str(path) or "\\" in str(path):
        raise ValueError(f"the lake path {path} must not contain quotes or backslashes (it goes into SQL)")
    return path


#: The models that read the simulator's efficiency tables, from staging to the marts, and the
#: measurements efficiency_measured_vs_predicted sets beside them (built here too, so that a
#: warehouse that has not had a transform since an upgrade added them gets them).
EFFICIENCY_MODELS = (
    "int_completed_efficiency_day_partials",
    "stg_sim_efficiency_runs",
    "stg_sim_efficiency_predictions",
    "int_latest_efficiency_predictions+",
    "stg_sim_hardware_options+",
    "stg_sim_efficiency_type_loo+",
)


@_holding_lock
def refresh_efficiency_marts(warehouse: Path, state_dir: Path) -> None:
    """Rebuild (and test) the models over the simulator's efficiency tables after a new run, so
    the marts comparing measured and predicted show it without a whole dbt build."""
    result = run_dbt(Path(warehouse), state_dir, "build", ["--select", *EFFICIENCY_MODELS])
    if not result.success:
        raise RuntimeError("dbt build of the efficiency marts failed: " + "; ".join(result.failures))
    from .warehouse.publish import publish

    publish(Path(warehouse))


# ---- incremental runs, back-fills and full refreshes -------------------------------------------


#: The schemas dbt builds (dbt/dbt_project.yml); a chunked full refresh starts them empty.
DBT_SCHEMAS = ("staging", "intermediate", "marts", "seeds")


def day_chunks(start: date, end: date, days: int = 1) -> list[tuple[date, date]]:
    """[start, end) (UTC days, end exclusive) cut into runs of ``days`` days."""
    if days < 1:
        raise ValueError(f"--days must be at least 1, not {days}")
    if end <= start:
        raise ValueError(f"the back-fill end {end} must be after its start {start}")
    out, day = [], start
    while day < end:
        nxt = min(day + timedelta(days=days), end)
        out.append((day, nxt))
        day = nxt
    return out


ChunkCallback = Callable[[int, int, date, date], None]


#: Runs start a little earlier or later each hour; a run this much before the interval is up
#: still runs every test, so "every 24 hours" stays at the same hour of the day.
_SCOPE_SLACK = timedelta(minutes=30)


#: A build that runs the core tests only: its tests of an incremental model check the rows of the
#: days the build rebuilt, not the whole table (dbt/macros/test_scope.sql). Every other build
#: (every test due, a back-fill, a full refresh) tests whole tables.
CORE_SCOPE = RunParameters(test_scope="core")


def scope_of_tests(all_tests_passed_at: str | None, every_hours: float, now: datetime) -> str:
    """``"all"`` when every test is due: none has passed yet, ``every_hours`` is 0 (every run runs
    every test), or the last run that passed them all started ``every_hours`` ago; else ``"core"``."""
    if every_hours <= 0 or all_tests_passed_at is None:
        return "all"
    since = now - datetime.fromisoformat(all_tests_passed_at)
    return "all" if since >= timedelta(hours=every_hours) - _SCOPE_SLACK else "core"


@_holding_lock
def run_incremental(
    warehouse: Path,
    state_dir: Path,
    *,
    project_dir: Path | None = None,
    retention_months: int = 0,
    all_tests_every_hours: float = 0,
) -> RunRecord:
    """The hourly run: a plain ``dbt build`` (incremental models take only new and late data; the
    column checks only when due, see :data:`COLUMN_CHECKS`; the tests between check the rebuilt
    days, :data:`CORE_SCOPE`), then retention of raw file accesses;
    recorded in the warehouse's history file."""
    record = _start(warehouse, "hourly", all_tests_every_hours)
    record.failures += _recovered_state(warehouse, state_dir, plain=True)
    core = record.test_scope != "all"
    extra, parameters = (column_checks_left_out(), CORE_SCOPE) if core else ([], None)
    result = run_dbt(warehouse, state_dir, "build", extra, project_dir=project_dir, parameters=parameters)
    return _finish(warehouse, record, [result], retention_months)


@_holding_lock
def run_range(
    warehouse: Path,
    state_dir: Path,
    start: date | None,
    end: date | None,
    *,
    days: int = 1,
    full_refresh: bool = False,
    accept_pruned_history: bool = False,
    project_dir: Path | None = None,
    retention_months: int = 0,
    on_chunk: ChunkCallback | None = None,
) -> RunRecord:
    """A back-fill of [start, end) or (``full_refresh``) a rebuild of all history, ``days`` days per
    dbt invocation so memory follows the chunk, not the history.

    Without start/end the range is the raw records' own span. A full refresh drops what dbt built
    (its schemas), back-fills every day oldest first (a model's first build in back-fill mode
    holds just its range, dbt/README.md), then runs one plain incremental build, which rebuilds
    the newest days with every late record in view. Tests run with the last invocation only.
    Refuses (HistoryPruned) a range that reaches before what retention deleted, unless
    ``accept_pruned_history``.
    """
    from .warehouse.history import raw_span, refuse_if_pruned

    if start is None or end is None:
        con = duckdb.connect(str(warehouse), read_only=True)
        try:
            span = raw_span(con)
        finally:
            con.close()
        if span.oldest_day is None or span.newest_day is None:
            raise ValueError(f"{warehouse} holds no jobs or file accesses to transform")
        start = start or span.oldest_day
        end = end or span.newest_day + timedelta(days=1)
    chunks = day_chunks(start, end, days)
    first = datetime(chunks[0][0].year, chunks[0][0].month, chunks[0][0].day, tzinfo=timezone.utc)
    warning = refuse_if_pruned(warehouse, None if full_refresh else first, accept_pruned_history)
    record = _start(warehouse, "full_refresh" if full_refresh else "backfill")
    record.range_start, record.range_end, record.chunks = (
        chunks[0][0].isoformat(),
        chunks[-1][1].isoformat(),
        len(chunks),
    )
    if warning:
        record.failures.append("warning: " + warning)
    record.failures += _recovered_state(warehouse, state_dir, plain=False)
    if full_refresh:
        _drop_dbt_schemas(warehouse)
    runs: list[RunParameters | None] = [backfill(s, e) for s, e in chunks]
    if full_refresh:
        runs.append(None)  # the hourly build: the newest days again, with every late record in view
    no_tests = ["--exclude-resource-type", "test", "--exclude-resource-type", "unit_test"]
    results: list[TransformResult] = []
    for i, parameters in enumerate(runs):
        if on_chunk and i < len(chunks):
            on_chunk(i, len(chunks), *chunks[i])
        last = i == len(runs) - 1
        result = run_dbt(
            warehouse, state_dir, "build", [] if last else no_tests, project_dir=project_dir, parameters=parameters
        )
        results.append(result)
        if not result.success:
            break
        record.chunks_done = min(i + 1, len(chunks))
    return _finish(warehouse, record, results, retention_months)


def _drop_dbt_schemas(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        for schema in DBT_SCHEMAS:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        con.execute("CHECKPOINT")
    finally:
        con.close()


#: State tables one dbt model writes and a later run reads, outside dbt's ref() graph
#: (dbt/macros/incremental.sql), and what a plain run does when one is missing while the model
#: that reads it holds rows: the macros fall back to rebuilding by day, as after a full refresh.
STATE_TABLES = {
    ("intermediate", "int_job_match_state"): (
        "int_file_access_by_job",
        "int_file_access_by_job rebuilt its window's days instead of the changed keys",
    ),
    ("intermediate", "int_job_match_changes"): (
        "int_job_remote_bytes",
        "int_job_remote_bytes rebuilt every job of its window",
    ),
}
#: "recovered: …" lines go into the run's record (RunRecord.failures, beside "warning: …"): the
#: run passed, and the history says what it had to rebuild.
RECOVERED = "recovered: "


def _recovered_state(warehouse: Path, state_dir: Path, *, plain: bool) -> list[str]:
    """What this run finds damaged or missing in the state earlier runs left, and rebuilds."""
    found = _damaged_saved_parse(state_dir / "target" / "partial_parse.msgpack")
    return found + (_missing_state_tables(warehouse) if plain else [])


def _damaged_saved_parse(path: Path) -> list[str]:
    """dbt's saved parse, removed when it cannot be unpacked (truncated, corrupted): dbt would parse
    the whole project again anyway, saying so only in its log; here the history records it."""
    import msgpack

    try:
        msgpack.unpackb(path.read_bytes(), strict_map_key=False)
    except FileNotFoundError:
        return []
    except Exception as e:  # msgpack's errors for a damaged file have no common base but Exception
        path.unlink(missing_ok=True)
        return [
            f"{RECOVERED}dbt's saved parse {path} was damaged ({type(e).__name__}: {str(e)[:100]}): removed, dbt parsed the project again"
        ]
    return []


def _missing_state_tables(warehouse: Path) -> list[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        built = set(
            con.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
        )
    finally:
        con.close()
    out = []
    for (schema, table), (reader, rebuilt) in STATE_TABLES.items():
        if (schema, reader) in built and (schema, table) not in built:
            out.append(f"{RECOVERED}the state table {schema}.{table} was missing: {rebuilt}")
    return out


def _start(warehouse: Path, kind: str, all_tests_every_hours: float = 0) -> RunRecord:
    """The run as the history will record it; a back-fill or full refresh runs every test."""
    from .warehouse.history import load_history, new_since, now_iso

    history = load_history(warehouse)  # fails early on a state file of another format version
    since = history.last_success.loaded_until if history.last_success else None
    record = RunRecord(kind=kind, started_at=now_iso())
    if kind == "hourly":
        now = datetime.fromisoformat(record.started_at)
        record.test_scope = scope_of_tests(history.all_tests_passed_at, all_tests_every_hours, now)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        record.batches_new, record.rows_new, record.loaded_until = new_since(con, since)
    finally:
        con.close()
    return record


def _finish(warehouse: Path, record: RunRecord, results: list[TransformResult], retention_months: int) -> RunRecord:
    from .warehouse.history import apply_retention, load_history, now_iso, save_history

    record.success = bool(results) and all(r.success for r in results)
    record.models = sum(r.models for r in results)
    record.tests = sum(r.tests for r in results)
    record.failures += [f for r in results for f in r.failures]
    record.finished_at = now_iso()
    record.seconds = round(
        (datetime.fromisoformat(record.finished_at) - datetime.fromisoformat(record.started_at)).total_seconds(), 1
    )
    history = load_history(warehouse)
    history.last_run = record
    if record.success:
        history.last_success = record
        if record.test_scope == "all":
            history.all_tests_passed_at = record.started_at
    save_history(warehouse, history)
    if record.success and retention_months:
        # only once the marts hold every row it deletes
        apply_retention(warehouse, retention_months)
    return record
