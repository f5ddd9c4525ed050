"""The incremental window of a dbt Python model, the same as dbt/macros/incremental.sql gives the
SQL models (and the strategy replace_days deletes): the days a run rebuilds.

A model passes its config values and its session; the window is [first, stop) of
the rows' rebuild day (``day_expr``, SQL over the model's own columns), None for unbounded:
a back-fill's days (config backfill_start / backfill_end, the run parameters), else the newest day the
model holds (never later than today) minus config lookback_days, else every day.

Also the one place the Python models read their config: dbt hands a Python model only the config
keys its own source names in literal ``dbt.config.get("...")`` calls (it parses them), so each model
reads two keys, each a mapping its YAML fills from the vars and run parameters: ``incremental_window`` for
``model_window`` and its parameters for ``params_from_config``, whose defaults are the parameter
dataclass's own (a var left unset reaches the model as none).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

P = TypeVar("P")

#: The keys of a Python model's config ``incremental_window`` (its YAML: the lookback from the vars, the back-fill range from the run parameters).
WINDOW_KEYS = ("lookback_days", "backfill_start", "backfill_end")


def utc_instant(day: dt.date) -> str:
    """DuckDB SQL for the day's UTC midnight, a constant the engine prunes row groups with."""
    return f"cast('{day.isoformat()} 00:00:00+00' as timestamptz)"


def _given(value: Any) -> bool:
    return value not in (None, "", "None")


def params_from_config(
    cls: type[P], values: Mapping[str, Any] | None, what: str, casts: Mapping[str, Callable[[Any], Any]] | None = None
) -> P:
    """An instance of the parameter dataclass ``cls`` from a model's config mapping ``what`` (keys:
    the field names). A value dbt gives as none (a var left unset renders as None, '' or 'None')
    takes the field's default; any other is cast to the default's type, or by ``casts[field]``."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values or {}) - set(fields))
    if unknown:
        raise ValueError(f"config {what}: unknown key(s) {unknown}; {cls.__name__} has {sorted(fields)}")
    given: dict[str, Any] = {}
    for name, value in (values or {}).items():
        if not _given(value):
            continue
        cast = (casts or {}).get(name) or type(fields[name].default)
        try:
            given[name] = cast(value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"config {what}.{name}: {value!r} is not a {cast.__name__}: {e}") from e
    return cls(**given)


def model_window(
    dbt: Any, session: Any, window: Mapping[str, Any] | None, day_expr: str
) -> tuple[dt.date | None, dt.date | None]:
    """``rebuild_window`` of the model being built, from its config ``incremental_window``."""
    missing = [key for key in WINDOW_KEYS if key not in (window or {})]
    if missing:
        raise ValueError(f"model {dbt.this.identifier}: config incremental_window lacks {missing} (its YAML)")
    assert window is not None
    return rebuild_window(
        window["backfill_start"],
        window["backfill_end"],
        window["lookback_days"],
        dbt.is_incremental,
        f'"{dbt.this.schema}"."{dbt.this.identifier}"',
        session,
        day_expr,
    )


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
