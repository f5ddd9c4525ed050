"""`tierlens change add | list | load`: the site's change log in the warehouse (record site_change)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..records import CHANGE_CATEGORIES
from .common import (
    CsvOpt,
    FormatOpt,
    WarehouseOpt,
    console,
    fail,
    ingest_and_print,
    output_format,
    print_ingest,
    print_rows,
    readable_warehouse,
    warehouse,
)

app = typer.Typer(
    name="change",
    help="Record site changes (settings, hardware, software) to evaluate before/after.",
    no_args_is_help=True,
)


@app.command("add")
def add(
    description: Annotated[str, typer.Argument(help="What changed, e.g. 'GPFS pagepool 512MB -> 1GB'.")],
    at: Annotated[str, typer.Option(help="When it took effect, ISO 8601, e.g. 2026-10-14T09:00Z (no zone: UTC).")],
    category: Annotated[str, typer.Option(help=f"One of: {', '.join(CHANGE_CATEGORIES)}.")] = "other",
    nodes: Annotated[Optional[str], typer.Option(help="Comma-separated nodes in scope.")] = None,
    storage_type: Annotated[Optional[str], typer.Option(help="Storage type in scope (nodes of that scratch).")] = None,
    arm: Annotated[Optional[str], typer.Option(help="A/B arm in scope.")] = None,
    cluster: Annotated[Optional[str], typer.Option(help="Cluster it applies to [default: every cluster].")] = None,
    by: Annotated[Optional[str], typer.Option(help="Who made the change.")] = None,
    change_id: Annotated[Optional[str], typer.Option("--id", help="Identifier [default: derived].")] = None,
    warehouse_file: WarehouseOpt = None,
) -> None:
    """Record one change. Without --nodes/--storage-type/--arm it applies to the whole site."""
    from ..changes.log import ChangeEntry, change_batch, parse_nodes, parse_time
    from ..pipeline import ingest

    try:
        when = parse_time(at)
    except ValueError as e:
        fail(f"--at {at!r}: not an ISO 8601 time: {e}", 2, e)
    entry = ChangeEntry(
        when,
        description,
        category.lower(),
        cluster,
        parse_nodes(nodes),
        storage_type.lower() if storage_type else None,
        arm,
        by,
        change_id,
    )
    wh = warehouse(warehouse_file)
    summary = ingest([change_batch([entry], "tierlens change add")], wh)
    if summary.total_rejected:
        print_ingest(summary, wh)
        raise typer.Exit(1)
    console.print(f"change {entry.change_id or entry.derived_id()} recorded in {wh}")


@app.command("load")
def load(
    files: Annotated[
        list[Path], typer.Argument(exists=True, dir_okay=False, help="Change logs: .csv with a header, or .yaml.")
    ],
    warehouse_file: WarehouseOpt = None,
) -> None:
    """Load a change log the site already keeps (CSV or YAML); bad lines go to `tierlens rejects`."""
    from ..changes.log import read_change_log

    try:
        batches = [read_change_log(f) for f in files]
    except (ValueError, OSError) as e:
        fail(str(e), 2, e)
    ingest_and_print(batches, warehouse(warehouse_file))


@app.command("list")
def list_changes(warehouse_file: WarehouseOpt = None, csv: CsvOpt = False, fmt: FormatOpt = None) -> None:
    """The recorded changes, oldest first."""
    from ..warehouse import Warehouse

    with Warehouse(readable_warehouse(warehouse_file), read_only=True) as w:
        rows = w.con.execute("""
            SELECT change_id, strftime(timezone('UTC', changed_at), '%Y-%m-%dT%H:%MZ'), category,
                   coalesce(cluster, 'all'),
                   CASE WHEN scope_nodes IS NOT NULL THEN 'nodes ' || array_to_string(scope_nodes, ',')
                        WHEN scope_storage_type IS NOT NULL THEN 'storage type ' || scope_storage_type
                        WHEN scope_ab_arm IS NOT NULL THEN 'arm ' || scope_ab_arm
                        ELSE 'site' END,
                   description, coalesce(changed_by, '')
            FROM raw_site_change ORDER BY changed_at, change_id""").fetchall()
    print_rows(
        f"{len(rows)} change(s)",
        ("id", "at (UTC)", "category", "cluster", "scope", "description", "by"),
        rows,
        output_format(fmt, csv),
        empty_reason="None recorded yet: tierlens change add records one.",
    )
