"""Number formatting for the HTML report and raw value rendering for its CSV files.

The HTML shows rounded, human-readable numbers; the CSV files beside it carry the same values at
full precision (``repr`` of the float), so a reader can recompute anything the page shows.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..units import unsigned_zero

MISSING = "—"
NOT_MEASURED = "not measured"


def _num(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _measure(template: str, scale: Callable[[float], Any] = lambda n: n) -> Callable[[Any], str]:
    """A formatter of one measured quantity: ``template`` applied to ``scale(value)``, MISSING for
    NULL/NaN, a value that rounds to zero without a sign."""

    def formatter(value: Any) -> str:
        num = _num(value)
        return MISSING if num is None else unsigned_zero(template.format(scale(num)))

    return formatter


#: Efficiency or ratio as a percentage with one decimal: 0.8123 -> '81.2 %'.
pct = _measure("{:.1f} %", lambda n: n * 100)
integer = _measure("{:,d}", round)
hours = _measure("{:,.1f}")
#: A plain ratio such as CPU/wall, two decimals as in the SLAC tables: '0.81'.
ratio = _measure("{:.2f}")
gb = _measure("{:,.1f}")
#: A difference of two shares, in percentage points with its sign: 0.029 -> '+2.9 pt' (not '2.9 %',
#: which would read as a relative change).
points = _measure("{:+.1f} pt", lambda n: n * 100)
money = _measure("{:,.2f}")
#: A size of a difference of shares (an RMS error), in percentage points without a sign: '1.7 pt'.
points_size = _measure("{:.1f} pt", lambda n: n * 100)


def hides_its_sign(value: Any, kind: str) -> bool:
    """Whether ``value`` is not zero but prints as a zero of ``kind`` (its sign dropped): a
    conclusion that follows the sign of such a bound needs saying."""
    num = _num(value)
    return bool(num) and not any(c in "123456789" for c in FORMATTERS[kind](num))


def interval(low: Any, high: Any, kind: str) -> str:
    """A 95 % interval in one phrase, its unit once: '+2.9 to +3.8 pt', '71.0 to 74.2 %'."""
    lo, hi = FORMATTERS[kind](low), FORMATTERS[kind](high)
    if MISSING in (lo, hi):
        return MISSING
    for unit in (" pt", " %"):
        if lo.endswith(unit) and hi.endswith(unit):
            return f"{lo[: -len(unit)]} to {hi}"
    return f"{lo} to {hi}"


def number(value: Any) -> str:
    """Any other measured quantity: three significant digits for small values, one decimal above."""
    num = _num(value)
    if num is None:
        return MISSING
    if abs(num) >= 100:
        return f"{num:,.1f}"
    return unsigned_zero(f"{num:.3g}")


def lifetime(years: Any) -> str:
    """A lifetime given in years, in the unit that reads at a glance: '29 days', '11 months',
    '3.4 years' (never '0.0802 years'); the unit is in the value, so a column label need not say it."""
    num = _num(years)
    if num is None:
        return MISSING
    days = num * 365.25
    if days < 61:
        return f"{days:,.0f} day{'' if round(days) == 1 else 's'}"
    if num < 2:
        return f"{days / 30.44:.0f} months"
    return f"{num:,.1f} years"


def text(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def flag(value: Any) -> str:
    return "⚑ yes" if value else ""


def words(value: Any) -> str:
    """A mart's identifier in the reader's words: 'job_class' -> 'job class' (the CSV keeps it)."""
    return text(value).replace("_", " ")


#: Kinds that are text, not numbers: left-aligned and wrapped.
TEXT_KINDS = ("text", "words", "flag")

FORMATTERS = {
    "text": text,
    "words": words,
    "int": integer,
    "pct": pct,
    "points": points,
    "points_size": points_size,
    "hours": hours,
    "ratio": ratio,
    "gb": gb,
    "money": money,
    "num": number,
    "lifetime": lifetime,
    "flag": flag,
}


def csv_value(value: Any) -> str:
    """A value as written to CSV: full precision, ISO dates, empty for NULL."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)
