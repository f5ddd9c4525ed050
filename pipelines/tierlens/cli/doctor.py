"""`tierlens doctor`: this host's tierlens parts, each finding with its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from .common import WarehouseOpt, console

app = typer.Typer()


@app.command()
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print the findings as JSON, for monitoring.")] = False,
    srun: Annotated[
        bool, typer.Option("--srun", help="Submit one tiny test job to see the plugin's variables.")
    ] = False,
    srun_args: Annotated[
        Optional[str], typer.Option(help="Extra srun options for the test job, e.g. '-p debug'.")
    ] = None,
    slurm_conf: Annotated[
        Optional[Path], typer.Option(help="slurm.conf [default: $SLURM_CONF, else /etc/slurm].")
    ] = None,
    collector_stats: Annotated[
        Optional[Path],
        typer.Option(help="The collector's collector-stats.json [default: $TIERLENS_HOME/spool/xrootd/]."),
    ] = None,
    warehouse: WarehouseOpt = None,
    airflow: Annotated[Optional[str], typer.Option(help="The airflow executable [default: on PATH].")] = None,
) -> None:
    """Check this host's tierlens parts (Slurm plugin, HTCondor tags, sacct, collector, warehouse, dbt,
    Airflow), each finding with its fix; exit status 1 when any check fails."""
    import shlex

    from ..doctor import Options, Status, failed, run_checks, to_json

    opts = Options(
        slurm_conf=slurm_conf,
        test_srun=srun,
        srun_args=shlex.split(srun_args or ""),
        collector_stats=collector_stats,
        warehouse=warehouse,
        airflow=airflow,
    )
    findings = run_checks(opts)
    if json_out:
        print(to_json(findings))
    else:
        colour = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "red", Status.INFO: "blue"}
        # Long paths wrap (fold) rather than end in an ellipsis: a cut path cannot be copied.
        t = Table(title="tierlens doctor", show_lines=True)
        t.add_column("status", no_wrap=True)
        for col in ("area", "check", "finding", "fix"):
            t.add_column(col, overflow="fold")
        for f in findings:
            t.add_row(
                Text(f.status.value, style=colour[f.status]), Text(f.area), Text(f.check), Text(f.detail), Text(f.fix)
            )
        console.print(t)
        console.print("every finding in full: tierlens doctor --json", style="dim", highlight=False)
    if failed(findings):
        raise typer.Exit(1)
