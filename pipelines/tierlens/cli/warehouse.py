"""The warehouse itself: `tierlens load`, `status`, `rejects`, `migrate` and `sql`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..records import RecordKind
from .common import (
    CsvOpt,
    FormatOpt,
    OutputFormat,
    WarehouseOpt,
    console,
    err,
    fail,
    ingest_and_print,
    output_format,
    print_rows,
    readable_warehouse,
    warehouse,
)

app = typer.Typer()


@app.command()
def load(
    kind: Annotated[RecordKind, typer.Argument(help="Record kind the files hold.")],
    files: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="Parquet files.")],
    warehouse_file: WarehouseOpt = None,
) -> None:
    """Load Parquet files of canonical records into the warehouse, one transaction per batch.

    A file whose columns are not the record's (`tierlens schema KIND`) is a reject and the command
    fails; a value of the wrong type makes its row a reject."""
    from ..pipeline import parquet_batches

    unreadable: list[str] = []
    ingest_and_print(
        parquet_batches(kind, files, direct=True, unreadable=unreadable),
        warehouse(warehouse_file),
        what=kind.value,
        command=f"load {kind.value}",
        unreadable=unreadable,
    )


@app.command()
def sql(
    name: Annotated[Optional[str], typer.Argument(help="A bundled query's name (see --list) or a .sql file.")] = None,
    warehouse_file: WarehouseOpt = None,
    csv: CsvOpt = False,
    fmt: FormatOpt = None,
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            metavar="NAME=VALUE",
            help="Set one of the query's parameters (repeatable); --list shows each query's, with its default.",
        ),
    ] = None,
    list_queries: Annotated[
        bool, typer.Option("--list", help="List the bundled queries, their questions and parameters.")
    ] = False,
    only: Annotated[
        Optional[str],
        typer.Option(
            "--columns",
            metavar="NAME,...",
            help="Show these result columns, in this order (a table too wide for the terminal shows those that fit).",
        ),
    ] = None,
) -> None:
    """Run a bundled query, or a SQL file, against the warehouse's published snapshot (read-only).

    A query's parameters are declared in its header (`-- Parameter: target = 0.75 ...`) and set
    with --param NAME=VALUE, e.g. `tierlens sql cheapest_configuration_for_efficiency --param target=0.8`."""

    from ..queries import bind, closest, parameters_of
    from ..resources import bundled_queries, find_query, question_of
    from ..warehouse import QUERY_ERRORS

    out = output_format(fmt, csv)
    if list_queries:
        queries = bundled_queries()
        print_rows(
            "bundled queries: tierlens sql NAME [--param NAME=VALUE]",
            ("name", "question", "parameters"),
            ((q.name, q.question, ", ".join(map(str, parameters_of(q.path.read_text())))) for q in queries),
            out,
        )
        return
    if name is None:
        fail("give a query name or file (`tierlens sql --list` shows the bundled ones)", 2)
    try:
        file = find_query(name)
    except FileNotFoundError as e:
        # a near name is far more likely than a missing file: name it rather than list every query
        near = closest(name, [q.name for q in bundled_queries()])
        if near:
            fail(
                f"no bundled query {name!r}: did you mean {' or '.join(near)}? (`tierlens sql --list` shows all)", 2, e
            )
        fail(f"no file {name!r} and no bundled query of that name (`tierlens sql --list` shows them)", 2, e)
    query = file.read_text()
    try:
        values = bind(parameters_of(query), param or [])
    except ValueError as e:
        fail(f"{file.name}: {e}", 2, e)
    con = open_snapshot(warehouse_file)
    try:
        for key, value in values.items():
            con.execute(f"SET VARIABLE {key} = ?", [value])
        cur = con.execute(query)
        if cur.description is None:
            return
        columns = [d[0] for d in cur.description]
        rows = cur.fetchall()
        if only:
            wanted = [c.strip() for c in only.split(",") if c.strip()]
            unknown = [c for c in wanted if c not in columns]
            if unknown or not wanted:
                fail(f"--columns: no column {', '.join(unknown)!r}; the result has: {', '.join(columns)}", 2)
            picked = [columns.index(c) for c in wanted]
            columns, rows = wanted, [tuple(r[i] for i in picked) for r in rows]
        why = "" if rows or out is not OutputFormat.TABLE else why_empty(con, file)
        title = question_of(query) or file.name
        if param:
            title += " (" + ", ".join(f"{k}={v}" for k, v in values.items()) + ")"
        print_rows(
            title,
            columns,
            rows,
            out,
            empty_reason=why,
            more="--columns NAME,... chooses the columns; --csv or --format json gives all of them.",
        )
    except typer.Exit:  # a bad --columns: click's Exit is a RuntimeError, which QUERY_ERRORS holds
        raise
    except QUERY_ERRORS as e:
        fail(f"{file}: {e}", 1, e)
    finally:
        con.close()


def open_snapshot(warehouse_file: Path | None):
    """The published snapshot of the warehouse a read command names, open read-only; a warehouse
    that cannot be opened ends the command with one line naming it."""
    import duckdb

    from ..warehouse import QUERY_ERRORS
    from ..warehouse.publish import reader_path

    wh = readable_warehouse(warehouse_file)
    try:
        return duckdb.connect(str(reader_path(wh)), read_only=True)
    except QUERY_ERRORS as e:
        fail(f"cannot open {wh}: {e}", 1, e)


def why_empty(con, file: Path) -> str:
    """Why a query found nothing: no data loaded, no marts built, or data the query's conditions
    (its header says them) do not select."""
    import duckdb

    try:
        jobs, first, last = con.execute(
            "SELECT count(*), min(end_time)::DATE, max(end_time)::DATE FROM main.raw_job"
        ).fetchone()
    except duckdb.Error:
        return "The warehouse has no job table: it is not a tierlens warehouse, or predates this version."
    if not jobs:
        return (
            "The warehouse holds no job records yet: load some (tierlens ingest ...), or run tierlens demo; "
            "tierlens status shows what it holds."
        )
    marts = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'marts'").fetchone()[0]
    if not marts:
        return (
            f"The warehouse holds {jobs:,} job records ending {first} to {last} but no marts yet: "
            "run tierlens transform."
        )
    return (
        f"The warehouse holds {jobs:,} job records ending {first} to {last}; none of them meets the "
        f"query's conditions (read them in {file})."
    )


@app.command()
def rejects(
    warehouse_file: WarehouseOpt = None,
    limit: Annotated[int, typer.Option(help="Newest N rejects.")] = 20,
    csv: CsvOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Show rejected records: where they came from and why."""

    con = open_snapshot(warehouse_file)
    try:
        total = con.execute("SELECT count(*) FROM raw_rejects").fetchone()[0]
        rows = con.execute(
            "SELECT record_kind, source, location, field, reason FROM raw_rejects "
            "ORDER BY rejected_at DESC, location LIMIT ?",
            [limit],
        ).fetchall()
    finally:
        con.close()
    print_rows(
        f"{total:,} rejected record(s)",
        ("record", "source", "location", "field", "reason"),
        [(kind, source, where, field, with_fix(kind, field, reason)) for kind, source, where, field, reason in rows],
        output_format(fmt, csv),
        empty_reason="Every record loaded so far was accepted.",
    )


