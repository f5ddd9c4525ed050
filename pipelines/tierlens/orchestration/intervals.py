"""One folder per data interval for what a scheduled DAG writes (the weekly report's)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

# interval_batches: where callers from before ingest/ had its own room still import it
from ..ingest.intervals import interval_batches, utc  # noqa: F401


def interval_folder(base: Path, start: datetime, end: datetime) -> Path:
    """reports/<start>_<end> (UTC dates or hours): one folder per interval, replaced on rerun."""
    fmt = "%Y-%m-%d" if (end - start) >= timedelta(days=1) else "%Y-%m-%dT%H"
    return Path(base) / f"{utc(start).strftime(fmt)}_{utc(end).strftime(fmt)}"
