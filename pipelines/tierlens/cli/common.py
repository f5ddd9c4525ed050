"""What every command group shares: the consoles, the --warehouse option, progress bars, the ingest
summary, CSV output and the way a bad value becomes a usage error. Imports nothing of the CLI."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import __version__
from ..config import Paths, demo_warehouses, paths
from ..console import OutputFormat, console, number_text, print_rows  # noqa: F401  (the commands' imports)

err = Console(stderr=True)

WarehouseOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--warehouse",
        "-w",
        help="DuckDB warehouse file \\[default: $TIERLENS_HOME/warehouse.duckdb; commands that "
        "only read fall back to the demo's, $TIERLENS_HOME/demo/warehouse.duckdb, or in a clone "
        "without TIERLENS_HOME the one `make demo` wrote, .tierlens/demo/warehouse.duckdb].",
    ),
]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table (the same as --format csv).")]

T = TypeVar("T")

#: Exit codes of the ingest and load commands (README.md and docs/site-admin.md list them).
#: Nothing new is a success: a quiet hour is normal, and cron, systemd timers and Airflow's
#: BashOperator treat any other code as a failure that pages someone (BashOperator: 99 as
#: "skipped"), which teaches people to ignore them. The commands say "nothing new" on stdout.
EXIT_OK = 0
#: a window or file could not be read, or every record that came in was rejected; what did load
#: stays loaded and the watermark waits at the first window that failed
EXIT_FAILED = 1
#: a bad option or argument (click's own code): nothing was read
EXIT_USAGE = 2


def warehouse(path: Path | None, p: Paths | None = None) -> Path:
    """The --warehouse given, else the tierlens home's."""
    return path if path is not None else (p or paths()).warehouse


def readable_warehouse(path: Path | None, p: Paths | None = None) -> Path:
    """The warehouse a read command should open: the --warehouse given, else the tierlens home's,
    else (nothing there yet) the demo's (``config.demo_warehouses``), saying so on stderr.

    Leaves with a usage message naming the path it tried, and how to point at the demo, when
    there is none: a missing file is the user's to fix, not a traceback."""
    p = p or paths()
    demos = demo_warehouses(p)
    if path is not None:
        if not path.is_file():
            there = next((w for w in (p.warehouse, *demos) if w.is_file()), None)
            fail(
                f"no warehouse at {path} (given with --warehouse): check the path, or "
                + (
                    f"pass --warehouse {there}"
                    if there is not None
                    else f"run `tierlens demo` and pass --warehouse {demos[0]}"
                ),
                1,
            )
        return path
    if p.warehouse.is_file():
        return p.warehouse
    demo = next((w for w in demos if w.is_file()), None)
    if demo is not None:
        err.print(
            f"no warehouse at {p.warehouse}; reading the demo's at {demo} "
            f"(export TIERLENS_HOME={demo.parent} or pass --warehouse to choose)",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )
        return demo
    fail(
        f"no warehouse at {p.warehouse} (the tierlens home is {p.home}: $TIERLENS_HOME, else "
        f"$XDG_DATA_HOME/tierlens). Run `tierlens demo` (it writes {demos[0]}), or load your own data; "
        f"then export TIERLENS_HOME={demos[0].parent} or pass --warehouse FILE.",
        1,
    )


def progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def fail(message: str, code: int = 1, cause: BaseException | None = None) -> NoReturn:
    """Say what is wrong on stderr, in red, and leave with ``code``."""
    err.print(message, style="red", soft_wrap=True, highlight=False, markup=False)
    raise typer.Exit(code) from cause


def parsed(parse: Callable[[str], T], text: str, option: str) -> T:
    """``parse(text)``, its ValueError turned into a usage error naming the option."""
    try:
        return parse(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=option) from e


