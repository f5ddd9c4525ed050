"""`tierlens demo`: a month of a synthetic Tier-2, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import Paths, paths
from .common import console, fail, progress
from .transform import run_transform

app = typer.Typer()


@app.command()
def demo(
    days: Annotated[float, typer.Option(help="Days of site activity to simulate.")] = 30.0,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same data.")] = 42,
    nodes_per_type: Annotated[int, typer.Option(help="Worker nodes per storage type (HDD and RAID0 get twice).")] = 2,
    home: Annotated[
        Optional[Path],
        typer.Option(help="Folder for the demo's warehouse, lake and report [default: $TIERLENS_HOME/demo]."),
    ] = None,
    change: Annotated[
        Optional[list[str]],
        typer.Option(
            help="A site change mid-month with a known effect, e.g. 'day=14,storage_type=raid1,read_speedup=1.3' "
            "(repeatable; see marts.change_effects) [default: an NFS client tuning halfway through]."
        ),
    ] = None,
    site_change: Annotated[bool, typer.Option(help="Record the default site change when no --change is given.")] = True,
    leave_out: Annotated[
        str,
        typer.Option(
            help="Storage type the site does not run, predicted from a synthetic probe ('none' to run them all)."
        ),
    ] = "ssd",
) -> None:
    """Simulate a month of a synthetic Tier-2, ingest it, run dbt, write the report, print a summary."""
    from ..demo import run_demo
    from ..sources.synthetic import SyntheticChange

    try:
        changes = tuple(SyntheticChange.parse(c) for c in change) if change else (None if site_change else ())
    except ValueError as e:
        fail(str(e), 2, e)
    from ..sources.synthetic.site import SCRATCH

    left_out = None if leave_out.lower() == "none" else leave_out.lower()
    if left_out is not None and left_out not in SCRATCH:
        fail(f"--leave-out {leave_out!r}: the demo site has {', '.join(sorted(SCRATCH))} (or 'none')", 2)
    p = Paths(home or paths().home / "demo")
    if p.warehouse.exists():
        p.warehouse.unlink()  # the demo's own warehouse: start clean so every run is the same
    run_demo(
        p,
        days=days,
        seed=seed,
        nodes_per_type=nodes_per_type,
        console=console,
        progress=progress,
        transform=run_transform,
        changes=changes,
        left_out=left_out,
    )
