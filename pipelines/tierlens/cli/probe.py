"""`tierlens probe storage`: measure a scratch device with the fixed job set and load the records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from .common import WarehouseOpt, console, fail, parsed, print_ingest, warehouse

app = typer.Typer(
    name="probe", help="Measure scratch devices with short fio jobs (device_probe records).", no_args_is_help=True
)


def print_probe(table) -> None:
    rows = table.to_pylist()
    first = rows[0]
    t = Table(
        title=f"probe {first['probe_id']}: {first['node']} {first['path'] or ''} "
        f"({first['storage_type']}; {', '.join(first['device_models'] or []) or 'no device model'}; "
        f"{first['tool_version']})"
    )
    for c in ("job", "pattern", "block", "processes", "MB/s", "IOPS", "mean latency", "p99 latency", "seconds"):
        t.add_column(c, justify="left" if c in ("job", "pattern") else "right")
    for r in rows:
        p99 = r["p99_latency_seconds"]
        t.add_row(
            r["job_name"],
            r["rw"],
            f"{r['block_size_bytes'] // 1024} KiB",
            str(r["processes"]),
            f"{r['bandwidth_bytes_per_second'] / 1e6:,.1f}",
            f"{r['iops']:,.0f}",
            f"{r['mean_latency_seconds'] * 1e3:.3f} ms",
            f"{p99 * 1e3:.3f} ms" if p99 is not None else "",
            f"{r['seconds']:.1f}",
        )
    console.print(t)
    under = [r for r in rows if r.get("write_utilisation_target") is not None]
    if under:
        # the latency distributions side by side: the tail is where writes show first
        u = Table(
            title=f"reads under writes ({under[0]['processes']} readers, {under[0]['block_size_bytes'] // 1024} KiB; "
            f"{first['filesystem'] or '?'}, scheduler {first['io_scheduler'] or 'n/a'}, discard {first['discard'] or '?'})"
        )
        for c in ("mode", "writes target", "writes", "mean ms", "p50 ms", "p99 ms", "p99.9 ms", "max ms"):
            u.add_column(c, justify="left" if c == "mode" else "right")
        for r in under:
            ms = [r[f"{k}_latency_seconds"] for k in ("mean", "p50", "p99", "p999", "max")]
            u.add_row(
                "direct" if r["direct_io"] else "buffered",
                f"{r['write_utilisation_target']:.0%}",
                f"{r['write_utilisation']:.0%}" if r["write_utilisation"] is not None else "",
                *(f"{x * 1e3:.2f}" if x is not None else "" for x in ms),
            )
        console.print(u)


@app.command("storage")
def storage(
    path: Annotated[
        Optional[Path], typer.Argument(help="An empty directory on the device to probe (e.g. the scratch path).")
    ] = None,
    node: Annotated[Optional[str], typer.Option(help="Node name to record [default: this host's name].")] = None,
    seconds: Annotated[
        float,
        typer.Option(
            help="Seconds for the whole job set: the 7 jobs and the reads under writes (8 more at the default --under-write, 4 where O_DIRECT is refused)."
        ),
    ] = 120.0,
    slots: Annotated[
        Optional[int], typer.Option(help="Processes of the full-node jobs [default: this node's cores].")
    ] = None,
    file_size: Annotated[
        str, typer.Option(help="Bytes of files one job writes or reads, e.g. 1GB; the free space checked first.")
    ] = "1GiB",
    synthetic: Annotated[
        Optional[str],
        typer.Option(help="Probe the demo generator's device model of this storage type instead of PATH."),
    ] = None,
    sustained_bytes: Annotated[
        str,
        typer.Option(
            help="Budget of the sustained write past the device's fast-write region (all slots, 8 MiB blocks); 0 skips it. At most 80 % of the free space is used."
        ),
    ] = "64GB",
    sustained_seconds: Annotated[float, typer.Option(help="Time budget of the sustained write.")] = 900.0,
    sustained_min: Annotated[
        str,
        typer.Option(
            help="Bytes written before a stable rate counts as the steady state (above the largest fast region the device could have)."
        ),
    ] = "16GB",
    under_write: Annotated[
        str,
        typer.Option(
            help="Background write throttles of the reads-under-writes jobs, in % of the measured stage-in write bandwidth, comma separated; 'none' skips them."
        ),
    ] = "0,25,50,75",
    warehouse_file: WarehouseOpt = None,
    load: Annotated[bool, typer.Option(help="Load the records into the warehouse.")] = True,
    out: Annotated[Optional[Path], typer.Option(help="Also write the records to this Parquet file.")] = None,
) -> None:
    """Run the probe job set (stage-in writes, sequential and random reads; one job alone and a full node;
    random reads by every slot under throttled background writes, buffered and O_DIRECT)."""
    from ..probe.fio import ProbeOptions, ProbeRefused, run_probe
    from ..probe.load import load_probe
    from ..sources.synthetic.probe import run_synthetic_probe
    from ..units import parse_bytes

    if (path is None) == (synthetic is None):
        raise typer.BadParameter("give a PATH to probe, or --synthetic TYPE")
    from ..probe.sustained import Budget

    size = parsed(parse_bytes, file_size, "--file-size")
    budget_bytes = parsed(parse_bytes, sustained_bytes, "--sustained-bytes")
    try:
        throttles = (
            ()
            if under_write.strip().lower() in ("", "none")
            else tuple(sorted({float(x) / 100.0 for x in under_write.split(",")}))
        )
    except ValueError as e:
        raise typer.BadParameter(f"--under-write: {under_write!r} is not a list of percentages") from e
    if any(not 0 <= t < 1.5 for t in throttles):
        raise typer.BadParameter("--under-write: percentages from 0 to below 150")
    min_bytes = parsed(parse_bytes, sustained_min, "--sustained-min")
    budget = (
        Budget(
            float(budget_bytes),
            sustained_seconds,
            float(min(min_bytes, budget_bytes)),
            float(max(min(1e9, budget_bytes / 16), 8 * 1024 * 1024)),
        )
        if budget_bytes > 0
        else None
    )
    try:
        if synthetic:
            table = run_synthetic_probe(
                synthetic, slots or 8, node, budget=budget, sustained=budget is not None, under_write=throttles
            )
        else:
            extra = (
                f", then up to {budget_bytes / 1e9:.0f} GB / {sustained_seconds:g} s of sustained writes"
                if budget
                else ""
            )
            with console.status(f"probing {path} with fio ({seconds:g} s{extra})"):
                table = run_probe(
                    ProbeOptions(path, node, seconds, slots, size, sustained=budget, under_write=throttles)
                )
    except (ProbeRefused, ValueError) as e:
        fail(f"refused: {e}", 1, e)
    print_probe(table)
    if out is not None:
        import pyarrow.parquet as pq

        pq.write_table(table, out)
        console.print(f"written: {out}")
    if load:
        wh = warehouse(warehouse_file)
        first = table.slice(0, 1).to_pylist()[0]
        print_ingest(load_probe(table, f"probe:{first['node']}:{first['path'] or first['storage_type']}", wh), wh)
