"""One period for the whole report: the UTC days on which the measured jobs ended.

The marts keep what they were given: hourly cache traffic and client windows of accesses opened
by jobs that started before the first job ended, completeness rows of the day before, weeks that
start on the Monday before. A report that showed them beside a summary of the jobs would cover
two periods at once (one table to the 2nd, another from the 30th). So the report reads the marts
through views limited to the period (``period_connection``): rows whose hour, day or window falls
outside it are left out, a row that spans more (a week, a whole-run row) is kept when it overlaps
it. The loading's own records (data_completeness rows of grain ``source``: rejected records and
intervals that loaded nothing) are kept whatever their day: they are about the loading, and an
hour that loaded nothing outside the jobs' days is exactly what the reader must see. Tables and
figures are checked against the period once more as they are added (``clip_data``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..warehouse import QUERY_ERRORS

#: Row keys holding the instant or day a row is about.
POINT_KEYS = ("hour", "day", "window_start")
#: Row keys naming a week by its first day (the row covers seven days from it).
WEEK_KEYS = ("week_start", "week")
#: A row covering [period_start, period_end), the end exclusive (as the marts document it).
SPAN_KEYS = ("period_start", "period_end")


def _day(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return (value.astimezone(dt.timezone.utc) if value.tzinfo else value).date()
    if isinstance(value, dt.date):
        return value
    return None


@dataclass(frozen=True)
class WeekInPeriod:
    """A week's days within the report's period: a week the period's first or last day cuts
    shows the period's day, not the Monday before or the Sunday after, and says it is partial."""

    first: dt.date
    last: dt.date
    days: int

    @property
    def partial(self) -> bool:
        return self.days < 7


@dataclass(frozen=True)
class ReportPeriod:
    first: dt.date
    #: The last day, inclusive.
    last: dt.date

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def text(self) -> str:
        return f"{self.first.isoformat()} to {self.last.isoformat()} ({self.days} day{'s' if self.days != 1 else ''})"

    def holds(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` is about a time in the period (rows without a time always are)."""
        for key in POINT_KEYS:
            day = _day(row.get(key))
            if day is not None and not self.first <= day <= self.last:
                return False
        for key in WEEK_KEYS:
            day = _day(row.get(key))
            if day is not None and not (day <= self.last and day + dt.timedelta(days=7) > self.first):
                return False
        start, end = (_day(row.get(k)) for k in SPAN_KEYS)
        if start is not None and start > self.last:
            return False
        if end is not None and (end < self.first or (end == self.first and (start is None or start < end))):
            return False
        return True

    def week(self, start: dt.date | dt.datetime) -> WeekInPeriod:
        """The days of the week from ``start`` (seven) that lie in the period."""
        day = _day(start)
        if day is None:
            raise TypeError(f"a week's start must be a date, not {start!r}")
        end = day + dt.timedelta(days=6)
        first, last = max(day, self.first), min(end, self.last)
        return WeekInPeriod(first, last, max(0, (last - first).days + 1))

    def clip(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if self.holds(r)]

    def outside(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows about a time outside the period (what ``clip`` leaves out)."""
        return [r for r in rows if not self.holds(r)]


#: The attached warehouse's name inside the report's connection, when its file's own name cannot be.
SOURCE = "report_source"
#: Catalog names DuckDB keeps for itself, and schema names a catalog of that name would shadow.
_RESERVED = {"memory", "system", "temp", "main", "information_schema", "pg_catalog", "marts", "staging", "raw"}


def source_name(warehouse: Path) -> str:
    """The name to attach ``warehouse`` under: its file's stem, the catalog dbt built its views in
    (a staging view reads ``warehouse.main.raw_...``; attached under another name, it cannot be
    read and the report loses what it holds); SOURCE when the stem is no plain name."""
    stem = Path(warehouse).stem
    return stem if stem.isidentifier() and stem.lower() not in _RESERVED else SOURCE


#: data_completeness rows about the loading itself, kept whatever their day.
LOADING_ROWS = "grain = 'source'"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _day_sql(column: str, data_type: str) -> str:
    if "TIME ZONE" in data_type.upper():
        return f"CAST(timezone('UTC', {_quote(column)}) AS DATE)"
    return f"CAST({_quote(column)} AS DATE)"


def period_filter(columns: dict[str, str], period: ReportPeriod) -> str | None:
    """The WHERE clause limiting a mart with ``columns`` (name: type) to ``period``; None: no time."""
    first, last = f"DATE '{period.first.isoformat()}'", f"DATE '{period.last.isoformat()}'"
    terms = []
    for key in POINT_KEYS:
        if key in columns:
            terms.append(f"{_day_sql(key, columns[key])} BETWEEN {first} AND {last}")
    for key in WEEK_KEYS:
        if key in columns and "day" not in columns:
            day = _day_sql(key, columns[key])
            terms.append(f"({day} <= {last} AND {day} + 7 > {first})")
    if "period_start" in columns:
        start = _day_sql("period_start", columns["period_start"])
        terms.append(f"{start} <= {last}")
        if "period_end" in columns:
            end = _day_sql("period_end", columns["period_end"])
            terms.append(f"({end} > {first} OR ({end} <= {start} AND {start} >= {first}))")
    if not terms:
        return None
    where = " AND ".join(f"coalesce({t}, true)" for t in terms)
    return f"({where}) OR {LOADING_ROWS}" if "grain" in columns else where


def period_connection(warehouse: Path) -> tuple[duckdb.DuckDBPyConnection, ReportPeriod | None]:
    """An in-memory connection whose schemas hold views over ``warehouse`` (attached read-only),
    the marts limited to the report's period; and that period (None without jobs: no limit)."""
    con = duckdb.connect()
    source = source_name(warehouse)
    con.execute(f"ATTACH '{str(warehouse).replace(chr(39), chr(39) * 2)}' AS {_quote(source)} (READ_ONLY)")
    relations = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_catalog = ?", [source]
    ).fetchall()
    columns: dict[tuple[str, str], dict[str, str]] = {}
    for schema, table, column, data_type in con.execute(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ?",
        [source],
    ).fetchall():
        columns.setdefault((schema, table), {})[column] = data_type
    period = None
    if ("marts", "job_efficiency") in columns and "day" in columns[("marts", "job_efficiency")]:
        try:
            first, last = con.execute(
                f'SELECT min("day"), max("day") FROM {_quote(source)}.marts.job_efficiency'
            ).fetchone()
        except QUERY_ERRORS:
            first = last = None
        if first is not None and last is not None:
            period = ReportPeriod(_day(first), _day(last))
    for schema, table in relations:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{_quote(schema)}")
        where = period_filter(columns.get((schema, table), {}), period) if period and schema == "marts" else None
        query = f"SELECT * FROM {_quote(source)}.{_quote(schema)}.{_quote(table)}" + (
            f" WHERE {where}" if where else ""
        )
        try:
            con.execute(f"CREATE VIEW memory.{_quote(schema)}.{_quote(table)} AS {query}")
        except QUERY_ERRORS:
            # a relation that cannot be read (a view over missing files) is left out: its
            # section says it is missing rather than taking the report down
            continue
    return con, period


def clip_data(period: ReportPeriod | None, data: Any) -> Any:
    """``data`` (a figure's argument or a table's rows) less its rows outside ``period``."""
    if period is None or not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        return data
    return period.clip(data)
