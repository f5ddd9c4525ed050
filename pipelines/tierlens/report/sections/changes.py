"""Site changes: efficiency before and after each recorded change (marts.change_effects)."""

from __future__ import annotations

from typing import Any

from ...analysis import change
from .. import bounds, plots
from ..columns import interval
from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, PlotSpec, SectionOut, SectionSpec, TableSpec

#: The population of the faint context line: every job of the site.
SITE = "site"
#: Where a job ran, as marts.job_efficiency says and a change's scope needs it.
PLACE = ("cluster", "node", "storage_type", "ab_arm")


def _scope(row: dict[str, Any]) -> dict[str, Any] | None:
    """A change's scope as a stg_site_change record, from its mart row (``cluster`` and the
    ``scope`` text the mart wrote from the record): the plot reads the jobs the table's row was
    computed on. None for a scope text the analysis does not write."""
    scope = change.scope_from_text(row["scope"] or "")
    return None if scope is None else {"cluster": row["cluster"], **scope}


def _population(record: dict[str, Any]) -> str:
    """The jobs a change's effect is measured on, in words ('storage type nfs', 'nodes wn01,wn02 on
    cluster t2'); SITE for a change of the whole site."""
    scope = change.scope_text(record)
    if record["cluster"] is None:
        return scope
    return f"cluster {record['cluster']}" if scope == SITE else f"{scope} on cluster {record['cluster']}"


def _daily_efficiency(wh: MartReader, s: SectionOut, changes: list[dict[str, Any]]) -> None:
    """Daily efficiency of the jobs each change applies to, the population its effect in the
    table is measured on (an NFS-only tuning: the jobs on NFS), and of the whole site as context:
    a site-wide line would dilute an NFS effect by every other storage type's jobs."""
    if not wh.has("marts", "job_efficiency"):
        return
    columns = wh.columns("marts", "job_efficiency")
    place = [c if c in columns else f"NULL AS {c}" for c in PLACE]
    groups = wh.rows(f"""
        SELECT "day", {", ".join(place)}, sum(cpu_seconds) AS cpu_seconds,
               sum(core_wall_seconds) AS core_wall_seconds, count(*) AS jobs
        FROM marts.job_efficiency GROUP BY ALL ORDER BY "day"
    """)
    # a change whose scope cannot be read (or that is site-wide) is read on the site's line
    populations: dict[str, dict[str, Any]] = {}
    unknown = []
    for c in changes:
        record = _scope(c)
        if record is None:
            unknown.append(c["change_id"])
        c["population"] = _population(record) if record else SITE
        if c["population"] != SITE:
            populations.setdefault(c["population"], record)
    members: dict[str, list[dict[str, Any]]] = {SITE: groups}
    for name, record in populations.items():
        members[name] = [g for g in groups if change.job_in_scope(record, *(g[k] for k in PLACE))]
    days = [row for name, rows in members.items() for row in _per_day(name, rows)]
    if not days:
        return
    s.figure(
        "timeline",
        days,
        [{"changed_at": c["changed_at"], "label": c["change_id"], "population": c["population"]} for c in changes],
        plotted=_plotted(changes, populations, unknown),
        unknown=(
            f" The scope of {', '.join(unknown)} could not be read: it is on the site's line, while its "
            "effect in the table is for its scope."
            if unknown
            else ""
        ),
    )
    s.table("efficiency_daily", days)


def _per_day(population: str, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    days: dict[Any, list[float]] = {}
    for g in groups:
        sums = days.setdefault(g["day"], [0.0, 0.0, 0])
        sums[0] += g["cpu_seconds"] or 0.0
        sums[1] += g["core_wall_seconds"] or 0.0
        sums[2] += g["jobs"]
    return [
        {
            "population": population,
            "day": day,
            "jobs": jobs,
            "core_hours": core_wall / 3600.0,
            "efficiency": cpu / core_wall if core_wall else None,
        }
        for day, (cpu, core_wall, jobs) in sorted(days.items())
    ]


def _plotted(changes: list[dict[str, Any]], populations: dict[str, Any], unknown: list[str]) -> str:
    """The caption's words for what the lines are."""
    if not populations:
        return "at the whole site" + ("" if unknown else ", the scope of every change in the table")
    named = "; ".join(
        f"{name} ({', '.join(c['change_id'] for c in changes if c['population'] == name)})" for name in populations
    )
    site_wide = [c["change_id"] for c in changes if c["population"] == SITE]
    return (
        f"in each change's scope (the jobs its effect in the table is measured on): {named}"
        + (f"; the whole site for {', '.join(site_wide)}" if site_wide else "")
        + ". Grey, faint: the whole site, for context only"
    )


def body(wh: MartReader, s: SectionOut) -> None:
    # a mart from before the cluster column: every change then reads as of every cluster
    cluster = "cluster" if "cluster" in wh.columns("marts", "change_effects") else "NULL AS cluster"
    changes = wh.rows(f"""
        SELECT change_id, {cluster}, changed_at, description, scope, comparison, jobs_scope_before, jobs_scope_after,
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
            "Daily efficiency of each plotted population",
            (
                Column("population", "population"),
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
            "Daily CPU efficiency of the jobs each recorded change applies to, with the changes marked",
            "Lines: Σcpu / Σ(wall × cores) of the jobs ending each UTC day {plotted}. The effect in the "
            "table also subtracts what changed for the jobs outside the scope (the control), where there "
            "are any. Dashed lines: recorded changes.{unknown}",
            "efficiency_daily",
        ),
    ),
)
