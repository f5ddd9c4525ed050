"""Arrow/Parquet batches of file_access rows, written atomically and rotated by size or time.

A batch file appears under its final name only when complete (written to ``.NAME.tmp`` in the
same folder, fsynced, then renamed), so a loader watching the folder never sees half a file.
Quarantined packets go to ``quarantine-<start>.jsonl`` beside the batches, one JSON object per
packet with the reason, the sender and the bytes in hex.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
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
_DICTIONARY_COLUMNS = ["server_host", "server_role", "client_host", "app_name", "job_identity", "end_reason",
                       "server_addr", "cache_remotes"]


def write_atomic(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    dictionary = [c for c in _DICTIONARY_COLUMNS if c in table.schema.names]
    # statistics only where queries filter (time, server): they cost a tenth of the write
    pq.write_table(table, tmp, compression="zstd", compression_level=1, use_dictionary=dictionary,
                   write_statistics=[c for c in ("start_time", "end_time", "server_host") if c in table.schema.names])
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class BatchWriter:
    """Buffers rows; writes a Parquet batch when ``max_rows`` are buffered or the oldest buffered
    row is ``max_seconds`` old, and on :meth:`flush`. ``on_batch(path, table)`` is called after
    each file is in place (e.g. to load it into the warehouse)."""

    def __init__(self, out_dir: Path, max_rows: int = 200_000, max_seconds: float = 60.0,
                 on_batch: Callable[[Path, pa.Table], None] | None = None,
                 prefix: str = "file_access") -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.max_rows = max_rows
        self.max_seconds = max_seconds
        self.on_batch = on_batch
        self.rows: list[list] = []
        self.tables: list[pa.Table] = []
        self._n_table_rows = 0
        self.first_at: float | None = None
        self.files: list[Path] = []
        self.rows_written = 0
        self._stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        self._prefix = prefix
        self._quarantine_fh = None

    def add(self, row: list | pa.Table) -> None:
        """One row (a list in FILE_ACCESS order) or a FILE_ACCESS table (the decoder's ``emit``)."""
        if not self.rows and not self.tables:
            self.first_at = time.monotonic()
        if isinstance(row, pa.Table):
            self.tables.append(row)
            self._n_table_rows += row.num_rows
        else:
            self.rows.append(row)
        if len(self.rows) + self._n_table_rows >= self.max_rows:
            self.flush()

    def maybe_rotate(self) -> None:
        if (self.rows or self.tables) and self.first_at is not None and time.monotonic() - self.first_at >= self.max_seconds:
            self.flush()

    def flush(self) -> Path | None:
        if not self.rows and not self.tables:
            return None
        parts = self.tables + ([rows_to_table(self.rows)] if self.rows else [])
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        self.rows, self.tables, self._n_table_rows = [], [], 0
        self.first_at = None
        path = self.out_dir / f"{self._prefix}-{self._stamp}-{os.getpid()}-{len(self.files):06d}.parquet"
        write_atomic(table, path)
        self.files.append(path)
        self.rows_written += table.num_rows
        if self.on_batch is not None:
            self.on_batch(path, table)
        return path

    def quarantine(self, reason: str, addr: tuple, data: bytes, now: float) -> None:
        if self._quarantine_fh is None:
            self._quarantine_fh = open(self.out_dir / f"quarantine-{self._stamp}-{os.getpid()}.jsonl", "a")
        rec = {"time": now, "sender": f"{addr[0]}:{addr[1]}" if addr else None, "reason": reason,
               "length": len(data), "hex": bytes(data[:4096]).hex()}
        self._quarantine_fh.write(json.dumps(rec) + "\n")

    def close(self) -> None:
        self.flush()
        if self._quarantine_fh is not None:
            self._quarantine_fh.close()
            self._quarantine_fh = None
