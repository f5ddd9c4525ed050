"""The HTCondor source for an interval: the jobs of the history files that ended in it.

Imports nothing at its top but dataclasses: the DAG files read the options' defaults as Airflow
parses them (sources/registry.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path


@dataclass(frozen=True)
class CondorOptions:
    """Which history; each field is the setting ``condor_<field>`` of the DAGs."""

    history: tuple[str, ...] = field(
        default=(), metadata={"meaning": "comma-separated HTCondor history files or SPOOL folders"}
    )
    cluster: str = field(default="htcondor", metadata={"meaning": "pool name for ads without TierlensCluster"})


def load_interval(warehouse: Path, start: datetime, end: datetime, options: CondorOptions) -> dict:
    """Jobs that ended in [start, end) from HTCondor history files (incl. rotated history.*)."""
    from pathlib import Path

    from ..sources.condor.source import CondorSource
    from .interval import interval_text, load_interval as load

    paths = [Path(p).expanduser() for p in options.history]
    if not paths:
        raise ValueError("condor source: set TIERLENS_CONDOR_HISTORY (history files or SPOOL folders)")
    return load(
        "condor",
        CondorSource.open(options.cluster, paths).batches(),
        warehouse,
        start,
        end,
        lambda a, b: (
            f"the history files ({', '.join(map(str, paths))}) hold no job that ended in {interval_text(a, b)}"
        ),
    )
