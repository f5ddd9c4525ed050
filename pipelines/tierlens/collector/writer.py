"""Arrow/Parquet batches of file_access rows, written atomically.

A batch file appears under its final name only when complete (written to ``.NAME.tmp`` in the
same folder, fsynced, then renamed), so a loader watching the folder never sees half a file.
Quarantined packets go to ``quarantine-*.jsonl`` beside the batches, one JSON object per packet
with the reason, the sender and the bytes in hex.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..records import FILE_ACCESS
from .rows import COLUMNS

assert tuple(FILE_ACCESS.names) == COLUMNS, "decoder.COLUMNS must follow records.FILE_ACCESS"

_TIME_COLUMNS = {"start_time", "end_time"}


def rows_to_table(rows: list[list]) -> pa.Table:
    """Rows (lists in FILE_ACCESS order; trailing fields may be left out: null) -> an Arrow table
    in the FILE_ACCESS schema."""
    if not rows:
        return FILE_ACCESS.empty_table()
    cols = list(zip(*rows))
    cols += [(None,) * len(rows)] * (len(FILE_ACCESS) - len(cols))
    arrays = []
    for fld, col in zip(FILE_ACCESS, cols):
        if fld.name in _TIME_COLUMNS:
            us = (np.asarray(col, dtype=np.float64) * 1e6).round().astype(np.int64)
            arrays.append(pa.array(us, type=pa.int64()).cast(fld.type))
        else:
            arrays.append(pa.array(col, type=fld.type))
    return pa.Table.from_arrays(arrays, schema=FILE_ACCESS)


#: Columns with few distinct values, dictionary-encoded in Parquet; ids and file names are not
#: (a dictionary of near-unique values only costs time).
_DICTIONARY_COLUMNS = [
    "server_host",
    "server_role",
    "client_host",
    "app_name",
    "job_identity",
    "end_reason",
    "server_addr",
    "cache_remotes",
]


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``.NAME.tmp``, fsync, rename: a reader sees the whole file or none of it. O_NOFOLLOW:
    a collector running as root never writes through a symlink planted at the temporary name."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as fh:
        pq.write_table(
            table,
            fh,
            compression="zstd",
            compression_level=1,
            use_dictionary=[c for c in _DICTIONARY_COLUMNS if c in table.schema.names],
            # statistics only where queries filter (time, server): they cost a tenth of the write
            write_statistics=[c for c in ("start_time", "end_time", "server_host") if c in table.schema.names],
        )
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_text_atomic(text: str, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class BatchWriter:
    """The rows and quarantined packets of the interval being decoded, until the collector
    commits them (service.Engine.commit writes the batch, its stats and its quarantine, then the
    checkpoint, so that they are durable together).

    Rows arrive through :meth:`add` as an Arrow table in the FILE_ACCESS schema (the new decoder)
    or as one row, a list in FILE_ACCESS order (the older decoder); both keep their order.
    :meth:`due` says when ``max_rows`` are buffered or the oldest buffered row is ``max_seconds``
    old."""

    #: Quarantined packets kept per batch; the rest are only counted.
    QUARANTINE_KEEP = 10_000

    def __init__(self, out_dir: Path, max_rows: int = 200_000, max_seconds: float = 60.0) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.max_rows = max_rows
        self.max_seconds = max_seconds
        self.tables: list[pa.Table | list[list]] = []
        self.pending = 0
        self.first_at: float | None = None
        self.quarantine_buffer: list[str] = []
        self.quarantine_not_kept = 0

    def add(self, rows: list | pa.Table) -> None:
        if not self.pending:
            self.first_at = time.monotonic()
        if isinstance(rows, pa.Table):
            self.tables.append(rows)
            self.pending += rows.num_rows
        else:
            if not self.tables or not isinstance(self.tables[-1], list):
                self.tables.append([])  # a run of list rows, kept in its place among the tables
            self.tables[-1].append(rows)
            self.pending += 1

    def due(self) -> bool:
        return self.pending >= self.max_rows or (
            self.pending > 0 and self.first_at is not None and time.monotonic() - self.first_at >= self.max_seconds
        )

    def take(self) -> pa.Table:
        """Everything buffered as one FILE_ACCESS table; the buffer is emptied."""
        parts = [rows_to_table(p) if isinstance(p, list) else p for p in self.tables]
        self.tables, self.pending, self.first_at = [], 0, None
        if not parts:
            return FILE_ACCESS.empty_table()
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def quarantine(self, reason: str, addr: tuple, data: bytes, now: float) -> None:
        if len(self.quarantine_buffer) >= self.QUARANTINE_KEEP:
            self.quarantine_not_kept += 1
            return
        self.quarantine_buffer.append(
            json.dumps(
                {
                    "time": now,
                    "sender": f"{addr[0]}:{addr[1]}" if addr else None,
                    "reason": reason,
                    "length": len(data),
                    "hex": bytes(data[:4096]).hex(),
                }
            )
            + "\n"
        )

    def flush_quarantine(self, name: str) -> Path | None:
        if not self.quarantine_buffer:
            return None
        path = self.out_dir / name
        write_text_atomic("".join(self.quarantine_buffer), path)
        self.quarantine_buffer = []
        return path
