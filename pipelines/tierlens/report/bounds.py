"""Intervals held to what their quantity allows.

A bootstrap or a model's error band knows nothing of the quantity's range: a predicted efficiency
of 98 % with a 5-point error reaches 103 %, a price interval can reach below zero. The report
shows (and writes to CSV) each interval cut to the range, so a reader never sees a bound the
quantity cannot take; the range is widened to hold the estimate itself where a measured value lies
outside it (an efficiency above 100 % is flagged, never clipped: docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: A CPU efficiency, a share: 0 to 1.
EFFICIENCY = (0.0, 1.0)
#: A difference of two efficiencies, in points (as a fraction): -1 to +1.
EFFICIENCY_DIFFERENCE = (-1.0, 1.0)
#: A price: never below zero, no upper bound.
PRICE = (0.0, None)


def clip_interval(
    rows: Iterable[dict[str, Any]],
    low: str,
    high: str,
    allowed: tuple[float | None, float | None],
    *estimates: str,
) -> None:
    """Cut ``row[low]`` and ``row[high]`` of each row to ``allowed``, in place; the range is
    widened to hold each of ``row[estimate]`` (the estimate, a measurement set beside the
    interval) when it lies outside it."""
    floor, ceiling = allowed
    for row in rows:
        points = [float(row[e]) for e in estimates if row.get(e) is not None]
        lo_limit = None if floor is None else min([floor, *points])
        hi_limit = None if ceiling is None else max([ceiling, *points])
        if row.get(low) is not None and lo_limit is not None:
            row[low] = max(float(row[low]), lo_limit)
        if row.get(high) is not None and hi_limit is not None:
            row[high] = min(float(row[high]), hi_limit)
