"""Queries and labels that more than one section uses."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..page import Column
from ..period import ReportPeriod
from ..reader import MartReader


def group_grain(wh: MartReader) -> str:
    """Week grain when efficiency_by_group has it, else day (the sums are the same)."""
    grains = {r["period_grain"] for r in wh.rows("SELECT DISTINCT period_grain FROM marts.efficiency_by_group")}
    return "week" if "week" in grains or "day" not in grains else "day"


def storage_label(value: Any) -> str:
    return "untagged" if value is None else str(value)


def arm_label(value: Any) -> str:
    return "no arm" if value is None else f"arm {value}"


def share_sql(measure: str) -> str:
    """numerator / denominator of one measure of marts.data_completeness, summed over the group."""
    return (
        f"sum(numerator) filter (where measure = '{measure}') "
        f"/ nullif(sum(denominator) filter (where measure = '{measure}'), 0)"
    )


#: The columns ``weeks_in_period`` adds, after the week's start: a week's days within the period.
WEEK_DAYS = (
    Column("first_day", "first day"),
    Column("last_day", "last day"),
    Column("days_in_period", "days", "int"),
)
#: The flag of a week the period cuts (the table's flag key).
PARTIAL_WEEK = Column("partial_week", "partial week", "flag")
PARTIAL_WEEK_NOTE = (
    "A flagged week is partial: the report's period cuts it, so its first or last day is the period's and it "
    "holds fewer than 7 days."
)


def weeks_in_period(weeks: list[dict[str, Any]], start: str, period: ReportPeriod | None) -> list[dict[str, Any]]:
    """Each week row (its Monday in ``row[start]``) with the days of it the report covers, in place:
    an ISO week runs Monday to Sunday, but a week the period's end cuts must not claim the Sunday
    after it (nor, cut by its start, the Monday before)."""
    for w in weeks:
        if period is None:  # no job days to cut by: the week as it is
            w.update(first_day=w[start], last_day=w[start] + dt.timedelta(days=6), days_in_period=7, partial_week=False)
            continue
        cut = period.week(w[start])
        w.update(first_day=cut.first, last_day=cut.last, days_in_period=cut.days, partial_week=cut.partial)
    return weeks
