"""The XRootD collector's batches for an interval: the file accesses that ended in it.

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
class XrootdOptions:
    """Where the collector writes; each field is the setting ``xrootd_<field>`` of the DAGs."""

    dir: str = field(
        default="", metadata={"meaning": "folder where `tierlens collect xrootd` writes file_access Parquet batches"}
    )


def load_interval(warehouse: Path, start: datetime, end: datetime, options: XrootdOptions) -> dict:
    """File accesses that ended in [start, end) from the collector's Parquet batches."""
    from pathlib import Path

    from ..sources.xrootd import batches
    from .interval import folder_empty_reason, load_interval as load

    if not options.dir:
        raise ValueError("xrootd source: set TIERLENS_XROOTD_DIR (the collector's output folder)")
    folder = Path(options.dir).expanduser()
    unreadable: list[str] = []
    return load(
        "xrootd",
        batches(folder, unreadable=unreadable),
        warehouse,
        start,
        end,
        folder_empty_reason("the collector (tierlens collect xrootd)", folder, "file_access-*.parquet"),
        unreadable=lambda: unreadable,
    )
