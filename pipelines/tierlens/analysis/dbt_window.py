"""The incremental window of a dbt Python model, the same as dbt/macros/incremental.sql gives the
SQL models (and the strategy replace_days deletes): the days a run rebuilds.

A model passes its config values and its session; the window is [first, stop) of
the rows' rebuild day (``day_expr``, SQL over the model's own columns), None for unbounded:
a back-fill's days (config backfill_start / backfill_end, from the vars), else the newest day the
model holds (never later than today) minus config lookback_days, else every day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def setting(value: Any, default: T, cast: Callable[[Any], T]) -> T:
    """A config value as the model's type, or the default when dbt gives none (a var left unset
    renders as an empty string)."""
    return default if value in (None, "") else cast(value)


def utc_instant(day: dt.date) -> str:
    """DuckDB SQL for the day's UTC midnight, a constant the engine prunes row groups with."""
    return f"cast('{day.isoformat()} 00:00:00+00' as timestamptz)"


def _given(value: Any) -> bool:
    return value not in (None, "", "None")


def _day(value: Any) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def rebuild_window(
    backfill_start: Any,
    backfill_end: Any,
    lookback_days: Any,
    is_incremental: bool,
    this: str,
    session: Any,
    day_expr: str,
) -> tuple[dt.date | None, dt.date | None]:
    """(first day, day after the last) this run rebuilds; (None, None) for all of history.

    The config values are passed in, not looked up here: dbt hands a Python model only the
    config keys its own source reads with literal dbt.config.get calls."""
    start, end = backfill_start, backfill_end
    if _given(start):
        return _day(start), _day(end) if _given(end) else None
    if not is_incremental:
        return None, None
    # least() skips NULL: an empty model must give NULL (rebuild all), not today
    newest = session.sql(
        f"select case when max({day_expr}) is not null then least(max({day_expr}), current_date) end from {this}"
    ).fetchone()[0]
    if newest is None:
        return None, None
    return _day(newest) - dt.timedelta(days=int(lookback_days)), None
