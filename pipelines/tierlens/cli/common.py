"""What every command group shares: the consoles, the --warehouse option, progress bars, the ingest
summary, CSV output and the way a bad value becomes a usage error. Imports nothing of the CLI."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import __version__
from ..config import Paths, paths

console = Console()
err = Console(stderr=True)

WarehouseOpt = Annotated[Optional[Path], typer.Option(
    "--warehouse", "-w", help="DuckDB warehouse file \\[default: $TIERLENS_HOME/warehouse.duckdb].")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")]

T = TypeVar("T")


def warehouse(path: Path | None, p: Paths | None = None) -> Path:
    """The --warehouse given, else the tierlens home's."""
    return path if path is not None else (p or paths()).warehouse


def progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def fail(message: str, code: int = 1, cause: BaseException | None = None) -> NoReturn:
    """Say what is wrong on stderr, in red, and leave with ``code``."""
    err.print(f"[red]{message}[/red]")
    raise typer.Exit(code) from cause


def parsed(parse: Callable[[str], T], text: str, option: str) -> T:
    """``parse(text)``, its ValueError turned into a usage error naming the option."""
    try:
        return parse(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=option) from e


def print_ingest(summary, wh: Path) -> None:
    """Rows in, loaded and rejected per record kind, and where the rejects are."""
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


def ingest_and_print(batches: Iterable, wh: Path, what: str | None = None):
    """Load ``batches`` into ``wh`` (with a progress bar when ``what`` names them), print the summary."""
    from ..pipeline import ingest

    wh.parent.mkdir(parents=True, exist_ok=True)
    if what is None:
        summary = ingest(batches, wh)
    else:
        with progress() as bar:
            task = bar.add_task(f"loading {what}", total=None)
            summary = ingest(batches, wh, on_batch=lambda r: bar.advance(task, r.rows_in))
    print_ingest(summary, wh)
    return summary


def print_rows(title: str, columns: Sequence[str], rows: Iterable[Sequence], as_csv: bool = False,
               cell: Callable[[object], str] = str) -> None:
    """A table of ``rows`` on the console, or CSV on stdout."""
    if as_csv:
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        w.writerows(rows)
        return
    t = Table(title=title)
    for c in columns:
        t.add_column(c)
    for row in rows:
        t.add_row(*[cell(v) for v in row])
    console.print(t)


def print_version(value: bool) -> None:
    if value:
        console.print(f"tierlens {__version__}")
        raise typer.Exit()


def root(show_version: Annotated[bool, typer.Option("--version", callback=print_version, is_eager=True,
                                                    help="Print the tierlens version and exit.")] = False) -> None:
    """tierlens: what worker-node storage and caching do to your jobs' CPU efficiency."""
