"""Efficiency by storage type and A/B arm (marts.efficiency_by_group, summed over periods)."""

from __future__ import annotations

from typing import Any

from .. import plots
from ..columns import AB_ARM, EFFICIENCY_SUMS, FAILED_JOBS, JOB_CLASS, STORAGE_TYPE
from ..page import Column
from ..reader import MartReader
from ..spec import PlotSpec, SectionOut, SectionSpec, TableSpec
from .common import arm_label, group_grain, storage_label

_GROUP_SUMS = """
    sum(jobs) AS jobs,
    sum(cpu_hours) AS cpu_hours,
    sum(wall_hours) AS wall_hours,
    sum(core_wall_hours) AS core_wall_hours,
    sum(cpu_hours) / nullif(sum(core_wall_hours), 0) AS efficiency,
    sum(mean_job_efficiency * jobs)
      / nullif(sum(jobs) FILTER (WHERE mean_job_efficiency IS NOT NULL), 0) AS mean_job_efficiency,
    sum(jobs_above_one) AS jobs_above_one,
    sum(failed_jobs) AS failed_jobs,
    sum(launch_failures) AS launch_failures,
    sum(failed_jobs) / nullif(sum(jobs) + sum(launch_failures), 0) AS failed_share
"""

FLAGGED_LIMIT = 50


def _mark_above_one(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        row["efficiency_above_one"] = row["efficiency"] is not None and row["efficiency"] > 1
    return rows


def _sums_by(wh: MartReader, grain: str, *keys: str) -> list[dict[str, Any]]:
    order = ", ".join(f"{k} NULLS LAST" for k in keys)
    return _mark_above_one(
        wh.rows(
            f"""
        SELECT {", ".join(keys)}, {_GROUP_SUMS}
        FROM marts.efficiency_by_group WHERE period_grain = ?
        GROUP BY ALL ORDER BY {order}
    """,
            [grain],
        )
    )


def body(wh: MartReader, s: SectionOut) -> None:
    grain = group_grain(wh)
    by_storage = _sums_by(wh, grain, "storage_type", "ab_arm")
    if not by_storage:
        s.no_data(f"marts.efficiency_by_group has no {grain}-grain rows.")
        return
    by_class = _sums_by(wh, grain, "storage_type", "ab_arm", "job_class")
    flagged = wh.rows(
        f"""
        SELECT period_start, storage_type, ab_arm, account, job_class, jobs, cpu_hours,
               core_wall_hours, efficiency, jobs_above_one
        FROM marts.efficiency_by_group
        WHERE period_grain = ? AND (efficiency_above_one OR efficiency > 1)
        ORDER BY efficiency DESC, period_start, storage_type, ab_arm, account, job_class
        LIMIT {FLAGGED_LIMIT}
    """,
        [grain],
    )

    s.figure(
        "by_storage",
        [
            {**r, "storage_label": storage_label(r["storage_type"]), "arm_label": arm_label(r["ab_arm"])}
            for r in by_storage
        ],
    )
    s.table("efficiency_by_storage", by_storage)
    s.table("efficiency_by_job_class", by_class)
    if flagged:
        s.table(
            "efficiency_flagged_groups",
            flagged,
            grain=grain,
            top=f" — the {FLAGGED_LIMIT} highest" if len(flagged) == FLAGGED_LIMIT else "",
        )
        s.note(
            "Efficiency above 100 % means a job used more CPU than its allocated cores account for "
            "(unbounded threads, or a wrong core count from the batch system): worth a look."
        )
    else:
        s.note(f"No {grain}ly group has efficiency above 100 %.")
    s.note(f"Source: marts.efficiency_by_group, {grain} grain, summed over all periods.")


SPEC = SectionSpec(
    id="efficiency",
    title="Efficiency by storage type and A/B arm",
    intro="CPU efficiency of each group of jobs as Σcpu hours / Σ(wall hours × cores) — a ratio of "
    "sums, never a mean of ratios — with the mean of per-job efficiencies (weighted by jobs) "
    "beside it. Groups above 100 % are flagged, not clipped. Failed jobs (the states of dbt "
    "var failed_states) are counted beside it; launch failures, which never started, are in "
    "no efficiency.",
    body=body,
    marts=("efficiency_by_group",),
    tables=(
        TableSpec(
            "efficiency_by_storage",
            "By storage type and arm",
            (STORAGE_TYPE, AB_ARM, *EFFICIENCY_SUMS, *FAILED_JOBS),
            flag_key="efficiency_above_one",
        ),
        TableSpec(
            "efficiency_by_job_class",
            "By storage type, arm and job class",
            (STORAGE_TYPE, AB_ARM, JOB_CLASS, *EFFICIENCY_SUMS, *FAILED_JOBS),
            flag_key="efficiency_above_one",
        ),
        TableSpec(
            "efficiency_flagged_groups",
            "Groups ({grain} × storage × arm × account × job class) with efficiency above 100 %{top}",
            (
                Column("period_start", "{grain} starting"),
                STORAGE_TYPE,
                AB_ARM,
                Column("account", "account"),
                JOB_CLASS,
                Column("jobs", "jobs", "int"),
                Column("cpu_hours", "CPU hours", "hours"),
                Column("core_wall_hours", "core-hours", "hours"),
                Column("efficiency", "efficiency", "pct"),
                Column("jobs_above_one", "jobs > 100 %", "int"),
            ),
        ),
    ),
    plots=(
        PlotSpec(
            "by_storage",
            plots.efficiency_by_storage,
            "Bar chart of CPU efficiency per storage type and A/B arm",
            "Bars: Σcpu / Σ(wall × cores) per storage type and arm. Diamonds: mean job efficiency "
            "weighted by jobs. Dashed line: 100 %.",
            "efficiency_by_storage",
        ),
    ),
)
