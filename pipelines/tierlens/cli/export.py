"""`tierlens export trace`: the warehouse's file accesses in other tools' formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import WarehouseOpt, console, fail
from .simulate import load_trace

app = typer.Typer(name="export", help="Export warehouse data in other tools' formats.", no_args_is_help=True)


@app.command("trace")
def export_trace(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file.")],
    fmt: Annotated[str, typer.Option("--format", help="oracleGeneral (libCacheSim binary).")] = "oracleGeneral",
    warehouse_file: WarehouseOpt = None,
    size_unit: Annotated[
        int, typer.Option(help="Write sizes in units of this many bytes (files over 4 GiB need > 1).")
    ] = 1,
    server: Annotated[Optional[str], typer.Option(help="Only accesses to this server_host.")] = None,
    role: Annotated[Optional[str], typer.Option(help="Only accesses to servers of this role.")] = None,
    start: Annotated[Optional[str], typer.Option(help="Only accesses opened at or after this UTC time.")] = None,
    end: Annotated[Optional[str], typer.Option(help="Only accesses opened before this UTC time.")] = None,
) -> None:
    """Write the warehouse's file accesses as a cache trace for other simulators."""
    from ..simulator import trace as tr

    if fmt.lower() != "oraclegeneral":
        raise typer.BadParameter(f"unknown format {fmt!r}; supported: oracleGeneral")
    trace = load_trace(warehouse_file, None, None, 1, server, role, start, end)
    try:
        n = tr.write_oracle(trace, out, size_unit)
    except ValueError as e:
        fail(str(e), 1, e)
    console.print(f"{out}: {n:,} requests, {trace.n_objects:,} objects (oracleGeneral, size unit {size_unit} B)")
