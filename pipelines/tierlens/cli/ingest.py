"""`tierlens ingest slurm | slurm-spool | condor | xrootd | xrootd-osg`: batch-system accounting, plugin
spool records and file accesses into the warehouse. Each turns its options into a call of the
source's reader (sources/) or its ingest (ingest/), as the ingest DAG does; the defaults the DAG
shares are the source's options'. The commands are the ones sources/registry.py names, attached in
its order."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import config
from ..ingest.slurm import SlurmOptions
from ..sources import registry
from .common import (
    EXIT_FAILED,
    WarehouseOpt,
    console,
    err,
    fail,
    finish,
    ingest_and_print,
    parsed,
    warehouse,
)

app = typer.Typer(
    name="ingest", help="Ingest batch-system accounting, plugin spool records and file accesses.", no_args_is_help=True
)


def slurm(
    warehouse_file: WarehouseOpt = None,
    spool: Annotated[
        Optional[list[Path]],
        typer.Option("--spool", help="Spool folder(s) of the SPANK plugin to join as job tags (repeatable)."),
    ] = None,
    start: Annotated[
        Optional[str],
        typer.Option(help="Window start (ISO time or epoch) [default: the watermark, else --first-hours ago]."),
    ] = None,
    end: Annotated[Optional[str], typer.Option(help="Window end [default: now].")] = None,
    first_hours: Annotated[float, typer.Option(help="How far back a first run looks.")] = 24.0,
    overlap_minutes: Annotated[
        float,
        typer.Option(
            help="Start this much before the watermark, for records slurmdbd received late "
            "(loading a job again changes nothing)."
        ),
    ] = 10.0,
    window_hours: Annotated[
        float, typer.Option(help="Longest time window per sacct call, so slurmdbd is never asked for too much.")
    ] = SlurmOptions.window_hours,
    fmt: Annotated[str, typer.Option("--format", help="auto (json, then parsable2), json or parsable2.")] = "auto",
    clusters: Annotated[Optional[str], typer.Option(help="sacct --clusters.")] = None,
    sacct: Annotated[str, typer.Option(help="sacct command.")] = SlurmOptions.sacct,
    tagged_days: Annotated[
        float,
        typer.Option(
            help="Ask sacct by id for the jobs the plugin tagged in this many days before the window (up to "
            "an hour before it) that no time window returned (slurmdbd can list a job in windows later than "
            "the overlap); the site's maximum wall time plus a day. Spool files written longer ago than this "
            "before the window are not read. 0: never ask by id, read every spool file."
        ),
    ] = SlurmOptions.tagged_days,
) -> None:
    """Jobs and steps from `sacct` since the last run (watermark), joined with spool tags."""
    from ..ingest.slurm import first_window, load_since_watermark
    from ..sources.slurm.sacct import SacctError
    from ..sources.slurm.source import parse_when
    from ..warehouse.core import DiskFull
    from ..warehouse.landing import WarehouseBusy

    if fmt not in ("auto", "json", "parsable2"):
        raise typer.BadParameter("--format is auto, json or parsable2")
    options = SlurmOptions(
        sacct=sacct,
        clusters=clusters or "",
        spool=tuple(str(d) for d in spool or ()),
        window_hours=window_hours,
        tagged_days=tagged_days,
    )
    t_end = parsed(parse_when, end, "--end") if end is not None else time.time()
    wh = warehouse(warehouse_file)
    wh.parent.mkdir(parents=True, exist_ok=True)
    t_start = first_window(
        wh,
        options,
        parsed(parse_when, start, "--start") if start is not None else None,
        t_end,
        first_hours,
        overlap_minutes,
    )
    if t_start is None:
        console.print("nothing to do: the watermark is at the window end")
        return
    try:
        # an explicit window does not move the watermark
        run = load_since_watermark(wh, options, t_start, t_end, end is None or start is None, fmt, warn=err.print)
    except (SacctError, DiskFull, WarehouseBusy) as e:
        # the lock is taken before the first batch: a busy warehouse loaded nothing
        fail(f"ingest slurm failed: {e}", EXIT_FAILED, e)

    def notes() -> None:
        if run.recovered is not None and run.recovered.asked:
            console.print(
                f"asked sacct by id for {run.recovered.asked} tagged jobs no time window had returned; "
                f"{run.recovered.came_back} came back ended"
            )
        console.print(f"sacct format: {run.fmt}; watermark file {run.watermark_file}")

    finish(
        run.summary,
        wh,
        "ingest slurm",
        run.retry,
        nothing=f"sacct answered with no job or step from {_when(t_start)} to {_when(t_end)}",
        unit="sacct call(s)",
        # the watermark waits at the first of them
        then="; asked for again on the next run",
        before_verdict=notes,
    )


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def slurm_spool(
    dirs: Annotated[
        list[Path], typer.Argument(exists=True, file_okay=False, help="Spool folder(s) of the SPANK plugin.")
    ],
    warehouse_file: WarehouseOpt = None,
) -> None:
    """Job tags from the SPANK plugin's spool records (one JSON line per job step)."""
    from ..sources.slurm.spool import spool_batches

    ingest_and_print(spool_batches(dirs), warehouse(warehouse_file), command="ingest slurm-spool")


