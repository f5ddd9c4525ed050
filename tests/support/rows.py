"""Record rows as the tests build them (every field of the record's schema, null unless given), and
as they read them back from a warehouse file."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from tierlens.records import FILE_ACCESS, JOB, job_identity


def record_row(schema: pa.Schema, **values: Any) -> dict[str, Any]:
    """A row of ``schema`` with ``values`` and every other field null; a name the schema does not
    have is an error here rather than a column silently dropped by from_pylist."""
    unknown = set(values) - set(schema.names)
    if unknown:
        raise KeyError(f"not fields of the record: {sorted(unknown)}")
    return {name: None for name in schema.names} | values


def job_row(
    batch_system: str, cluster: str, job_id: str, start: datetime, wall: float | None, **values: Any
) -> dict[str, Any]:
    """A whole job (step '') with the identity its plugin gives it, submitted as it started; with
    ``wall`` seconds it ended then, COMPLETED with exit 0, without it is still RUNNING. ``values``
    set the rest (or override these)."""
    ended = wall is not None
    derived = dict(
        batch_system=batch_system,
        cluster=cluster,
        job_id=job_id,
        step_id="",
        job_identity=job_identity(batch_system, cluster, job_id),
        submit_time=start,
        start_time=start,
        end_time=start + timedelta(seconds=wall) if ended else None,
        wall_seconds=float(wall) if ended else None,
        state="COMPLETED" if ended else "RUNNING",
        exit_code=0 if ended else None,
    )
    return record_row(JOB, **(derived | values))


def read_access(read: int, **values: Any) -> dict[str, Any]:
    """A file_access row of ``read`` bytes read by plain reads at close, nothing written or read by
    vector reads, the close seen; ``values`` set the rest (or override these)."""
    plain = dict(
        read_bytes_at_close=read,
        write_bytes_at_close=0,
        read_bytes=read,
        readv_bytes=0,
        write_bytes=0,
        readv_ops=0,
        write_ops=0,
        close_seen=True,
    )
    return record_row(FILE_ACCESS, **(plain | values))


def wh_rows(wh: Path, sql: str) -> list[tuple]:
    """The rows ``sql`` selects from the warehouse file ``wh``, opened read-only for that query."""
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def count_rows(wh: Path, table: str) -> int:
    """How many rows ``table`` of the warehouse file ``wh`` holds."""
    return wh_rows(wh, f"SELECT count(*) FROM {table}")[0][0]
