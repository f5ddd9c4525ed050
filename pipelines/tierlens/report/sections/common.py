"""Queries and labels that more than one section uses."""

from __future__ import annotations

from typing import Any

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
