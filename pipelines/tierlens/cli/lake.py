"""`tierlens lake export | append | compact`: the raw tables as a Parquet lake for other engines."""

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
    """Write the raw tables as Parquet, partitioned by UTC day and site (day=YYYY-MM-DD/site=CLUSTER/):
    the first export, or a repair; `lake append` keeps it up to date."""
    from ..warehouse import Warehouse, export_lake

    folder = out or paths().lake
    with Warehouse(readable_warehouse(warehouse_file), read_only=True) as w, console.status("exporting lake"):
        rows = export_lake(w, folder)
    console.print(f"lake: {folder}: " + ", ".join(f"{k} {v:,}" for k, v in rows.items()))


@app.command("append")
def append(warehouse_file: WarehouseOpt = None, out: LakeOpt = None) -> None:
    """Write what the warehouse changed since the lake's last commit (the hourly path); a lake
    without manifests gets a full export."""
    from ..warehouse import Warehouse
    from ..warehouse.lake import append_lake
    from ..warehouse.lake_commit import LakeError

    folder = out or paths().lake
    with Warehouse(readable_warehouse(warehouse_file), read_only=True) as w, console.status("appending to lake"):
        try:
            done = append_lake(w, folder)
        except LakeError as e:
            fail(str(e), 2, e)
    if done is None:
        console.print(f"lake: {folder}: no manifest yet, exported in full")
        return
    for t in (t for t in done.values() if t.committed):
        console.print(
            f"{t.table}: {t.appended_partitions} partition(s) appended, {t.rewritten_partitions} rewritten, "
            f"{t.removed_partitions} removed, {t.rows_written:,} row(s)"
        )
    console.print(f"lake: {folder}: {sum(t.committed for t in done.values())} table(s) committed")


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
