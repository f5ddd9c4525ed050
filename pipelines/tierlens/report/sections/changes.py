"""Site changes: efficiency before and after each recorded change (marts.change_effects)."""

from __future__ import annotations

from typing import Any

from .. import bounds, plots
from ..columns import interval
from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, PlotSpec, SectionOut, SectionSpec, TableSpec


def _daily_efficiency(wh: MartReader, s: SectionOut, changes: list[dict[str, Any]]) -> None:
    if not wh.has("marts", "job_efficiency"):
        return
    days = wh.rows("""
        SELECT "day", sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0) AS efficiency,
               count(*) AS jobs, sum(core_wall_seconds) / 3600.0 AS core_hours
        FROM marts.job_efficiency GROUP BY ALL ORDER BY "day"
    """)
    if days:
        s.figure("timeline", days, [{"changed_at": c["changed_at"], "label": c["change_id"]} for c in changes])
        s.table("efficiency_daily", days)


def body(wh: MartReader, s: SectionOut) -> None:
    changes = wh.rows("""
        SELECT change_id, changed_at, description, scope, comparison, jobs_scope_before, jobs_scope_after,
               core_hours_scope_before + core_hours_scope_after AS core_hours_behind,
               efficiency_scope_before, efficiency_scope_after, efficiency_control_before,
               efficiency_control_after, effect, effect_ci_low, effect_ci_high, effect_unstratified,
               effect_unstratified_ci_low, effect_unstratified_ci_high, strata_core_hours_share,
               conclusion, conclusion_unstratified, NOT enough_data OR short_window OR control_missing
                 OR overlapping_changes IS NOT NULL AS weak, warning
        FROM marts.change_effects WHERE row_kind = 'change' ORDER BY changed_at, change_id
    """)
    cut = sum(
        bounds.clip_interval(changes, lo, hi, bounds.EFFICIENCY_DIFFERENCE, point)
        for lo, hi, point in (
            ("effect_ci_low", "effect_ci_high", "effect"),
            ("effect_unstratified_ci_low", "effect_unstratified_ci_high", "effect_unstratified"),
        )
    )
    if cut:
        s.note(bounds.cut_note(cut, bounds.EFFICIENCY_DIFFERENCE))
    _daily_efficiency(wh, s, changes)
    s.table("change_effects", changes)
    strata = wh.rows("""
        SELECT change_id, job_class, bytes_read_bin, jobs_scope_before, jobs_scope_after,
               efficiency_scope_before, efficiency_scope_after, effect, effect_ci_low, effect_ci_high, conclusion
        FROM marts.change_effects WHERE row_kind = 'stratum' ORDER BY changed_at, change_id, job_class, bytes_read_bin
    """)
    # Every column of the stratum rows, under its own name: this table is for the CSV.
    s.table("change_effects_strata", strata, columns=[Column(k, k) for k in strata[0]] if strata else None)
    s.note(
        "A flagged row has a caveat (too few jobs, a short window, an overlapping change or no "
        "control): read its interval with that in mind. Sources: marts.change_effects, "
        "marts.job_efficiency; every stratum in change_effects_strata.csv."
    )


SPEC = SectionSpec(
    id="changes",
    title="Site changes: efficiency before and after",
    intro="Each recorded change (`tierlens change add`) against the jobs in its scope, in a window "
    "before and after it. Where the change touched only some nodes, the other nodes are the "
    "control (difference in differences). The effect is compared within job class × bytes "
    "read per job, so a week of heavier jobs does not pass for an effect; the plain difference "
    "is beside it. 95 % intervals: hour-block bootstrap, as for the A/B trial.",
    body=body,
    marts=("change_effects",),
    empty_hint="Record changes with `tierlens change add`.",
    group=OPERATIONS,
    tables=(
        TableSpec(
            "efficiency_daily",
            "Daily efficiency",
            (
                Column("day", "day"),
                Column("jobs", "jobs", "int"),
                Column("core_hours", "core-hours", "hours"),
                Column("efficiency", "efficiency", "pct"),
            ),
            shown=False,
        ),
        TableSpec(
            "change_effects",
            "Before and after each change (in scope; control where there is one)",
            # the effect, its interval and the conclusion in the row, within a laptop's width; the
            # counts, the control and the unstratified figure on the details line under it
            (
                Column("changed_at", "changed at"),
                Column("description", "change"),
                Column("efficiency_scope_before", "before", "pct"),
                Column("efficiency_scope_after", "after", "pct"),
                Column("effect", "effect (stratified)", "points"),
                *interval("effect_ci", "points"),
                Column("conclusion", "conclusion"),
                Column("weak", "caveat", "flag"),
                Column("scope", "scope", detail=True),
                Column("comparison", "comparison", detail=True),
                Column("jobs_scope_before", "jobs before", "int", detail=True),
                Column("jobs_scope_after", "jobs after", "int", detail=True),
                Column("core_hours_behind", "core-hours behind", "hours", detail=True),
                Column("efficiency_control_before", "control before", "pct", detail=True),
                Column("efficiency_control_after", "control after", "pct", detail=True),
                Column("effect_unstratified", "unstratified effect", "points", detail=True),
                *interval("effect_unstratified_ci", "points", "unstrat.", csv_only=True),
                Column("strata_core_hours_share", "share in strata", "pct", csv_only=True),
                Column("conclusion_unstratified", "unstratified says", csv_only=True),
                Column("warning", "why", detail=True),
                Column("change_id", "id", csv_only=True),
            ),
            flag_key="weak",
        ),
        TableSpec("change_effects_strata", "Per stratum", (Column("change_id", "change_id"),), shown=False),
    ),
    plots=(
        PlotSpec(
            "timeline",
            plots.efficiency_timeline_with_changes,
            "Daily CPU efficiency of the site with the recorded changes marked",
            "Line: Σcpu / Σ(wall × cores) of the jobs ending each UTC day. Dashed lines: recorded changes.",
            "efficiency_daily",
        ),
    ),
)
