"""Landing: where an ingest puts its batches when the warehouse is busy, so it never waits.

DuckDB has one writer. While a transform holds the warehouse (minutes at a large site), the
hourly ingest would queue behind it; instead it writes the interval's batches to
``<warehouse folder>/landing/`` (Arrow IPC files, written aside and renamed) and finishes. The
next process that holds the warehouse (the transform DAG's first task, or the next ingest) loads
every landed file in the order it landed, then deletes it. Loading is idempotent (a batch's id
hashes its content), so a crash between the load's commit and the delete loads nothing twice.

Each file carries a format version, the batch's kind, source and parse rejects in its schema
metadata, and the per-row locations as a column, so a landed batch is loaded exactly as the
batch it was.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc

from tierlens.records import Batch, RecordKind, Reject
from tierlens.warehouse.lock import WarehouseBusy, warehouse_lock

LANDING_DIR = "landing"
#: Version of a landed file's layout; a file of another version is left where it is, and named.
FORMAT_VERSION = "1"
_LOCATION = "__tierlens_location"


def landing_dir(warehouse: str | Path) -> Path:
    return Path(warehouse).parent / LANDING_DIR


def is_lock_error(e: BaseException) -> bool:
    """Another writer holds the warehouse: tierlens' writer lock (warehouse/lock.py), or DuckDB's own."""
    return isinstance(e, WarehouseBusy) or (isinstance(e, duckdb.IOException) and "lock" in str(e).lower())


def land(batches: Iterable[Batch], warehouse: str | Path) -> int:
    """Write ``batches`` to the landing folder of ``warehouse``; returns the number of files."""
    folder = landing_dir(warehouse)
    folder.mkdir(exist_ok=True)
    n = 0
    # nanoseconds then a counter: files load in the order they landed
    stamp = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    for b in batches:
        table = b.table
        if b.locations is not None:
            table = table.append_column(_LOCATION, pa.array(b.locations, pa.string()))
        meta = {
            "tierlens_landing_format": FORMAT_VERSION,
            "kind": b.kind.value,
            "source": b.source,
            "row_offset": str(b.row_offset),
            "rejects": json.dumps([{**asdict(r), "kind": r.kind.value} for r in b.rejects]),
        }
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in meta.items()}}
        )
        path = folder / f"{stamp}-{n:06d}.arrow"
        tmp = folder / f".{path.name}.tmp"
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
        n += 1
    return n


def landed_files(warehouse: str | Path) -> list[Path]:
    folder = landing_dir(warehouse)
    return sorted(folder.glob("*.arrow")) if folder.is_dir() else []


def _read(path: Path) -> Batch:
    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    if meta.get("tierlens_landing_format") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: landing format {meta.get('tierlens_landing_format')!r}, this tierlens reads {FORMAT_VERSION}"
        )
    kind = RecordKind(meta["kind"])
    locations = None
    if _LOCATION in table.column_names:
        locations = table.column(_LOCATION).to_pylist()
        table = table.drop_columns([_LOCATION])
    rejects = [Reject(**{**r, "kind": RecordKind(r["kind"])}) for r in json.loads(meta.get("rejects", "[]"))]
    table = table.replace_schema_metadata(None)
    return Batch(
        kind, table, meta["source"], locations=locations, rejects=rejects, row_offset=int(meta.get("row_offset", "0"))
    )


def drain(warehouse: str | Path, wait: float | None = None) -> tuple[int, int]:
    """Load every landed batch into ``warehouse`` (the caller must not hold it open), oldest first,
    deleting each file once its load has committed; returns (files, rows loaded). Holds the writer
    lock, waiting up to ``wait`` seconds for it (warehouse/lock.py)."""
    from tierlens.warehouse.core import Warehouse

    files = landed_files(warehouse)
    if not files:
        return 0, 0
    rows = 0
    with warehouse_lock(warehouse, "load", wait), Warehouse(warehouse) as wh:
        files = landed_files(warehouse)  # another drain may have loaded some while this one waited
        for path in files:
            result = wh.load(_read(path))
            rows += result.rows_loaded
            path.unlink()
    return len(files), rows
