"""`tierlens report`: the self-contained HTML report and its CSV files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, console, readable_warehouse

app = typer.Typer()


@app.command()
def report(
    warehouse_file: WarehouseOpt = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder for report.html and its CSVs.")] = None,
) -> None:
    """Write the self-contained HTML report and its CSV files."""
    from ..report import build_report
    from ..warehouse.publish import reader_path

    wh = readable_warehouse(warehouse_file)
    # The demo's report goes beside the demo's warehouse, not into the (empty) home's reports.
    folder = out or (wh.parent / "reports" if warehouse_file is None else paths().reports)
    with console.status("writing report"):
        result = build_report(reader_path(wh), folder)
    console.print(f"report: {result.html_path}  ({len(result.csv_paths)} CSV files beside it)")
