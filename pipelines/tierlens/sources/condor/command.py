"""`tierlens ingest condor`: HTCondor job history into the warehouse's job and job_tag tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(ingest_app: typer.Typer) -> None:
    ingest_app.command("condor")(condor)


def condor(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        exists=True, help="History files or folders (a folder means its history and history.* files, "
                          "e.g. $(condor_config_val SPOOL)). None: ask the schedd.")] = None,
    cluster: Annotated[str, typer.Option(
        help="Pool name for jobs whose ads lack TierlensCluster; use the TIERLENS_CLUSTER of "
             "deploy/htcondor/50-tierlens.conf.")] = "",
    schedd: Annotated[Optional[str], typer.Option(
        help="Read this schedd's history (htcondor2.Schedd.history) from the watermark on; "
             "'local' for the local schedd. Used when no PATHS are given.")] = None,
    pool: Annotated[Optional[str], typer.Option(help="Collector to locate --schedd in.")] = None,
    batch_ads: Annotated[int, typer.Option(help="Ads per loaded batch (bounds memory).")] = 50_000,
    warehouse: Annotated[Optional[Path], typer.Option(
        "--warehouse", "-w", help="DuckDB warehouse file \\[default: $TIERLENS_HOME/warehouse.duckdb].")] = None,
) -> None:
    """HTCondor job history (files incl. rotated history.*, or a schedd) → job and job_tag rows."""
    from ...cli import _print_ingest, _progress, _warehouse, console, err
    from ...config import paths as tierlens_paths
    from ...pipeline import ingest

    wh = _warehouse(warehouse)
    cluster = cluster or _configured_cluster() or "htcondor"
    if paths:
        from .history import history_batches

        batches, done = history_batches(paths, cluster, batch_ads), None
        what = f"condor history ({len(paths)} path(s))"
    else:
        from .schedd import ScheddHistory, locate_schedd, watermark_for

        name = None if schedd in (None, "local") else schedd
        try:
            handle = locate_schedd(name, pool)
        except Exception as e:  # noqa: BLE001 - htcondor2 raises HTCondorException and others
            err.print(f"[red]no schedd to ask ({e}); give history files instead: "
                      f"tierlens ingest condor $(condor_config_val SPOOL)[/red]")
            raise typer.Exit(1) from e
        reader = ScheddHistory(handle, watermark_for(tierlens_paths().home / "state", name or "local"),
                               cluster, source=f"condor-schedd:{name or 'local'}", batch_ads=batch_ads)
        batches, done = reader.batches(), reader.commit
        what = f"schedd {name or 'local'} history"
    with _progress() as progress:
        task = progress.add_task(f"loading {what}", total=None)
        summary = ingest(batches, wh, on_batch=lambda r: progress.advance(task, r.rows_in))
    if done is not None:
        done()
    _print_ingest(summary, wh)
    if not summary.batches:
        console.print("no jobs found.")


def _configured_cluster() -> str | None:
    """TIERLENS_CLUSTER from the local HTCondor configuration, when there is one."""
    import os

    if not os.environ.get("CONDOR_CONFIG") and not Path("/etc/condor/condor_config").exists():
        return None
    try:
        import htcondor2

        return htcondor2.param.get("TIERLENS_CLUSTER") or None
    except Exception:  # noqa: BLE001 - no usable configuration: fall back
        return None
