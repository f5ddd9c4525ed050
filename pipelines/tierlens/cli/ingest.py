"""`tierlens ingest slurm | slurm-spool | condor | xrootd | xrootd-osg`: batch-system accounting, plugin
spool records and file accesses into the warehouse. Each calls its source's one ``batches()`` entry,
as the ingest DAG does. The commands are the ones sources/registry.py names, attached in its order."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import config
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
    ] = 6.0,
    fmt: Annotated[str, typer.Option("--format", help="auto (json, then parsable2), json or parsable2.")] = "auto",
    clusters: Annotated[Optional[str], typer.Option(help="sacct --clusters.")] = None,
    sacct: Annotated[str, typer.Option(help="sacct command.")] = "sacct",
    tagged_days: Annotated[
        float,
        typer.Option(
            help="Ask sacct by id for the jobs the plugin tagged in this many days that no time "
            "window returned (slurmdbd can list a job in windows later than the overlap); the site's "
            "maximum wall time plus a day. Spool files written longer ago than this before the window "
            "are not read. 0: never ask by id, read every spool file."
        ),
    ] = 8.0,
) -> None:
    """Jobs and steps from `sacct` since the last run (watermark), joined with spool tags."""
    from ..pipeline import ingest, tagged_not_accounted
    from ..sources.slurm.sacct import SacctError, SacctRunner, WindowReport
    from ..sources.slurm.source import Checkpoints, batches, parse_when, watermark

    if fmt not in ("auto", "json", "parsable2"):
        raise typer.BadParameter("--format is auto, json or parsable2")
    t_end = parsed(parse_when, end, "--end") if end is not None else time.time()
    wh = warehouse(warehouse_file)
    wh.parent.mkdir(parents=True, exist_ok=True)
    mark = watermark(wh, clusters)
    state = mark.read()
    if start is not None:
        t_start = parsed(parse_when, start, "--start")
    elif state.get("watermark"):
        t_start = state["watermark"] - overlap_minutes * 60
    else:
        t_start = t_end - first_hours * 3600
    if t_start >= t_end and not state.get("unfinished"):
        console.print("nothing to do: the watermark is at the window end")
        return
    runner = SacctRunner(sacct=sacct, fmt=fmt, clusters=clusters)
    missing = (
        tagged_not_accounted(wh, "slurm", clusters, t_end - tagged_days * 86400, t_start, warn=err.print)
        if tagged_days > 0
        else []
    )

    def save(at: float, unfinished: list[str]) -> None:
        if end is None or start is None:  # an explicit window does not move the watermark
            # a window held for retry may start in the overlap before the old watermark
            at = max(at, state.get("watermark") or at)
            mark.write({"watermark": at, "unfinished": unfinished, "format": runner.fmt})

    marks = Checkpoints(save)
    retry: list[WindowReport] = []
    try:
        summary = ingest(
            marks.count(
                batches(
                    runner,
                    t_start,
                    t_end,
                    window_hours=window_hours,
                    spool=spool or (),
                    unfinished=state.get("unfinished", []),
                    on_window=marks.on_window,
                    retry=retry,
                    missing=missing,
                    spool_since=datetime.fromtimestamp(t_start - tagged_days * 86400, tz=timezone.utc)
                    if tagged_days > 0
                    else None,
                )
            ),
            wh,
            on_batch=marks.on_batch,
        )
    except SacctError as e:
        fail(f"ingest slurm failed: {e}", EXIT_FAILED, e)
    marks.flush()

    def notes() -> None:
        if missing:
            console.print(f"asked sacct by id for {len(missing)} tagged jobs no time window had returned")
        console.print(f"sacct format: {runner.fmt}; watermark file {mark.path}")

    finish(
        summary,
        wh,
        "ingest slurm",
        [report.describe() for report in retry],
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
    from ..collector.batches import batches

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
