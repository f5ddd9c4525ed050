"""The stages wired together: ingest batches, transform with dbt, report.

The CLI and the Airflow DAGs call these functions; each stage talks to the next only
through the warehouse's tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .records import SPECS, Batch, RecordKind, Reject
from .warehouse import LoadResult, Warehouse
from .warehouse.core import ParquetFileBatch

#: Rows per batch read from a file: bounds memory whatever the file's size.
FILE_BATCH_ROWS = 500_000


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

    def merge(self, other: IngestSummary) -> None:
        """Add a second load's counts (the tagged jobs asked for by id after a window's)."""
        self.batches += other.batches
        self.rows_in.update(other.rows_in)
        self.rows_loaded.update(other.rows_loaded)
        self.rows_rejected.update(other.rows_rejected)
        self.already_loaded += other.already_loaded

    @property
    def total_rejected(self) -> int:
        return sum(self.rows_rejected.values())


def ingest(
    batches: Iterable[Batch],
    warehouse: Path,
    on_batch: Callable[[LoadResult], None] | None = None,
    wait: float | None = None,
) -> IngestSummary:
    """Load batches one transaction each; a failure leaves earlier batches loaded, none half-loaded.

    Holds the warehouse's writer lock (warehouse/lock.py), waiting up to ``wait`` seconds for a
    transform or another load to finish (None: the default wait); WarehouseLocked names the holder.

    The source produces its next batch on a thread while DuckDB loads the current one (sources
    never touch the warehouse connection), so parsing or simulating overlaps loading.
    """
    summary = IngestSummary()

    def record(result: LoadResult) -> None:
        summary.add(result)
        if on_batch:
            on_batch(result)

    from .warehouse.lock import warehouse_lock

    with warehouse_lock(warehouse, "load", wait), Warehouse(warehouse) as wh:
        wh.load_many(batches, prefetch=True, on_result=record)
    return summary


def failure(
    summary: IngestSummary, unreadable: Sequence[str] = (), what: str = "ingest", unit: str = "file(s)", then: str = ""
) -> str | None:
    """Why an ingest failed, in one line, or None when it did not: a window or file that could not
    be read (``unreadable``: one description each), or records came in and every one was
    rejected. Nothing new (no record at all) is not a failure. The CLI prints this line and exits
    non-zero; the DAG's tasks raise it, so both say the same. ``unit`` names what ``unreadable``
    counts; ``then`` ends the line (what happens next)."""
    loaded = sum(summary.rows_loaded.values())
    rejected = summary.total_rejected
    counts = f"{loaded:,} record(s) loaded, {rejected:,} rejected"
    if unreadable:
        more = f" (and {len(unreadable) - 1} more: see `tierlens rejects`)" if len(unreadable) > 1 else ""
        return f"{what} failed: {len(unreadable)} {unit} could not be read: {unreadable[0]}{more}; {counts}{then}"
    if rejected and not loaded:
        return (
            f"{what} failed: all {rejected:,} record(s) were rejected, none loaded; `tierlens rejects` "
            "shows each one's location, field and what to change"
        )
    return None


def _columns_problem(kind: RecordKind, schema: pa.Schema) -> tuple[str, str] | None:
    """(field, reason) when a file's columns are not the record's: every missing and every extra
    field named, and where the record's fields are listed. None when all are there."""
    want = SPECS[kind].schema.names
    missing = [n for n in want if n not in schema.names]
    if not missing:
        return None
    extra = [n for n in schema.names if n not in want]
    reason = f"the file is not a {kind.value} record: missing field(s) {', '.join(missing)}"
    if extra:
        reason += f"; field(s) not in the record: {', '.join(extra)}"
    reason += f". Write the fields `tierlens schema {kind.value}` lists, with their names and types"
    return ", ".join(missing), reason


#: rows cast at a time when looking for the values of a column that do not cast
_CAST_PROBE = 1024


def _bad_rows(column: pa.ChunkedArray, to: pa.DataType) -> list[int]:
    """Indexes of the values of ``column`` that do not cast to ``to`` (chunks first, then rows)."""
    errors = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
    column = column.combine_chunks()
    bad: list[int] = []
    for a in range(0, len(column), _CAST_PROBE):
        piece = column.slice(a, _CAST_PROBE)
        try:
            piece.cast(to)
            continue
        except errors:
            pass
        for i in range(len(piece)):
            try:
                piece.slice(i, 1).cast(to)
            except errors:
                bad.append(a + i)
    return bad


def _typed_batch(kind: RecordKind, table: pa.Table, source: str, first: int) -> Batch:
    """A batch of a file's rows in the record's schema; a value that does not cast to its field's
    type makes its row a reject (field, row, the value and the type wanted), the others load."""
    schema = SPECS[kind].schema
    rejects: list[Reject] = []
    bad: dict[int, tuple[str, str]] = {}
    for f in schema:
        column = table[f.name]
        if column.type == f.type:
            continue
        try:
            column.cast(f.type)
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
        for i in _bad_rows(column, f.type):
            value = column[i].as_py()
            bad.setdefault(
                i,
                (
                    f.name,
                    f"{value!r} is not a {f.type} (the file's column is {column.type}): write {f.name} as "
                    f"`tierlens schema {kind.value}` gives its type",
                ),
            )
    if not bad:
        return Batch(kind, table, source, row_offset=first)
    for i, (name, reason) in sorted(bad.items()):
        row = {k: v for k, v in table.slice(i, 1).to_pylist()[0].items()}
        rejects.append(Reject(kind, source, f"{source}:row {first + i}", name, reason, str(row)[:2000]))
    keep = [i for i in range(table.num_rows) if i not in bad]
    return Batch(
        kind,
        table.take(pa.array(keep, pa.int64())),
        source,
        locations=[f"{source}:row {first + i}" for i in keep],
        rejects=rejects,
    )


def parquet_batches(
    kind: RecordKind,
    files: Iterable[Path],
    rows: int = FILE_BATCH_ROWS,
    direct: bool = False,
    unreadable: list[str] | None = None,
) -> Iterable[Batch | ParquetFileBatch]:
    """Read Parquet files of one record kind in bounded batches.

    A rejected row is located as 'parquet:FILE:row N', N counted from the file's first row.
    With ``direct``, a file of at most ``rows`` rows in exactly the record's schema is handed
    over whole for DuckDB's Parquet reader to load (no Arrow decoding in Python); consumers that
    look into batches' tables (interval filters) leave it off.

    A file that is not Parquet, or whose columns are not the record's, is one reject at
    'parquet:FILE:offset 0' (its rows are not read) and is appended, described, to ``unreadable``.
    """
    for path in files:
        source = f"parquet:{path}"
        try:
            schema = pq.read_schema(path)
        except (OSError, pa.ArrowException) as e:
            problem: tuple[str, str] | None = ("file", f"not a Parquet file ({e}): write the records as Parquet")
        else:
            problem = _columns_problem(kind, schema)
        if problem is not None:
            if unreadable is not None:
                unreadable.append(f"{path}: {problem[1]}")
            empty = SPECS[kind].schema.empty_table()
            yield Batch(kind, empty, source, rejects=[Reject(kind, source, f"{source}:offset 0", *problem, "")])
            continue
        whole = ParquetFileBatch.of(kind, path, rows) if direct else None
        if whole is not None:
            yield whole
            continue
        pf = pq.ParquetFile(path)
        first = 0
        for rb in pf.iter_batches(batch_size=rows):
            table = pa.Table.from_batches([rb])
            yield _typed_batch(kind, table, source, first)
            first += table.num_rows
