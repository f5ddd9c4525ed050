"""Record rows as the tests build them (every field of the record's schema, null unless given), and
as they read them back from a warehouse file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa


def record_row(schema: pa.Schema, **values: Any) -> dict[str, Any]:
    """A row of ``schema`` with ``values`` and every other field null; a name the schema does not
    have is an error here rather than a column silently dropped by from_pylist."""
    unknown = set(values) - set(schema.names)
    if unknown:
        raise KeyError(f"not fields of the record: {sorted(unknown)}")
    return {name: None for name in schema.names} | values


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
