"""`tierlens transform` (the dbt project) and `tierlens ab-uncertainty` (its Python model for other engines)."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, console, err, fail, progress, warehouse

app = typer.Typer()


@app.command()
def transform(
    warehouse_file: WarehouseOpt = None,
    target: Annotated[
        Optional[str], typer.Option(help="dbt target in dbt/profiles.yml: duckdb (default), spark, spark_thrift.")
    ] = None,
    lake: Annotated[
        Optional[Path], typer.Option(help="Read the raw sources from this Parquet lake (needed by the spark targets).")
    ] = None,
    project_dir: Annotated[
        Optional[Path],
        typer.Option(
            file_okay=False,
            exists=True,
            help="A site's own dbt project [default: $TIERLENS_DBT_PROJECT_DIR, else the one shipped with tierlens].",
        ),
    ] = None,
    full_refresh: Annotated[
        bool, typer.Option("--full-refresh", help="Rebuild every model from all raw history, --days days per dbt run.")
    ] = False,
    backfill: Annotated[
        Optional[tuple[str, str]],
        typer.Option(
            metavar="START END",
            help="Rebuild the marts for UTC days [START, END) (YYYY-MM-DD, END exclusive), --days days per dbt run.",
        ),
    ] = None,
    days: Annotated[
        int,
        typer.Option(
            min=1, help="Days per dbt run of a back-fill or full refresh: memory follows this, not the history."
        ),
    ] = 1,
    retention_months: Annotated[
        Optional[int],
        typer.Option(
            min=0,
            help="Delete raw file accesses older than this many months (before the newest one) after a "
            "successful run; the marts keep them. 0: keep all \\[default: $TIERLENS_RAW_RETENTION_MONTHS, "
            "else 0].",
        ),
    ] = None,
    accept_pruned_history: Annotated[
        bool,
        typer.Option(
            "--accept-pruned-history",
            help="Rebuild from raw even where retention deleted raw file accesses (the marts lose that history).",
        ),
    ] = False,
    all_tests: Annotated[
        bool,
        typer.Option(
            "--all-tests",
            help="Run every dbt test now, column checks included (a plain run runs them every "
            "$TIERLENS_ALL_TESTS_EVERY_HOURS hours, default 24; back-fills always do).",
        ),
    ] = False,
    wait: Annotated[
        Optional[float],
        typer.Option(
            min=0,
            help="Seconds to wait while another transform or load holds the warehouse, then refuse "
            "naming it; 0: refuse at once \\[default: $TIERLENS_LOCK_WAIT_SECONDS, else 600].",
        ),
    ] = None,
) -> None:
    """Build the dbt project (staging → intermediate → marts) and run its tests.

    Plain: an incremental run (only new and late data). --backfill START END or --full-refresh:
    history a few days at a time."""
    if target and target.startswith("spark") and lake is None:
        fail("the spark targets read the Parquet lake: give --lake (tierlens lake export writes it)", 2)
    if full_refresh and backfill:
        fail("give --full-refresh or --backfill, not both", 2)
    if (full_refresh or backfill) and target not in (None, "duckdb"):
        fail("--full-refresh and --backfill run on the DuckDB target; on Spark use dbt's own flags", 2)
    span = None
    if backfill:
        try:
            span = (date.fromisoformat(backfill[0]), date.fromisoformat(backfill[1]))
        except ValueError as e:
            fail(f"--backfill START END: dates as YYYY-MM-DD ({e})", 2, e)
    from ..orchestration.settings import setting

    if retention_months is None:
        try:
            retention_months = int(setting("raw_retention_months") or 0)
        except ValueError as e:
            fail(f"TIERLENS_RAW_RETENTION_MONTHS: a whole number of months ({e})", 2, e)
    try:
        every_hours = 0.0 if all_tests else float(setting("all_tests_every_hours") or 0)
    except ValueError as e:
        fail(f"TIERLENS_ALL_TESTS_EVERY_HOURS: a number of hours ({e})", 2, e)
    history = HistoryOptions(
        full_refresh=full_refresh,
        span=span,
        days=days,
        retention_months=retention_months,
        accept_pruned_history=accept_pruned_history,
        all_tests_every_hours=every_hours,
    )
    run_transform(
        warehouse(warehouse_file),
        paths().dbt_state,
        target=target,
        lake=lake,
        project_dir=project_dir,
        history=history,
        wait=wait,
    )


@dataclass(frozen=True)
class HistoryOptions:
    """How much history a transform covers (default: an incremental run) and the raw retention."""

    full_refresh: bool = False
    span: tuple[date, date] | None = None  # back-fill [start, end)
    days: int = 1
    retention_months: int = 0
    accept_pruned_history: bool = False
    all_tests_every_hours: float = 0  # 0: an incremental run runs every test


def run_transform(
    wh: Path,
    state: Path,
    target: str | None = None,
    lake: Path | None = None,
    project_dir: Path | None = None,
    history: HistoryOptions | None = None,
    wait: float | None = None,
) -> None:
    """dbt build with a status line, its failures printed; publishes the snapshot readers open.

    On DuckDB, holds the warehouse's writer lock from the build to the publish, waiting up to
    ``wait`` seconds for another writer (None: the default wait), else refuses naming it."""
    if target not in (None, "duckdb") or lake is not None:
        _run_transform(wh, state, target, lake, project_dir, history)
        return
    from ..warehouse.lock import LockFileUnusable, WarehouseLocked, default_wait, warehouse_lock

    try:
        limit = default_wait() if wait is None else wait
    except ValueError as e:
        fail(str(e), 2, e)
    try:
        with warehouse_lock(wh, "transform", limit, say=lambda line: err.print(line, soft_wrap=True, markup=False)):
            _run_transform(wh, state, target, lake, project_dir, history)
    except (WarehouseLocked, LockFileUnusable) as e:
        fail(str(e), 1, e)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        written = f"could not write {e.filename}" if e.filename else e.strerror
        fail(f"transform failed: the disk is full: {written}. {_AFTER_DISK_FULL}", 1, e)


#: What to do after a transform that ran out of disk: nothing it did counts until it finishes.
_AFTER_DISK_FULL = (
    "Free space on that filesystem and run the transform again: the run is not recorded as done, "
    "so the next one redoes its work."
)
#: What to do after a publish that ran out of disk (the run before it is recorded as done).
_AFTER_PUBLISH_DISK_FULL = (
    "The run is recorded and readers keep the previous snapshot; free space on that filesystem "
    "and run the transform again, which publishes."
)
_DISK_FULL = "no space left on device"


def _run_transform(
    wh: Path,
    state: Path,
    target: str | None,
    lake: Path | None,
    project_dir: Path | None,
    history: HistoryOptions | None,
) -> None:
    if target not in (None, "duckdb") or lake is not None:
        record = None
        result = _run_other_engine(wh, state, target, lake, project_dir)
        failures, models, tests = result.failures, result.models, result.tests
        success = result.success
    else:
        record = _run_duckdb(wh, state, project_dir, history or HistoryOptions())
        failures, models, tests, success = record.failures, record.models, record.tests, record.success
    if not success:
        if any(_DISK_FULL in f.lower() for f in failures):
            err.print(
                f"transform failed: the disk is full (dbt's messages below name the file). {_AFTER_DISK_FULL}",
                soft_wrap=True,
                markup=False,
            )
        for f in failures:
            err.print(f"[red]{f}[/red]")
        err.print(f"dbt logs: {state / 'logs'}")
        raise typer.Exit(1)
    for f in failures:  # a run that passed carries only warnings
        err.print(f"[yellow]{f}[/yellow]")
    checks = ""
    if record is not None and record.test_scope != "all":
        checks = " (column checks not due; --all-tests runs them now)"
    console.print(f"dbt build: {models} models, {tests} tests passed{checks}.")
    if target in (None, "duckdb"):
        from ..warehouse.publish import publish_with_stats

        try:
            published, stats = publish_with_stats(wh)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            # the run is recorded as done by now: only the snapshot is behind
            fail(f"publish failed: the disk is full: {e.strerror}. {_AFTER_PUBLISH_DISK_FULL}", 1, e)
        console.print(
            f"published for readers: {published} ({stats.bytes_written / 1e6:,.1f} of "
            f"{stats.file_bytes / 1e6:,.1f} MB written, {stats.seconds:.1f} s)",
            soft_wrap=True,
        )


def _run_other_engine(wh: Path, state: Path, target: str | None, lake: Path | None, project_dir: Path | None):
    from ..transform import run_dbt

    with console.status("dbt build: staging → intermediate → marts, with tests"):
        try:
            return run_dbt(
                wh,
                state,
                target=target,
                lake=lake,
                project_dir=project_dir,
                spark_warehouse=state / "spark-warehouse" if target == "spark" else None,
            )
        except (FileNotFoundError, ValueError) as e:
            fail(str(e), 2, e)


def _run_duckdb(wh: Path, state: Path, project_dir: Path | None, h: HistoryOptions):
    from ..transform import run_incremental, run_range
    from ..warehouse import Warehouse
    from ..warehouse.history import HistoryPruned

    # A writable open brings an older schema up to this version first (the hourly ingest does the
    # same), so a transform run straight after an upgrade builds on the migrated marts.
    Warehouse(wh).close()
    try:
        if not (h.full_refresh or h.span):
            with console.status("dbt build (incremental): staging → intermediate → marts, with tests"):
                return run_incremental(
                    wh,
                    state,
                    project_dir=project_dir,
                    retention_months=h.retention_months,
                    all_tests_every_hours=h.all_tests_every_hours,
                )
        with progress() as bar:
            task = bar.add_task("full refresh" if h.full_refresh else "back-fill", total=None)

            def on_chunk(i: int, n: int, s, e) -> None:
                bar.update(task, total=n, completed=i, description=f"dbt build {s}..{e}")

            record = run_range(
                wh,
                state,
                *(h.span or (None, None)),
                days=h.days,
                full_refresh=h.full_refresh,
                accept_pruned_history=h.accept_pruned_history,
                project_dir=project_dir,
                retention_months=h.retention_months,
                on_chunk=on_chunk,
            )
            bar.update(task, completed=record.chunks_done)
            return record
    except HistoryPruned as e:
        fail(str(e), 2, e)
    except (FileNotFoundError, ValueError) as e:
        fail(str(e), 2, e)


@app.command("ab-uncertainty")
def ab_uncertainty(
    marts: Annotated[
        Path,
        typer.Option(
            help="Folder holding the marts job_efficiency/ and cache_hourly/ as "
            "Parquet (e.g. <spark.sql.warehouse.dir>/marts.db)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Parquet file to write marts.ab_uncertainty to.")],
    arm_a: Annotated[str, typer.Option(help="Arm A (dbt var arm_a).")] = "A",
    arm_b: Annotated[str, typer.Option(help="Arm B (dbt var arm_b).")] = "B",
    block: Annotated[str, typer.Option(help="Bootstrap block: hour or day (dbt var ab_block).")] = "hour",
    seed: Annotated[int, typer.Option(help="Random seed (dbt var ab_seed).")] = 42,
) -> None:
    """Build marts.ab_uncertainty from another engine's marts (Spark, Trino): the dbt Python model's twin."""
    from ..analysis.uncertainty import ABParams, write_ab_uncertainty

    try:
        table = write_ab_uncertainty(marts, out, ABParams(arm_a=arm_a, arm_b=arm_b, block=block, seed=seed))
    except (ValueError, FileNotFoundError) as e:
        fail(str(e), 2, e)
    console.print(f"ab_uncertainty: {table.num_rows:,} rows -> {out}")
