"""Summary: the jobs measured, their core-hours and efficiency, and what was rejected on loading."""

from __future__ import annotations

import datetime as dt
from typing import Any

from .. import fmt
from ..page import Column
from ..reader import MartReader
from ..spec import SectionOut, SectionSpec, TableSpec
from .common import group_grain


def _job_totals(wh: MartReader, s: SectionOut) -> tuple[dict[str, Any] | None, str]:
    """Totals over all jobs, from job_efficiency, else from efficiency_by_group; and their source."""
    why_jobs = wh.mart_missing("job_efficiency")
    if why_jobs is None:
        return wh.rows("""
            SELECT min("day") AS first_day, max("day") AS last_day, count(*) AS jobs,
                   sum(core_wall_seconds) / 3600.0 AS core_hours,
                   sum(cpu_seconds) / 3600.0 AS cpu_hours,
                   sum(cpu_seconds) FILTER (WHERE cpu_seconds IS NOT NULL AND core_wall_seconds > 0)
                     / nullif(sum(core_wall_seconds)
                              FILTER (WHERE cpu_seconds IS NOT NULL AND core_wall_seconds > 0), 0)
                     AS efficiency,
                   avg(efficiency) AS mean_job_efficiency,
                   count(*) FILTER (WHERE efficiency > 1) AS jobs_above_one
            FROM marts.job_efficiency
        """)[0], "marts.job_efficiency"
    if wh.mart_missing("efficiency_by_group") is None:
        grain = group_grain(wh)
        totals = wh.rows(f"""
            SELECT min(period_start) AS first_day,
                   max(period_start) AS last_period_start,
                   sum(jobs) AS jobs, sum(core_wall_hours) AS core_hours, sum(cpu_hours) AS cpu_hours,
                   sum(cpu_hours) / nullif(sum(core_wall_hours), 0) AS efficiency,
                   sum(mean_job_efficiency * jobs)
                     / nullif(sum(jobs) FILTER (WHERE mean_job_efficiency IS NOT NULL), 0)
                     AS mean_job_efficiency,
                   sum(jobs_above_one) AS jobs_above_one
            FROM marts.efficiency_by_group WHERE period_grain = '{grain}'
        """)[0]
        last = totals.pop("last_period_start")
        if last is not None:
            totals["last_day"] = last + dt.timedelta(days=6 if grain == "week" else 0)
        return totals, f"marts.efficiency_by_group ({grain} grain; marts.job_efficiency: {why_jobs})"
    s.no_data(f"No job data: {why_jobs}")
    return None, ""


def _job_facts(totals: dict[str, Any]) -> list[tuple[str, str, Any]]:
    first, last = totals.get("first_day"), totals.get("last_day")
    if first is not None and last is not None:
        n_days = (last - first).days + 1
        period = f"{fmt.text(first)} to {fmt.text(last)} ({n_days} day{'s' if n_days != 1 else ''})"
    else:
        period = fmt.MISSING
    return [
        ("Period covered", period, f"{fmt.csv_value(first)}/{fmt.csv_value(last)}"),
        ("Jobs", fmt.integer(totals["jobs"]), totals["jobs"]),
        ("Core-hours (wall × cores)", fmt.hours(totals["core_hours"]), totals["core_hours"]),
        ("CPU hours", fmt.hours(totals["cpu_hours"]), totals["cpu_hours"]),
        ("CPU efficiency, Σcpu / Σ(wall × cores)", fmt.pct(totals["efficiency"]), totals["efficiency"]),
        ("Mean job efficiency", fmt.pct(totals["mean_job_efficiency"]), totals["mean_job_efficiency"]),
        (
            "Jobs with efficiency above 100 % (flagged, not clipped)",
            fmt.integer(totals["jobs_above_one"]),
            totals["jobs_above_one"],
        ),
    ]


def _loading_facts(wh: MartReader, s: SectionOut) -> list[tuple[str, str, Any]]:
    """Rejects and batches: raw tables, shown whether or not the marts exist."""
    facts: list[tuple[str, str, Any]] = []
    if wh.has("main", "raw_rejects"):
        n_rejects = wh.scalar("SELECT count(*) FROM main.raw_rejects")
        facts.append(("Rejected records", fmt.integer(n_rejects), n_rejects))
        if n_rejects:
            s.table(
                "rejects_by_reason",
                wh.rows("""
                SELECT record_kind, reason, count(*) AS records
                FROM main.raw_rejects GROUP BY ALL ORDER BY records DESC, record_kind, reason LIMIT 25
            """),
            )
        s.note(
            "Every rejected record is kept with where it came from and why: "
            "SELECT record_kind, source, location, field, reason FROM main.raw_rejects;"
        )
    else:
        facts.append(("Rejected records", "no data (main.raw_rejects is not in the warehouse)", None))
    if wh.has("main", "raw_batches"):
        # every load counts (a source's interval, a device probe, a site change): say which, so the
        # figure can be set beside what a command printed for its own load
        has_source = wh.scalar(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'main' "
            "AND table_name = 'raw_batches' AND column_name = 'source'"
        )
        by_source = wh.rows(
            "SELECT source, count(*) AS n FROM main.raw_batches GROUP BY ALL ORDER BY n DESC, source"
            if has_source
            else "SELECT 'all' AS source, count(*) AS n FROM main.raw_batches"
        )
        n_batches = sum(r["n"] for r in by_source)
        shown = fmt.integer(n_batches) + (
            " ("
            + ", ".join(f"{r['source']} {fmt.integer(r['n'])}" for r in by_source[:6])
            + (", …" if len(by_source) > 6 else "")
            + ")"
            if by_source
            else ""
        )
        facts.append(("Batches loaded, every source (main.raw_batches)", shown, n_batches))
    return facts


def body(wh: MartReader, s: SectionOut) -> None:
    facts: list[tuple[str, str, Any]] = []  # label, shown, raw
    totals, source = _job_totals(wh, s)
    if totals is not None and totals.get("jobs"):
        facts += _job_facts(totals)
        s.note(f"Job figures from {source}.")
    elif totals is not None:
        s.no_data("No job data: the job marts have no jobs.")
    facts += _loading_facts(wh, s)
    for label, shown, _ in facts:
        s.fact(label, shown)
    s.table("summary", [{"metric": label, "value": raw} for label, _, raw in facts])


SPEC = SectionSpec(
    id="summary",
    title="Summary",
    intro="What the warehouse holds: the jobs measured, their core-hours and CPU efficiency "
    "(Σcpu / Σ(wall × cores) over all jobs, with the mean of per-job efficiencies beside it).",
    body=body,
    tables=(
        TableSpec("summary", "Summary", (Column("metric", "metric"), Column("value", "value")), shown=False),
        TableSpec(
            "rejects_by_reason",
            "Rejected records by kind and reason (the 25 most frequent)",
            (Column("record_kind", "record kind"), Column("reason", "reason"), Column("records", "records", "int")),
        ),
    ),
)
