"""The `tierlens` command: every stage can be run on its own from here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import __version__
from .config import Paths, paths
from .records import SPECS, RecordKind, describe

app = typer.Typer(help="tierlens: what worker-node storage and caching do to your jobs' CPU efficiency.",
                  no_args_is_help=True, add_completion=False)
lake_app = typer.Typer(help="The Parquet lake: raw tables for other engines.", no_args_is_help=True)
app.add_typer(lake_app, name="lake")
ingest_app = typer.Typer(help="Ingest batch-system accounting and plugin spool records.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
collect_app = typer.Typer(help="Collect monitoring streams (XRootD) into record batches.", no_args_is_help=True)
app.add_typer(collect_app, name="collect")
console = Console()
err = Console(stderr=True)

WarehouseOpt = Annotated[Optional[Path], typer.Option(
    "--warehouse", "-w", help="DuckDB warehouse file [default: $TIERLENS_HOME/warehouse.duckdb].")]


def _warehouse(path: Path | None, p: Paths | None = None) -> Path:
    return path if path is not None else (p or paths()).warehouse


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


@app.command()
def version() -> None:
    """Print the tierlens version."""
    console.print(__version__)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"tierlens {__version__}")
        raise typer.Exit()


@app.callback()
def _main(show_version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                     help="Print the tierlens version and exit.")] = False) -> None:
    """tierlens: what worker-node storage and caching do to your jobs' CPU efficiency."""


@app.command()
def schema(kind: Annotated[Optional[RecordKind], typer.Argument(help="Record kind; all when omitted.")] = None) -> None:
    """Show the canonical records: every field with its type, unit and meaning."""
    for k in [kind] if kind else list(RecordKind):
        t = Table(title=f"{k.value} (raw table {k.table}; natural key: {', '.join(SPECS[k].natural_key)})")
        for col in ("field", "type", "unit", "meaning"):
            t.add_column(col)
        for row in describe(k):
            t.add_row(*row)
        console.print(t)


@app.command()
def load(
    kind: Annotated[RecordKind, typer.Argument(help="Record kind the files hold.")],
    files: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="Parquet files.")],
    warehouse: WarehouseOpt = None,
) -> None:
    """Load Parquet files of canonical records into the warehouse, one transaction per batch."""
    from .pipeline import ingest, parquet_batches

    wh = _warehouse(warehouse)
    with _progress() as progress:
        task = progress.add_task(f"loading {kind.value}", total=None)
        summary = ingest(parquet_batches(kind, files, direct=True), wh,
                         on_batch=lambda r: progress.advance(task, r.rows_in))
    _print_ingest(summary, wh)


def _print_ingest(summary, wh: Path) -> None:
    t = Table(title=f"ingest into {wh}")
    for col in ("record", "rows in", "loaded", "rejected"):
        t.add_column(col, justify="right" if col != "record" else "left")
    for kind in sorted(summary.rows_in):
        t.add_row(kind, f"{summary.rows_in[kind]:,}", f"{summary.rows_loaded[kind]:,}",
                  f"{summary.rows_rejected[kind]:,}")
    console.print(t)
    if summary.already_loaded:
        console.print(f"{summary.already_loaded} batch(es) were already loaded and changed nothing.")
    if summary.total_rejected:
        err.print(f"[yellow]{summary.total_rejected:,} record(s) rejected: see `tierlens rejects` "
                  f"(table raw_rejects).[/yellow]")


@app.command()
def transform(
    warehouse: WarehouseOpt = None,
    target: Annotated[Optional[str], typer.Option(help="dbt target in dbt/profiles.yml: duckdb (default), spark, "
                                                       "spark_thrift.")] = None,
    lake: Annotated[Optional[Path], typer.Option(help="Read the raw sources from this Parquet lake "
                                                      "(needed by the spark targets).")] = None,
    project_dir: Annotated[Optional[Path], typer.Option(
        file_okay=False, exists=True, help="A site's own dbt project [default: $TIERLENS_DBT_PROJECT_DIR, "
                                           "else the one shipped with tierlens].")] = None,
) -> None:
    """Build the dbt project (staging → intermediate → marts) and run its tests."""
    wh = _warehouse(warehouse)
    if target and target.startswith("spark") and lake is None:
        err.print("[red]the spark targets read the Parquet lake: give --lake (tierlens lake export writes it)[/red]")
        raise typer.Exit(2)
    _run_transform(wh, paths().dbt_state, target=target, lake=lake, project_dir=project_dir)


