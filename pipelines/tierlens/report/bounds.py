"""Intervals held to what their quantity allows.

A bootstrap or a model's error band knows nothing of the quantity's range: a predicted efficiency
of 98 % with a 5-point error reaches 103 %, a price interval can reach below zero. The report
shows (and writes to CSV) each interval cut to the range, so a reader never sees a bound the
quantity cannot take; the range is widened to hold the estimate itself where a measured value lies
outside it (an efficiency above 100 % is flagged, never clipped: docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Allowed:
    """What a quantity can be: from ``floor`` to ``ceiling`` (None: no bound), and that range in
    a reader's words for the note that says an interval was cut to it."""

    floor: float | None
    ceiling: float | None
    words: str


#: A CPU efficiency, a share: 0 to 1.
EFFICIENCY = Allowed(0.0, 1.0, "an efficiency lies between 0 and 100 %")
#: A difference of two efficiencies, in points (as a fraction): -1 to +1.
EFFICIENCY_DIFFERENCE = Allowed(-1.0, 1.0, "a difference of two efficiencies lies between -100 and +100 pt")
#: A price: never below zero, no upper bound.
PRICE = Allowed(0.0, None, "a price is never below 0")


def clip_interval(rows: Iterable[dict[str, Any]], low: str, high: str, allowed: Allowed, *estimates: str) -> int:
    """Cut ``row[low]`` and ``row[high]`` of each row to ``allowed``, in place; the range is
    widened to hold each of ``row[estimate]`` (the estimate, a measurement set beside the
    interval) when it lies outside it. The number of rows with a bound cut."""
    cut = 0
    for row in rows:
        points = [float(row[e]) for e in estimates if row.get(e) is not None]
        lo_limit = None if allowed.floor is None else min([allowed.floor, *points])
        hi_limit = None if allowed.ceiling is None else max([allowed.ceiling, *points])
        was = (row.get(low), row.get(high))
        if row.get(low) is not None and lo_limit is not None:
            row[low] = max(float(row[low]), lo_limit)
        if row.get(high) is not None and hi_limit is not None:
            row[high] = min(float(row[high]), hi_limit)
        cut += any(w is not None and float(w) != row[k] for w, k in zip(was, (low, high)))
    return cut


def cut_note(count: int, allowed: Allowed) -> str:
    """What the reader is told when ``count`` intervals were cut: a bound shown at 100 % may be
    the range's, not the model's."""
    rows = "row's interval was" if count == 1 else "rows' intervals were"
    return (
        f"{count} {rows} cut where the quantity ends ({allowed.words}): the model's own bound "
        "reached past it. The CSV holds the cut bounds too."
    )
