"""A/B comparison over time, SLAC-style (marts.ab_comparison)."""

from __future__ import annotations

from typing import Any

from .. import columns as col, fmt, plots
from ..page import KINDS_KEY, Column
from ..reader import MartReader
from ..spec import PlotSpec, SectionOut, SectionSpec, TableSpec
from .common import PARTIAL_WEEK, PARTIAL_WEEK_NOTE, WEEK_DAYS, weeks_in_period


def _diff(b: Any, a: Any) -> float | None:
    return None if a is None or b is None else float(b) - float(a)


def _days(start: Any, last: Any) -> str:
    """A period as its first and last day, both included (the mart's period_last_day)."""
    return f"{fmt.text(start)} to {fmt.text(last)}"


def _overall_rows(overall: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SLAC table: one row per arm and period, then B − A computed here from the two."""
    table_rows: list[dict[str, Any]] = []
    for o in overall:
        period = _days(o.get("period_start"), o.get("period_last_day"))
        for arm in ("a", "b"):
            table_rows.append(
                {
                    "period": period,
                    "group": f"arm {arm.upper()}",
                    "jobs": o.get(f"jobs_{arm}"),
                    "cpu_hours": o.get(f"cpu_hours_{arm}"),
                    "wall_hours": o.get(f"wall_hours_{arm}"),
                    "cpu_per_wall": o.get(f"cpu_per_wall_{arm}"),
                    "core_wall_hours": o.get(f"core_wall_hours_{arm}"),
                    "efficiency": o.get(f"efficiency_{arm}"),
                }
            )
        a, b = table_rows[-2], table_rows[-1]
        table_rows.append(
            {
                "period": period,
                "group": "B − A",
                "_total": True,
                # a difference of two efficiencies is in points, not a percentage
                KINDS_KEY: {"efficiency": "points"},
                "cpu_per_wall": _diff(b["cpu_per_wall"], a["cpu_per_wall"]),
                "efficiency": _diff(b["efficiency"], a["efficiency"]),
            }
        )
    return table_rows


def body(wh: MartReader, s: SectionOut) -> None:
    overall = wh.rows("""
        SELECT * FROM marts.ab_comparison WHERE period_grain = 'all' ORDER BY period_start
    """)
    days = wh.rows("""
        SELECT period_start, period_end, jobs_a, jobs_b, cpu_hours_a, cpu_hours_b,
               core_wall_hours_a, core_wall_hours_b, efficiency_a, efficiency_b,
               cpu_per_wall_a, cpu_per_wall_b, efficiency_b - efficiency_a AS efficiency_b_minus_a
        FROM marts.ab_comparison WHERE period_grain = 'day' ORDER BY period_start
    """)
    weeks = wh.rows("""
        SELECT period_start, period_last_day, jobs_a, efficiency_a, cpu_per_wall_a,
               jobs_b, efficiency_b, cpu_per_wall_b, efficiency_b - efficiency_a AS efficiency_b_minus_a
        FROM marts.ab_comparison WHERE period_grain = 'week' ORDER BY period_start
    """)
    if days:
        s.figure("daily", days)
        s.table("ab_daily", days)
    else:
        s.note("No day-grain rows in marts.ab_comparison: no daily plot.")
    if overall:
        s.table("ab_overall", _overall_rows(overall))
        s.note(
            "CPU/wall is Σcpu hours / Σwall hours as in the SLAC tables (it exceeds 1 for multi-core "
            "jobs); efficiency divides by wall × allocated cores. B − A is computed here from the two arms."
        )
    else:
        s.note("No 'all' row in marts.ab_comparison: no whole-period table.")
    if weeks:
        s.table("ab_weekly", weeks_in_period(weeks, "period_start", s.period))
        if any(w["partial_week"] for w in weeks):
            s.note(PARTIAL_WEEK_NOTE)
    if not (days or overall or weeks):
        s.no_data("marts.ab_comparison has no rows of grain 'day', 'week' or 'all'.")


_DAILY_MEASURES = ("jobs", "cpu_hours", "core_wall_hours", "efficiency", "cpu_per_wall")
_WEEKLY_MEASURES = ("jobs", "efficiency", "cpu_per_wall")

SPEC = SectionSpec(
    id="ab",
    title="A/B comparison over time",
    intro="Two groups of jobs on identical hardware that differ in one storage or cache setting "
    "(the A/B arm a scheduler plugin tagged). As in the SLAC SSD-cache study: compare the "
    "CPU and wall hours each arm contributed, and their CPU/wall, over the same period.",
    body=body,
    marts=("ab_comparison",),
    empty_hint="No jobs carry an A/B arm tag yet.",
    tables=(
        TableSpec(
            "ab_overall",
            "Whole period (SLAC-style table)",
            (
                Column("period", "period"),
                Column("group", "group"),
                Column("jobs", "jobs", "int"),
                Column("cpu_hours", "CPU hours", "hours"),
                Column("wall_hours", "wall hours", "hours"),
                Column("cpu_per_wall", "CPU/wall", "ratio"),
                Column("core_wall_hours", "core-hours (wall × cores)", "hours"),
                Column("efficiency", "efficiency Σcpu / Σ(wall × cores)", "pct"),
            ),
        ),
        TableSpec(
            "ab_daily",
            "A/B per day",
            (
                Column("period_start", "day"),
                *col.arm("a", *_DAILY_MEASURES),
                *col.arm("b", *_DAILY_MEASURES),
                col.EFFICIENCY_B_MINUS_A,
            ),
            shown=False,
        ),
        TableSpec(
            "ab_weekly",
            "Per week",
            (
                Column("period_start", "week start"),
                *WEEK_DAYS,
                *col.arm("a", *_WEEKLY_MEASURES),
                *col.arm("b", *_WEEKLY_MEASURES),
                col.EFFICIENCY_B_MINUS_A,
                PARTIAL_WEEK,
            ),
            flag_key="partial_week",
        ),
    ),
    plots=(
        PlotSpec(
            "daily",
            plots.ab_daily,
            "Line chart of daily CPU efficiency of arm A and arm B",
            "Daily CPU efficiency, Σcpu / Σ(wall × cores), of arm A and arm B "
            "(marts.ab_comparison, day grain). Gaps: no jobs of that arm that day.",
            "ab_daily",
        ),
    ),
)