def _run_transform(wh: Path, state: Path, target: str | None = None, lake: Path | None = None,
                   project_dir: Path | None = None) -> None:
    from .transform import run_dbt

    with console.status("dbt build: staging → intermediate → marts, with tests"):
        try:
            result = run_dbt(wh, state, target=target, lake=lake, project_dir=project_dir,
                             spark_warehouse=state / "spark-warehouse" if target == "spark" else None)
        except (FileNotFoundError, ValueError) as e:
            err.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from e
    if not result.success:
        for f in result.failures:
            err.print(f"[red]{f}[/red]")
        err.print(f"dbt logs: {state / 'logs'}")
        raise typer.Exit(1)
    console.print(f"dbt build: {result.models} models, {result.tests} tests, {result.seeds} seeds passed.")
    if target in (None, "duckdb"):
        from .warehouse.publish import publish

        console.print(f"published for readers: {publish(wh)}", soft_wrap=True)


@app.command()
def report(
    warehouse: WarehouseOpt = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder for report.html and its CSVs.")] = None,
) -> None:
    """Write the self-contained HTML report and its CSV files."""
    from .report import build_report
    from .warehouse.publish import reader_path

    wh = reader_path(_warehouse(warehouse))
    out = out or paths().reports
    with console.status("writing report"):
        result = build_report(wh, out)
    console.print(f"report: {result.html_path}  ({len(result.csv_paths)} CSV files beside it)")


@app.command()
def sql(
    name: Annotated[Optional[str], typer.Argument(help="A bundled query's name (see --list) or a .sql file.")] = None,
    warehouse: WarehouseOpt = None,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    list_queries: Annotated[bool, typer.Option("--list", help="List the bundled queries and their questions.")] = False,
) -> None:
    """Run a bundled query, or a SQL file, against the warehouse's published snapshot (read-only)."""
    import duckdb

    from .resources import bundled_queries, find_query, question_of
    from .warehouse import QUERY_ERRORS
    from .warehouse.publish import reader_path

    if list_queries:
        _print_queries(bundled_queries())
        return
    if name is None:
        err.print("[red]give a query name or file (`tierlens sql --list` shows the bundled ones)[/red]")
        raise typer.Exit(2)
    try:
        file = find_query(name)
    except FileNotFoundError as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from e
    query = file.read_text()
    question = question_of(query)
    con = duckdb.connect(str(reader_path(_warehouse(warehouse))), read_only=True)
    try:
        cur = con.execute(query)
        if cur.description is None:
            return
        columns = [d[0] for d in cur.description]
        rows = cur.fetchall()
        if csv:
            _write_csv(columns, rows)
            return
        t = Table(title=question or file.name)
        for c in columns:
            t.add_column(c)
        for row in rows:
            t.add_row(*[_fmt(v) for v in row])
        console.print(t)
    except QUERY_ERRORS as e:
        err.print(f"[red]{file}: {e}[/red]")
        raise typer.Exit(1) from e
    finally:
        con.close()


def _print_queries(queries) -> None:
    t = Table(title="bundled queries: tierlens sql NAME")
    t.add_column("name")
    t.add_column("question")
    for q in queries:
        t.add_row(q.name, q.question)
    console.print(t)


def _write_csv(columns, rows) -> None:
    import csv

    w = csv.writer(sys.stdout)
    w.writerow(columns)
    w.writerows(rows)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    return "" if v is None else str(v)


@app.command()
def rejects(
    warehouse: WarehouseOpt = None,
    limit: Annotated[int, typer.Option(help="Newest N rejects.")] = 20,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
) -> None:
    """Show rejected records: where they came from and why."""
    import duckdb

    con = duckdb.connect(str(_warehouse(warehouse)), read_only=True)
    try:
        total = con.execute("SELECT count(*) FROM raw_rejects").fetchone()[0]
        rows = con.execute("SELECT record_kind, source, location, field, reason FROM raw_rejects "
                       "ORDER BY rejected_at DESC, location LIMIT ?", [limit]).fetchall()
    finally:
        con.close()
    if csv:
        _write_csv(("record", "source", "location", "field", "reason"), rows)
        return
    t = Table(title=f"{total:,} rejected record(s)")
    for c in ("record", "source", "location", "field", "reason"):
        t.add_column(c)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    console.print(t)