def with_fix(kind: str, field: str | None, reason: str) -> str:
    """A reject's reason, and what to change when it is a bare rule of the record (records.py
    states the rule, "missing or below 1 core"; the sources' own rejects say what to change)."""
    from ..records import STORAGE_TYPES
    from ..warehouse.sql import _rules

    try:
        record = RecordKind(kind)
    except ValueError:
        return reason
    if not field or not any(r.field == field and r.reason == reason for r in _rules(record)):
        return reason
    if field == "storage_type":
        return f"{reason}: use one of {', '.join(STORAGE_TYPES)}"
    return f"{reason}: set {field} as `tierlens schema {kind}` describes it (its unit and meaning)"


@app.command()
def status(warehouse_file: WarehouseOpt = None) -> None:
    """Rows per raw table and where the warehouse lives."""
    from ..warehouse import Warehouse

    wh = readable_warehouse(warehouse_file)
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
    warehouse_file: WarehouseOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the statements without applying them.")] = False,
) -> None:
    """Bring the warehouse's schema to this tierlens' version, one transaction per version.

    Any writing command does this on its own; run it to see or apply the change beforehand."""
    from ..warehouse import Warehouse
    from ..warehouse.migrations import LATEST, SchemaError, current_version, migrate as run_migrations

    wh = warehouse(warehouse_file)
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
        fail(str(e), 2, e)
    verb = "would apply" if dry_run else "applied"
    console.print(
        f"{wh}: schema version {before}, this tierlens: {LATEST}; {verb} {len(applied)} migration(s)",
        soft_wrap=True,
        highlight=False,
    )
    for m in applied:
        console.print(f"  {m.version}  {m.name}")
        for statement in m.statements:
            console.print(f"      {statement}", soft_wrap=True, highlight=False, markup=False)
