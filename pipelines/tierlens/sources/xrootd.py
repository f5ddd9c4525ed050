"""The collector's committed batches as a source: what `tierlens ingest xrootd` and the ingest DAG load.

The collector writes ``file_access-g<generation>.parquet`` beside its ``collector_stats-*`` and
quarantine files, each renamed into place whole; only the file_access ones are records to load,
oldest generation first.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..records import Batch, RecordKind


def batch_files(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("file_access-*.parquet"))


def batches(folder: Path, direct: bool = False, unreadable: list[str] | None = None) -> Iterable[Batch]:
    """file_access batches of every committed file in ``folder`` (``direct``, ``unreadable``: see
    parquet_batches)."""
    from ..pipeline import parquet_batches

    return parquet_batches(RecordKind.FILE_ACCESS, batch_files(folder), direct=direct, unreadable=unreadable)
