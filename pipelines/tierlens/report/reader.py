"""Read-only access to the marts for the report's sections."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import duckdb

from ..warehouse import QUERY_ERRORS


class MartReader:
    """The relations of an open (read-only) warehouse, and rows of its marts as plain dicts."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        found = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_catalog = current_database()"
        ).fetchall()
        self._relations = {(s.lower(), n.lower()) for s, n in found}

    def has(self, schema: str, name: str) -> bool:
        return (schema.lower(), name.lower()) in self._relations

    def columns(self, schema: str, name: str) -> set[str]:
        """The column names of ``schema.name`` (lower case); empty when it is not there."""
        found = self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
            "AND lower(table_schema) = ? AND lower(table_name) = ?",
            [schema.lower(), name.lower()],
        ).fetchall()
        return {c.lower() for (c,) in found}

    def rows(self, sql: str, params: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, list(params) if params is not None else None)
        names = [d[0] for d in cur.description]
        return [
            {k: (float(v) if isinstance(v, Decimal) else v) for k, v in zip(names, values)} for values in cur.fetchall()
        ]

    def scalar(self, sql: str) -> Any:
        return self.con.execute(sql).fetchone()[0]

    def mart_missing(self, name: str, empty_hint: str = "") -> str | None:
        """Why marts.<name> cannot give data, or None when it has rows."""
        if not self.has("marts", name):
            return f"marts.{name} is not in the warehouse (has `dbt build` run?)."
        if self.scalar(f"SELECT count(*) FROM marts.{name}") == 0:
            return f"marts.{name} is empty." + (f" {empty_hint}" if empty_hint else "")
        return None

    def mart_has_rows(self, name: str) -> bool:
        """True when marts.<name> has rows, or cannot be counted (its section then says why)."""
        if not self.has("marts", name):
            return False
        try:
            return bool(self.scalar(f"SELECT count(*) FROM marts.{name}"))
        except QUERY_ERRORS:
            return True