def condor(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(
            exists=True,
            help="History files or folders (a folder means its history and history.* files, "
            "e.g. $(condor_config_val SPOOL)). None: ask the schedd.",
        ),
    ] = None,
    cluster: Annotated[
        str,
        typer.Option(
            help="Pool name for jobs whose ads lack TierlensCluster; use the TIERLENS_CLUSTER of "
            "deploy/htcondor/50-tierlens.conf."
        ),
    ] = "",
    schedd: Annotated[
        Optional[str],
        typer.Option(
            help="Read this schedd's history (htcondor2.Schedd.history) from the watermark on; "
            "'local' for the local schedd. Used when no PATHS are given."
        ),
    ] = None,
    pool: Annotated[Optional[str], typer.Option(help="Collector to locate --schedd in.")] = None,
    batch_ads: Annotated[int, typer.Option(help="Ads per loaded batch (bounds memory).")] = 50_000,
    warehouse_file: WarehouseOpt = None,
) -> None:
    """HTCondor job history (files incl. rotated history.*, or a schedd) → job and job_tag rows."""
    from ..sources.condor.source import CondorSource, configured_cluster

    cluster = cluster or configured_cluster() or "htcondor"
    try:
        source = CondorSource.open(cluster, paths or (), schedd, pool, config.paths().state, batch_ads)
    except Exception as e:  # noqa: BLE001 - htcondor2 raises HTCondorException and others
        fail(
            f"no schedd to ask ({e}); give history files instead: tierlens ingest condor $(condor_config_val SPOOL)",
            1,
            e,
        )
    summary = ingest_and_print(source.batches(), warehouse(warehouse_file), what=source.what, command="ingest condor")
    source.commit()
    if not summary.batches:
        console.print("no jobs found.")


def xrootd(
    folder: Annotated[
        Optional[Path],
        typer.Argument(
            exists=True, file_okay=False, help="The collector's output folder [default: $TIERLENS_HOME/spool/xrootd]."
        ),
    ] = None,
    warehouse_file: WarehouseOpt = None,
) -> None:
    """File accesses from the Parquet batches `tierlens collect xrootd` committed (loading one again changes nothing)."""
    from ..sources.xrootd import batches

    unreadable: list[str] = []
    ingest_and_print(
        batches(folder or config.paths().xrootd_spool, direct=True, unreadable=unreadable),
        warehouse(warehouse_file),
        what="xrootd collector batches",
        command="ingest xrootd",
        unreadable=unreadable,
    )


def xrootd_osg(
    files: Annotated[
        list[Path],
        typer.Argument(
            exists=True, dir_okay=False, help="JSON or JSON Lines files of OSG collector file-close records."
        ),
    ],
    warehouse_file: WarehouseOpt = None,
) -> None:
    """Import file-close records of the OSG XRootD monitoring collector as file_access rows."""
    from ..collector.osg import osg_batches

    ingest_and_print(osg_batches(list(files)), warehouse(warehouse_file), command="ingest xrootd-osg")


def attach(group: typer.Typer) -> typer.Typer:
    """Every registered source's commands, under their registered names."""
    for source in registry.sources():
        for name, command in source.command_functions().items():
            group.command(name)(command)
    return group


attach(app)
