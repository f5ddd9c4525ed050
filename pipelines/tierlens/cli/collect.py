"""`tierlens collect xrootd`: XRootD monitoring streams into file_access batches."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, err, fail, warehouse

app = typer.Typer(name="collect", help="Collect monitoring streams (XRootD) into record batches.", no_args_is_help=True)


@app.command("xrootd")
def xrootd(
    listen: Annotated[
        Optional[str],
        typer.Option(
            "--listen",
            help="UDP HOST:PORT to receive monitoring on (the xrootd.monitor dest); 127.0.0.1:9930 when neither this nor --replay is given.",
        ),
    ] = None,
    replay: Annotated[
        Optional[Path],
        typer.Option(
            "--replay",
            exists=True,
            dir_okay=False,
            help="Decode a tcpdump capture (pcap or pcapng) or a journal segment (seg-*.tlj) instead.",
        ),
    ] = None,
    port: Annotated[Optional[int], typer.Option(help="With --replay: only datagrams sent to this UDP port.")] = None,
    out: Annotated[
        Optional[Path], typer.Option(help="Folder for the Parquet batches (default: $TIERLENS_HOME/spool/xrootd).")
    ] = None,
    max_rows: Annotated[int, typer.Option(help="Commit a batch at this many rows.")] = 200_000,
    max_seconds: Annotated[
        float, typer.Option(help="Commit (batch, stats, journal checkpoint) at least this often, seconds.")
    ] = 60.0,
    unclosed_timeout: Annotated[
        float, typer.Option(help="Emit an open with no close as unclosed after this many idle seconds.")
    ] = 24 * 3600.0,
    cache_grace: Annotated[
        float, typer.Option(help="Seconds a closed access waits for the cache's pfc file_close event.")
    ] = 5.0,
    load: Annotated[
        bool, typer.Option("--load", help="Also load each batch into the warehouse as it is written.")
    ] = False,
    warehouse_file: WarehouseOpt = None,
    journal: Annotated[
        Optional[Path],
        typer.Option(
            help="Folder of the datagram journal (default: OUT/journal); see the collector README for sizing."
        ),
    ] = None,
    journal_retention: Annotated[
        float, typer.Option(help="Seconds a decoded journal segment is kept before it is deleted.")
    ] = 3600.0,
    journal_segment_mb: Annotated[int, typer.Option(help="Size of one journal segment file, MiB.")] = 64,
    workers: Annotated[
        int,
        typer.Option(min=1, help="Receiving processes sharing the port with SO_REUSEPORT, each with its own journal."),
    ] = 1,
    allow: Annotated[
        Optional[list[str]],
        typer.Option(
            "--allow",
            help="Accept datagrams only from this network (CIDR, repeatable); others are counted and dropped.",
        ),
    ] = None,
    metrics: Annotated[
        Optional[str], typer.Option("--metrics", help="Serve Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:9931).")
    ] = None,
) -> None:
    """Collect XRootD detailed monitoring (f-stream, map records, XCache g-stream) into file_access batches."""
    from ..collector.service import Options, listen as run_listen, replay as run_replay

    if (listen is None) == (replay is None):
        listen = listen or ("127.0.0.1:9930" if replay is None else None)
        if listen is not None and replay is not None:
            fail("give either --listen or --replay, not both", 2)
    for cidr in allow or ():
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError as e:
            fail(f"--allow {cidr}: {e}", 2)
    out_dir = out or paths().xrootd_spool
    wh = warehouse(warehouse_file) if load else None
    opts = Options(
        out_dir,
        max_rows,
        max_seconds,
        unclosed_timeout,
        cache_grace,
        wh,
        journal=journal,
        journal_retention=journal_retention,
        segment_bytes=journal_segment_mb << 20,
        workers=workers,
        allow=tuple(allow or ()),
        metrics=metrics,
    )
    if replay is not None:
        result = run_replay(replay, opts, port)
    else:
        err.print(f"collecting XRootD monitoring; batches in {out_dir} (SIGTERM or Ctrl-C flushes and stops)")
        result = run_listen(listen, opts, ready=lambda addr: err.print(f"listening on {addr[0]}:{addr[1]}"))
    s = result.stats
    err.print(
        f"{s['packets']:,} packets, {result.rows:,} file_access rows in {len(result.files)} "
        f"batch(es) under {out_dir}; kernel drops {s['kernel_drops']:,}; sequence gaps "
        f"{s['lost_packets']:,} (a lower bound: pseq has 8 bits); disallowed senders "
        f"{s['disallowed']:,}; quarantined {sum(s['quarantined'].values()):,}"
    )
    for msg in s.get("journal_torn", []):
        err.print(f"[yellow]journal: {msg}[/yellow]")
    if not s["lossless"]:
        err.print("[yellow]datagrams were lost: this run is not lossless (see collector-stats.json)[/yellow]")
