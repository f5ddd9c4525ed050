"""`tierlens lake export | compact`: the raw tables as a Parquet lake for other engines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, console, fail, readable_warehouse

app = typer.Typer(name="lake", help="The Parquet lake: raw tables for other engines.", no_args_is_help=True)

LakeOpt = Annotated[Optional[Path], typer.Option(help="Lake folder [default: $TIERLENS_HOME/lake].")]


@app.command("export")
def export(warehouse_file: WarehouseOpt = None, out: LakeOpt = None) -> None:
    """Write the raw tables as Parquet, partitioned by UTC day and site (day=YYYY-MM-DD/site=CLUSTER/)."""
    from ..warehouse import Warehouse, export_lake

    folder = out or paths().lake
    with Warehouse(readable_warehouse(warehouse_file), read_only=True) as w, console.status("exporting lake"):
        rows = export_lake(w, folder)
    console.print(f"lake: {folder}: " + ", ".join(f"{k} {v:,}" for k, v in rows.items()))


@app.command("compact")
def compact(
    lake: LakeOpt = None,
    rows_per_file: Annotated[int, typer.Option(help="Most rows in one rewritten file.")] = 1_000_000,
) -> None:
    """Rewrite partitions made of many small Parquet files into few, each swapped in atomically."""
    from ..warehouse import compact_lake

    folder = lake or paths().lake
    try:
        done = compact_lake(folder, rows_per_file=rows_per_file)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e), 2, e)
    changed = ", ".join(f"{k} {v:,}" for k, v in done.items() if v) or "none needed it"
    console.print(f"lake {folder}: {sum(done.values()):,} partition folder(s) compacted ({changed})", soft_wrap=True)