@app.command()
def status(warehouse: WarehouseOpt = None) -> None:
    """Rows per raw table and where the warehouse lives."""
    from .warehouse import Warehouse

    wh = _warehouse(warehouse)
    if not wh.exists():
        err.print(f"no warehouse at {wh} yet: run `tierlens demo` or `tierlens load`.")
        raise typer.Exit(1)
    with Warehouse(wh, read_only=True) as w:
        counts = w.counts()
    t = Table(title=str(wh))
    t.add_column("table")
    t.add_column("rows", justify="right")
    for name, n in counts.items():
        t.add_row(name, f"{n:,}")
    console.print(t)


@app.command()
def migrate(
    warehouse: WarehouseOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the statements without applying them.")] = False,
) -> None:
    """Bring the warehouse's schema to this tierlens' version, one transaction per version.

    Any writing command does this on its own; run it to see or apply the change beforehand."""
    from .warehouse import Warehouse
    from .warehouse.migrations import LATEST, SchemaError, current_version
    from .warehouse.migrations import migrate as run_migrations

    wh = _warehouse(warehouse)
    if not wh.exists():
        err.print(f"no warehouse at {wh}")
        raise typer.Exit(1)
    try:
        with Warehouse(wh, migrate=False) as w:
            before = current_version(w.con)
            applied = run_migrations(w.con, wh, dry_run=dry_run)
            if not dry_run:
                w.ensure_schema()  # checks the result against records.py, syncs comments
    except SchemaError as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from e
    verb = "would apply" if dry_run else "applied"
    console.print(f"{wh}: schema version {before}, this tierlens: {LATEST}; {verb} {len(applied)} migration(s)",
                  soft_wrap=True, highlight=False)
    for m in applied:
        console.print(f"  {m.version}  {m.name}")
        for statement in m.statements:
            console.print(f"      {statement}", soft_wrap=True, highlight=False, markup=False)


@lake_app.command("export")
def lake_export(
    warehouse: WarehouseOpt = None,
    out: Annotated[Optional[Path], typer.Option(help="Lake folder [default: $TIERLENS_HOME/lake].")] = None,
) -> None:
    """Write the raw tables as Parquet, partitioned by UTC day and site (day=YYYY-MM-DD/site=CLUSTER/)."""
    from .warehouse import Warehouse, export_lake

    with Warehouse(_warehouse(warehouse), read_only=True) as w, console.status("exporting lake"):
        rows = export_lake(w, out or paths().lake)
    console.print(f"lake: {out or paths().lake}: " + ", ".join(f"{k} {v:,}" for k, v in rows.items()))


@lake_app.command("compact")
def lake_compact(
    lake: Annotated[Optional[Path], typer.Option(help="Lake folder [default: $TIERLENS_HOME/lake].")] = None,
    rows_per_file: Annotated[int, typer.Option(help="Most rows in one rewritten file.")] = 1_000_000,
) -> None:
    """Rewrite partitions made of many small Parquet files into few, each swapped in atomically."""
    from .warehouse import compact_lake

    folder = lake or paths().lake
    try:
        done = compact_lake(folder, rows_per_file=rows_per_file)
    except (ValueError, FileNotFoundError) as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from e
    changed = ", ".join(f"{k} {v:,}" for k, v in done.items() if v) or "none needed it"
    console.print(f"lake {folder}: {sum(done.values()):,} partition folder(s) compacted ({changed})", soft_wrap=True)


@app.command("ab-uncertainty")
def ab_uncertainty_cmd(
    marts: Annotated[Path, typer.Option(help="Folder holding the marts job_efficiency/ and cache_hourly/ as "
                                             "Parquet (e.g. <spark.sql.warehouse.dir>/marts.db).")],
    out: Annotated[Path, typer.Option(help="Parquet file to write marts.ab_uncertainty to.")],
    arm_a: Annotated[str, typer.Option(help="Arm A (dbt var arm_a).")] = "A",
    arm_b: Annotated[str, typer.Option(help="Arm B (dbt var arm_b).")] = "B",
    block: Annotated[str, typer.Option(help="Bootstrap block: hour or day (dbt var ab_block).")] = "hour",
    seed: Annotated[int, typer.Option(help="Random seed (dbt var ab_seed).")] = 42,
) -> None:
    """Build marts.ab_uncertainty from another engine's marts (Spark, Trino): the dbt Python model's twin."""
    from .analysis.uncertainty import ABParams, ab_uncertainty
    from .warehouse.lake import read_parquet_table, write_parquet_atomically

    try:
        params = ABParams(arm_a=arm_a, arm_b=arm_b, block=block, seed=seed)
        jobs = read_parquet_table(marts / "job_efficiency")
        cache = read_parquet_table(marts / "cache_hourly")
        table = ab_uncertainty(jobs, cache, params)
        write_parquet_atomically(table, out)
    except (ValueError, FileNotFoundError) as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from e
    console.print(f"ab_uncertainty: {table.num_rows:,} rows -> {out}")


