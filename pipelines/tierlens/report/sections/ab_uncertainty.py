"""A/B difference with bootstrap intervals and permutation p-values (marts.ab_uncertainty)."""

from __future__ import annotations

from .. import bounds, columns as col, fmt, plots
from ..page import Column
from ..reader import MartReader
from ..spec import ANALYSIS, PlotSpec, SectionOut, SectionSpec, TableSpec

_CONCLUSION_NOTE = (
    "Each difference B − A comes with a 95 % bootstrap interval: whole hours (by job end time) "
    "are resampled with both arms' jobs of the hour together, because jobs ending in the same hour "
    "share the cache's contents and the servers' load. The p-value is a permutation test that "
    "swaps the arms within hours. 'B higher' / 'A higher' means the interval excludes 0; "
    "'insufficient data' (highlighted) means an arm has too few jobs, core-hours or hours with "
    "both arms to conclude, whatever the interval says."
)

#: The whole-period tables: (subset of marts.ab_uncertainty, table name).
_SUBSETS = (("all", "ab_uncertainty_overall"), ("high_hit_ratio", "ab_uncertainty_high_hit"))


def body(wh: MartReader, s: SectionOut) -> None:
    days = wh.rows("""
        SELECT period_start, jobs_a, jobs_b, efficiency_a, efficiency_b, efficiency_difference,
               efficiency_ci_low, efficiency_ci_high, efficiency_p_value, enough_data, conclusion, warning
        FROM marts.ab_uncertainty
        WHERE subset = 'all' AND grouping = 'site' AND period_grain = 'day' ORDER BY period_start
    """)
    overall = wh.rows("""
        SELECT subset, grouping, group_value, period_start, period_end,
               CAST(period_end - 1 AS DATE) AS period_last_day, jobs_a, jobs_b,
               core_wall_hours_a, core_wall_hours_b, efficiency_a, efficiency_b, efficiency_difference,
               efficiency_ci_low, efficiency_ci_high, efficiency_p_value,
               cpu_per_wall_a, cpu_per_wall_b, cpu_per_wall_difference, cpu_per_wall_ci_low,
               cpu_per_wall_ci_high, enough_data, NOT enough_data AS insufficient, conclusion, warning
        FROM marts.ab_uncertainty
        WHERE period_grain = 'all'
        ORDER BY subset, grouping <> 'site', grouping, group_value
    """)
    cut = sum(
        bounds.clip_interval(
            rows, "efficiency_ci_low", "efficiency_ci_high", bounds.EFFICIENCY_DIFFERENCE, "efficiency_difference"
        )
        for rows in (days, overall)
    )
    if cut:
        s.note(bounds.cut_note(cut, bounds.EFFICIENCY_DIFFERENCE))
    near_zero = sum(
        fmt.hides_its_sign(r[k], "points") for r in days + overall for k in ("efficiency_ci_low", "efficiency_ci_high")
    )
    if near_zero:
        s.note(
            f"{near_zero} interval bound{'s' if near_zero != 1 else ''} shown as 0.0 pt "
            f"{'lie' if near_zero != 1 else 'lies'} within 0.05 pt of zero, on one side or the other: a "
            "conclusion follows the bound's sign, which the CSV holds at full precision."
        )
    site = next((r for r in overall if r["subset"] == "all" and r["grouping"] == "site"), None)
    if site is not None:
        s.fact("Whole period, site: efficiency B − A", fmt.points(site["efficiency_difference"]))
        s.fact("95 % interval", fmt.interval(site["efficiency_ci_low"], site["efficiency_ci_high"], "points"))
        s.fact("Permutation p-value", fmt.number(site["efficiency_p_value"]))
        s.fact("Conclusion", f"{site['conclusion']}" + (f" ({site['warning']})" if site["warning"] else ""))
    if days:
        s.figure("daily_difference", days)
        s.table("ab_uncertainty_daily", days)
    for subset, name in _SUBSETS:
        rows = [r for r in overall if r["subset"] == subset]
        if rows:
            s.table(name, rows)
        elif subset == "high_hit_ratio":
            s.note(
                "No hour reached the high cache hit ratio threshold (dbt var high_hit_ratio): "
                "no high-hit-ratio comparison."
            )
    if not (days or overall):
        s.no_data("marts.ab_uncertainty has no rows of grain 'day' or 'all'.")
    s.note(_CONCLUSION_NOTE)
    s.note("Source: marts.ab_uncertainty (weekly rows and all groupings there and in sql/ab_with_confidence.sql).")


_DIFFERENCE = (
    Column("efficiency_difference", "B − A (pt)", "points"),
    *col.interval("efficiency_ci", "points", "95 % CI"),
    Column("efficiency_p_value", "p-value", "num"),
)

_WHOLE_PERIOD = (
    Column("group_value", "group"),
    Column("grouping", "grouped by", "words"),
    *col.arms("jobs"),
    *col.arms("core_wall_hours", csv_only=True),
    *col.arms("efficiency"),
    *_DIFFERENCE,
    *col.arms("cpu_per_wall"),
    Column("cpu_per_wall_difference", "CPU/wall B − A", "ratio", csv_only=True),
    *col.interval("cpu_per_wall_ci", "ratio", "CPU/wall CI", csv_only=True),
    Column("conclusion", "conclusion"),
    col.WARNING,
    Column("subset", "subset", csv_only=True),
    # the last day, included: the period end the rest of the report prints (the mart's period_end,
    # the day after, stays in the query for the report's own clipping to its period)
    Column("period_start", "from", csv_only=True),
    Column("period_last_day", "last day", csv_only=True),
)

SPEC = SectionSpec(
    id="ab_uncertainty",
    title="A/B difference with confidence intervals",
    intro="Is arm B's CPU efficiency really different from arm A's, and are there enough data to "
    "say so? The A/B comparison with its uncertainty, for the whole site and per storage "
    "type, job class, account and VO, and again for the hours when the cache hit ratio was "
    "high (the SLAC study's 13–15 September comparison).",
    body=body,
    marts=("ab_uncertainty",),
    empty_hint="No jobs carry an A/B arm tag yet.",
    group=ANALYSIS,
    tables=(
        TableSpec(
            "ab_uncertainty_daily",
            "A/B difference per day",
            (
                Column("period_start", "day"),
                *col.arms("jobs", "efficiency"),
                *_DIFFERENCE,
                Column("enough_data", "enough data", "text"),
                Column("conclusion", "conclusion"),
                col.WARNING,
            ),
            shown=False,
        ),
        TableSpec("ab_uncertainty_overall", "Whole period, all jobs", _WHOLE_PERIOD, flag_key="insufficient"),
        TableSpec(
            "ab_uncertainty_high_hit",
            "Whole period, jobs ending in hours with a high cache hit ratio (SLAC's 13–15 September view)",
            _WHOLE_PERIOD,
            flag_key="insufficient",
        ),
    ),
    plots=(
        PlotSpec(
            "daily_difference",
            plots.ab_difference_with_ci,
            "Daily efficiency difference between arm B and arm A with 95 % confidence intervals",
            "Daily efficiency difference B − A (whole site) with its 95 % bootstrap interval. Hollow "
            "grey points: days without enough data to conclude. Dashed line: no difference.",
            "ab_uncertainty_daily",
        ),
    ),
)
