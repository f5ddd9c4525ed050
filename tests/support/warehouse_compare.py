"""Comparing two builds of the warehouse's intermediate and marts tables, row for row.

Floats: DuckDB sums in parallel in an order that depends on how rows are laid out, so a sum of
doubles can differ in its last bits between two builds of the same data; rows that differ are
paired on their other columns and their floats must agree within 1e-9 relative.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb

FLOAT_TOLERANCE = 1e-9


def built_tables(db: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(
            con.execute(
                "select schema_name, table_name from duckdb_tables() "
                "where schema_name in ('intermediate', 'marts') and database_name = current_database()"
            ).fetchall()
        )
    finally:
        con.close()


def _floats(con: duckdb.DuckDBPyConnection, relation: str) -> set[str]:
    return {
        name
        for name, kind in con.execute(f"select column_name, column_type from (describe {relation})").fetchall()
        if kind in ("DOUBLE", "FLOAT") or kind.startswith("DECIMAL")
    }


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]]:
    cur = con.execute(sql)
    return [d[0] for d in cur.description], cur.fetchall()


def close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= FLOAT_TOLERANCE * max(1.0, abs(a), abs(b))


def differing_rows(con: duckdb.DuckDBPyConnection, left: str, right: str) -> int:
    """Rows of either side without an equal partner on the other (exact columns equal, floats close)."""
    floats = _floats(con, left)
    columns, only_left = _rows(con, f"select * from {left} except all select * from {right}")
    _, only_right = _rows(con, f"select * from {right} except all select * from {left}")
    exact = [i for i, c in enumerate(columns) if c not in floats]
    inexact = [i for i in range(len(columns)) if i not in exact]

    def key(r: tuple) -> tuple:
        return tuple((r[i] is None, str(r[i])) for i in exact)

    pending: dict[tuple, list[tuple]] = {}
    for r in only_right:
        pending.setdefault(key(r), []).append(r)
    unpaired = 0
    for a in only_left:
        partners = pending.get(key(a), [])
        match = next((b for b in partners if all(close(a[i], b[i]) for i in inexact)), None)
        if match is None:
            unpaired += 1
        else:
            partners.remove(match)
    return unpaired + sum(len(v) for v in pending.values())


def differences(left: Path, right: Path, skip: tuple[str, ...] = ("int_incremental_window",)) -> dict[str, int]:
    """Differing rows per intermediate table and mart ({} when equal); a table on one side only
    counts as -1."""
    tables, others = built_tables(left), built_tables(right)
    out: dict[str, int] = {f"{s}.{t}": -1 for s, t in set(tables) ^ set(others)}
    con = duckdb.connect(str(left), read_only=True)
    con.execute(f"attach '{right}' as other (read_only)")
    try:
        for schema, table in sorted(set(tables) & set(others)):
            if table in skip:
                continue
            n = differing_rows(con, f'"{schema}"."{table}"', f'other."{schema}"."{table}"')
            if n:
                out[f"{schema}.{table}"] = n
    finally:
        con.close()
    return out