def print_ingest(summary, wh: Path, note_rejects: bool = True) -> None:
    """Rows in, loaded and rejected per record kind, and where the rejects are (on stderr, unless
    ``note_rejects`` is off: a failed command's one line counts them instead)."""
    t = Table(title=f"ingest into {wh}")
    for col in ("record", "rows in", "loaded", "rejected"):
        t.add_column(col, justify="right" if col != "record" else "left")
    for kind in sorted(summary.rows_in):
        t.add_row(
            kind, f"{summary.rows_in[kind]:,}", f"{summary.rows_loaded[kind]:,}", f"{summary.rows_rejected[kind]:,}"
        )
    console.print(t)
    if summary.already_loaded:
        console.print(f"{summary.already_loaded} batch(es) were already loaded and changed nothing.")
    if summary.total_rejected and note_rejects:
        err.print(
            f"[yellow]{summary.total_rejected:,} record(s) rejected: see `tierlens rejects` "
            f"(table raw_rejects).[/yellow]"
        )


#: what reading a source's files raises when one cannot be read (unreadable, not the format it
#: should be, a compressed file cut short): the command says so in one line, not a traceback
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, UnicodeDecodeError, zlib.error)


def _read_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (*READ_ERRORS, pa.ArrowException)


def finish(
    summary,
    wh: Path,
    command: str,
    unreadable: Iterable[str] = (),
    nothing: str = "",
    unit: str = "file(s)",
    then: str = "",
    before_verdict: Callable[[], None] | None = None,
) -> None:
    """End an ingest or load command by its outcome: EXIT_FAILED with one line on stderr (and
    nothing else there) when a window or file could not be read or every record was rejected;
    "nothing new" (``nothing`` says why) on stdout when no record came in, and EXIT_OK. The
    summary table (``wh``) is printed first."""
    from ..pipeline import failure

    why = failure(summary, list(unreadable), command, unit, then)
    print_ingest(summary, wh, note_rejects=why is None)
    if before_verdict is not None:
        before_verdict()
    if why is not None:
        fail(why, EXIT_FAILED)
    if not sum(summary.rows_in.values()):
        console.print(f"nothing new{': ' + nothing if nothing else ''}", soft_wrap=True, highlight=False, markup=False)


def ingest_and_print(
    batches: Iterable, wh: Path, what: str | None = None, command: str = "ingest", unreadable: Iterable[str] = ()
):
    """Load ``batches`` into ``wh`` (with a progress bar when ``what`` names them), print the
    summary and end by its outcome (``finish``; ``unreadable`` is filled while the batches are read)."""
    from ..pipeline import ingest
    from ..warehouse.core import DiskFull
    from ..warehouse.landing import WarehouseBusy

    wh.parent.mkdir(parents=True, exist_ok=True)
    try:
        if what is None:
            summary = ingest(batches, wh)
        else:
            with progress() as bar:
                task = bar.add_task(f"loading {what}", total=None)
                summary = ingest(batches, wh, on_batch=lambda r: bar.advance(task, r.rows_in))
    except DiskFull as e:
        fail(f"{command} failed: {e}", EXIT_FAILED, e)
    except _read_errors() as e:
        fail(f"{command} failed: could not read {e} (batches before it are loaded)", EXIT_FAILED, e)
    except WarehouseBusy as e:  # nothing was loaded: the lock is taken before the first batch
        fail(f"{command} failed: {e}", EXIT_FAILED, e)
    finish(summary, wh, command, unreadable)
    return summary


FormatOpt = Annotated[
    Optional[OutputFormat],
    typer.Option(
        "--format",
        help="table (a row a line, with the columns that fit the terminal, 100 characters without one), csv or "
        "json (every column) \\[default: table].",
    ),
]


def output_format(fmt: OutputFormat | None, as_csv: bool) -> OutputFormat:
    """--format, with --csv kept as its short form for csv."""
    if fmt is not None and as_csv and fmt is not OutputFormat.CSV:
        raise typer.BadParameter(f"--csv and --format {fmt.value} disagree; give one", param_hint="--format")
    return OutputFormat.CSV if as_csv else (fmt or OutputFormat.TABLE)


def print_version(value: bool) -> None:
    if value:
        console.print(f"tierlens {__version__}")
        raise typer.Exit()


def root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=print_version, is_eager=True, help="Print the tierlens version and exit."),
    ] = False,
) -> None:
    """tierlens: what worker-node storage and caching do to your jobs' CPU efficiency."""