@app.command()
def demo(
    days: Annotated[float, typer.Option(help="Days of site activity to simulate.")] = 30.0,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same data.")] = 42,
    nodes_per_type: Annotated[int, typer.Option(help="Worker nodes per storage type (HDD and RAID0 get twice).")] = 2,
    home: Annotated[Optional[Path], typer.Option(help="Folder for the demo's warehouse, lake and report "
                                                      "[default: $TIERLENS_HOME/demo].")] = None,
    change: Annotated[Optional[list[str]], typer.Option(
        help="A site change mid-month with a known effect, e.g. 'day=14,storage_type=raid1,read_speedup=1.3' "
             "(repeatable; see marts.change_effects).")] = None,
) -> None:
    """Simulate a month of a synthetic Tier-2, ingest it, run dbt, write the report, print a summary."""
    from .demo import run_demo

    demo_home = home or paths().home / "demo"
    from .sources.synthetic import SyntheticChange

    try:
        changes = tuple(SyntheticChange.parse(c) for c in change or [])
    except ValueError as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from e
    p = Paths(demo_home)
    if p.warehouse.exists():
        p.warehouse.unlink()  # the demo's own warehouse: start clean so every run is the same
    run_demo(p, days=days, seed=seed, nodes_per_type=nodes_per_type, console=console,
             progress=_progress, transform=_run_transform, changes=changes)


@app.command()
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print the findings as JSON, for monitoring.")] = False,
    srun: Annotated[bool, typer.Option("--srun", help="Submit one tiny test job to see the plugin's variables.")] = False,
    srun_args: Annotated[Optional[str], typer.Option(help="Extra srun options for the test job, e.g. '-p debug'.")] = None,
    slurm_conf: Annotated[Optional[Path], typer.Option(help="slurm.conf [default: $SLURM_CONF, else /etc/slurm].")] = None,
    collector_stats: Annotated[Optional[Path], typer.Option(
        help="The collector's collector-stats.json [default: $TIERLENS_HOME/spool/xrootd/].")] = None,
    warehouse: WarehouseOpt = None,
    airflow: Annotated[Optional[str], typer.Option(help="The airflow executable [default: on PATH].")] = None,
) -> None:
    """Check this host's tierlens parts (Slurm plugin, HTCondor tags, sacct, collector, warehouse, dbt,
    Airflow), each finding with its fix; exit status 1 when any check fails."""
    import shlex

    from .doctor import Options, Status, failed, run_checks, to_json

    opts = Options(slurm_conf=slurm_conf, test_srun=srun, srun_args=shlex.split(srun_args or ""),
                   collector_stats=collector_stats, warehouse=warehouse, airflow=airflow)
    findings = run_checks(opts)
    if json_out:
        print(to_json(findings))
    else:
        colour = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "red", Status.INFO: "blue"}
        t = Table(title="tierlens doctor")
        for col in ("status", "area", "check", "finding", "fix"):
            t.add_column(col)
        for f in findings:
            t.add_row(f"[{colour[f.status]}]{f.status.value}[/]", f.area, f.check, f.detail, f.fix)
        console.print(t)
    if failed(findings):
        raise typer.Exit(1)


# Each source owns its sub-commands in its own module and registers them here: one line each.
# --- source commands (keep one line per source) ---
from .sources.condor.command import register as _reg_condor; _reg_condor(ingest_app)  # noqa: E402,E702
from .sources.slurm.command import register as _reg_slurm; _reg_slurm(ingest_app)  # noqa: E402,E702
from .collector.command import register as _reg_xrootd; _reg_xrootd(collect_app, ingest_app)  # noqa: E402,E702
from .simulator.command import register as _reg_sim; _reg_sim(app)  # noqa: E402,E702
from .changes.command import register as _reg_change; _reg_change(app)  # noqa: E402,E702
from .probe.command import register as _reg_probe; _reg_probe(app)  # noqa: E402,E702
# --- end of source commands ---


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

