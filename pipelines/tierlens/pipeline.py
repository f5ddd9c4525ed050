"""The stages wired together: ingest batches, transform with dbt, report.

The CLI and the Airflow DAGs call these functions; each stage talks to the next only
through the warehouse's tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .records import Batch, RecordKind
from .warehouse import LoadResult, Warehouse
from .warehouse.core import ParquetFileBatch

#: Rows per batch read from a file: bounds memory whatever the file's size.
FILE_BATCH_ROWS = 500_000
#: The most tagged-but-unaccounted jobs asked for in one run (500 per sacct call); the rest wait.
MAX_MISSING = 2000


@dataclass
class IngestSummary:
    batches: int = 0
    rows_in: Counter = field(default_factory=Counter)
    rows_loaded: Counter = field(default_factory=Counter)
    rows_rejected: Counter = field(default_factory=Counter)
    already_loaded: int = 0

    def add(self, result: LoadResult) -> None:
        self.batches += 1
        kind = str(getattr(result.kind, "value", result.kind))
        self.rows_in[kind] += result.rows_in
        self.rows_loaded[kind] += result.rows_loaded
        self.rows_rejected[kind] += result.rows_rejected
        self.already_loaded += int(result.already_loaded)

    @property
    def total_rejected(self) -> int:
        return sum(self.rows_rejected.values())


def ingest(
    batches: Iterable[Batch], warehouse: Path, on_batch: Callable[[LoadResult], None] | None = None
) -> IngestSummary:
    """Load batches one transaction each; a failure leaves earlier batches loaded, none half-loaded.

    The source produces its next batch on a thread while DuckDB loads the current one (sources
    never touch the warehouse connection), so parsing or simulating overlaps loading.
    """
    summary = IngestSummary()

    def record(result: LoadResult) -> None:
        summary.add(result)
        if on_batch:
            on_batch(result)

    with Warehouse(warehouse) as wh:
        wh.load_many(batches, prefetch=True, on_result=record)
    return summary


def parquet_batches(
    kind: RecordKind, files: Iterable[Path], rows: int = FILE_BATCH_ROWS, direct: bool = False
) -> Iterable[Batch | ParquetFileBatch]:
    """Read Parquet files of one record kind in bounded batches.

    A rejected row is located as 'parquet:FILE:row N', N counted from the file's first row.
    With ``direct``, a file of at most ``rows`` rows in exactly the record's schema is handed
    over whole for DuckDB's Parquet reader to load (no Arrow decoding in Python); consumers that
    look into batches' tables (interval filters) leave it off.
    """
    for path in files:
        whole = ParquetFileBatch.of(kind, path, rows) if direct else None
        if whole is not None:
            yield whole
            continue
        pf = pq.ParquetFile(path)
        first = 0
        for rb in pf.iter_batches(batch_size=rows):
            table = pa.Table.from_batches([rb])
            yield Batch(kind, table, f"parquet:{path}", row_offset=first)
            first += table.num_rows


def tagged_not_accounted(
    warehouse: Path,
    batch_system: str,
    clusters: str | None,
    since: float,
    until: float,
    warn: Callable[[str], object] = print,
    tags: pa.Table | None = None,
) -> list[str]:
    """Jobs the plugin tagged in [since, until) (epoch seconds) that have no job row yet, lowest ids
    first, at most ``MAX_MISSING``: the ones the batch system's time windows have not returned.
    The tags are the warehouse's, or ``tags`` (job_tag rows, e.g. from the plugin's spool).
    Nothing (and a warning) while a transform holds the warehouse or its schema is behind."""
    import duckdb

    from .warehouse.migrations import SchemaError

    if not Path(warehouse).is_file() or since >= until:
        return []
    try:
        with Warehouse(warehouse, read_only=True) as w:
            ids = w.tagged_without_accounting(
                batch_system,
                datetime.fromtimestamp(since, tz=timezone.utc),
                datetime.fromtimestamp(until, tz=timezone.utc),
                [c.strip() for c in clusters.split(",") if c.strip()] if clusters else None,
                tags,
            )
    except (duckdb.Error, SchemaError) as e:
        warn(f"tagged jobs not checked against accounting this run ({warehouse}): {e}")
        return []
    if len(ids) > MAX_MISSING:
        warn(f"{len(ids)} tagged jobs have no accounting record: asking for {MAX_MISSING} this run")
    return ids[:MAX_MISSING]
