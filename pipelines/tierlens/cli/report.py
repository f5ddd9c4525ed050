"""`tierlens report`: the self-contained HTML report and its CSV files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, console, warehouse

app = typer.Typer()


@app.command()
def report(
    warehouse_file: WarehouseOpt = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder for report.html and its CSVs.")] = None,
) -> None:
    """Write the self-contained HTML report and its CSV files."""
    from ..report import build_report
    from ..warehouse.publish import reader_path

    with console.status("writing report"):
        result = build_report(reader_path(warehouse(warehouse_file)), out or paths().reports)
    console.print(f"report: {result.html_path}  ({len(result.csv_paths)} CSV files beside it)")
