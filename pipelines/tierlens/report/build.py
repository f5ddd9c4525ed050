"""Build the site report from the marts of a tierlens DuckDB warehouse.

One self-contained HTML page (inline CSS, figures embedded as base64 PNG, no external URL) and,
beside it, one CSV file per table shown and per figure's data, with the numbers at full precision.
Every section reads its own mart and says "no data" when the mart is missing, empty or unreadable,
so a warehouse that has only seen part of the pipeline still gets a report.

Efficiency is always a ratio of sums, Σcpu / Σ(wall × cores) (DESIGN.md), computed here from the
sums the marts carry; the mean of per-job efficiencies is shown beside it, weighted by jobs.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import jinja2

from ..warehouse import QUERY_ERRORS
from . import fmt, plots

TEMPLATE_DIR = Path(__file__).with_name("templates")
TEMPLATE_NAME = "report.html.j2"
HTML_NAME = "report.html"

#: Section ids, in the order the report shows them.
SECTION_IDS = ("summary", "efficiency", "ab", "cache", "price_performance")

#: Every CSV file the report may write. Files of this list that a run does not produce (their
#: section had no data) are removed from the output folder, so no stale numbers stay behind.
CSV_NAMES = (
    "summary.csv",
    "rejects_by_reason.csv",
    "efficiency_by_storage.csv",
    "efficiency_by_job_class.csv",
    "efficiency_flagged_groups.csv",
    "ab_overall.csv",
    "ab_weekly.csv",
    "ab_daily.csv",
    "cache_hourly.csv",
    "cache_by_server.csv",
    "storage_price_performance.csv",
)

#: Ids of the analytics sections (A/B uncertainty, occupancy, fairness, popularity), shown after
#: SECTION_IDS when the warehouse has any of their marts (``ANALYSIS_MARTS``).
ANALYSIS_SECTION_IDS = ("ab_uncertainty", "occupancy", "fairness", "popularity")

#: The CSV files the analytics sections may write (removed when not produced, like CSV_NAMES).
ANALYSIS_CSV_NAMES = (
    "ab_uncertainty_daily.csv",
    "ab_uncertainty_overall.csv",
    "ab_uncertainty_high_hit.csv",
    "occupancy_efficiency.csv",
    "storage_full_occupancy_endurance.csv",
    "client_fairness_windows.csv",
    "client_fairness_by_server.csv",
    "file_popularity_top.csv",
)

#: Shown after the others once the simulator has written predictions (the mart has rows).
PREDICTION_SECTION_IDS = ("prediction",)
PREDICTION_CSV_NAMES = ("efficiency_measured_vs_predicted.csv", "efficiency_what_if.csv")


@dataclass
class ReportResult:
    html_path: Path
    csv_paths: list[Path]
    #: Ids of the sections in the report, in order (see ``SECTION_IDS``).
    sections: list[str]
    #: Ids of the sections that said "no data" (their mart missing, empty or unreadable).
    no_data: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- page model


@dataclass
class Column:
    key: str
    label: str
    kind: str = "text"  # a key of fmt.FORMATTERS
    null_text: str = fmt.MISSING
    #: Another key of the row whose value is appended to the cell in HTML (e.g. a currency).
    suffix_key: str | None = None
    #: Written to the CSV file only, not shown in the HTML table.
    csv_only: bool = False

    def cell(self, row: dict[str, Any]) -> str:
        value = row.get(self.key)
        if value is None and self.kind != "flag":
            return self.null_text
        text = fmt.FORMATTERS[self.kind](value)
        if self.suffix_key and row.get(self.suffix_key):
            text = f"{text} {row[self.suffix_key]}"
        return text

    @property
    def numeric(self) -> bool:
        return self.kind not in ("text", "flag")

    def css_class(self, row: dict[str, Any]) -> str:
        classes = ["num"] if self.numeric else []
        if row.get(self.key) is None and self.kind != "flag":
            classes.append("missing")
        return " ".join(classes)


@dataclass
class Table:
    """A table shown in the page (``shown``) or only the data behind a figure; always a CSV."""

    name: str
    caption: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    flag_key: str | None = None
    shown: bool = True

    @property
    def csv_name(self) -> str:
        return f"{self.name}.csv"

    @property
    def html_columns(self) -> list[Column]:
        return [c for c in self.columns if not c.csv_only]

    def html_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "flagged": bool(self.flag_key and row.get(self.flag_key)),
                "total": bool(row.get("_total")),
                "cells": [(c.cell(row), c.css_class(row)) for c in self.html_columns],
            }
            for row in self.rows
        ]

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([c.key for c in self.columns])
        for row in self.rows:
            writer.writerow([fmt.csv_value(row.get(c.key)) for c in self.columns])
        return buf.getvalue()


@dataclass
class FigureBlock:
    uri: str
    alt: str
    caption: str
    data_csv: str | None = None


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    no_data: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    figures: list[FigureBlock] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return not self.no_data


# --------------------------------------------------------------------------- warehouse access


class _Warehouse:
    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        found = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database()"
        ).fetchall()
        self._relations = {(s.lower(), n.lower()) for s, n in found}

    def has(self, schema: str, name: str) -> bool:
        return (schema.lower(), name.lower()) in self._relations

    def rows(self, sql: str, params: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, list(params) if params is not None else None)
        names = [d[0] for d in cur.description]
        return [
            {k: (float(v) if isinstance(v, Decimal) else v) for k, v in zip(names, values)}
            for values in cur.fetchall()
        ]

    def scalar(self, sql: str) -> Any:
        return self.con.execute(sql).fetchone()[0]

    def mart_missing(self, name: str, empty_hint: str = "") -> str | None:
        """Why marts.<name> cannot give data, or None when it has rows."""
        if not self.has("marts", name):
            return f"marts.{name} is not in the warehouse (has `dbt build` run?)."
        if self.scalar(f"SELECT count(*) FROM marts.{name}") == 0:
            return f"marts.{name} is empty." + (f" {empty_hint}" if empty_hint else "")
        return None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# --------------------------------------------------------------------------- sections


def _summary(wh: _Warehouse) -> Section:
    s = Section(
        "summary", "Summary",
        "What the warehouse holds: the jobs measured, their core-hours and CPU efficiency "
        "(Σcpu / Σ(wall × cores) over all jobs, with the mean of per-job efficiencies beside it).",
    )
    facts: list[tuple[str, str, Any]] = []  # label, shown, raw

    why_jobs = wh.mart_missing("job_efficiency")
    totals: dict[str, Any] | None = None
    if why_jobs is None:
        totals = wh.rows("""
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
        """)[0]
        source = "marts.job_efficiency"
    elif wh.mart_missing("efficiency_by_group") is None:
        grain = _group_grain(wh)
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
        source = f"marts.efficiency_by_group ({grain} grain; marts.job_efficiency: {why_jobs})"
    else:
        s.no_data.append(f"No job data: {why_jobs}")

    if totals is not None and totals.get("jobs"):
        first, last = totals.get("first_day"), totals.get("last_day")
        if first is not None and last is not None:
            n_days = (last - first).days + 1
            period = f"{fmt.text(first)} to {fmt.text(last)} ({n_days} day{'s' if n_days != 1 else ''})"
        else:
            period = fmt.MISSING
        facts += [
            ("Period covered", period, f"{fmt.csv_value(first)}/{fmt.csv_value(last)}"),
            ("Jobs", fmt.integer(totals["jobs"]), totals["jobs"]),
            ("Core-hours (wall × cores)", fmt.hours(totals["core_hours"]), totals["core_hours"]),
            ("CPU hours", fmt.hours(totals["cpu_hours"]), totals["cpu_hours"]),
            ("CPU efficiency, Σcpu / Σ(wall × cores)", fmt.pct(totals["efficiency"]), totals["efficiency"]),
            ("Mean job efficiency", fmt.pct(totals["mean_job_efficiency"]), totals["mean_job_efficiency"]),
            ("Jobs with efficiency above 100 % (flagged, not clipped)",
             fmt.integer(totals["jobs_above_one"]), totals["jobs_above_one"]),
        ]
        s.notes.append(f"Job figures from {source}.")
    elif totals is not None:
        s.no_data.append("No job data: the job marts have no jobs.")

    # Rejects and batches: raw tables, shown whether or not the marts exist.
    if wh.has("main", "raw_rejects"):
        n_rejects = wh.scalar("SELECT count(*) FROM main.raw_rejects")
        facts.append(("Rejected records", fmt.integer(n_rejects), n_rejects))
        if n_rejects:
            rows = wh.rows("""
                SELECT record_kind, reason, count(*) AS records
                FROM main.raw_rejects GROUP BY ALL ORDER BY records DESC, record_kind, reason LIMIT 25
            """)
            s.tables.append(Table(
                "rejects_by_reason", "Rejected records by kind and reason (the 25 most frequent)",
                [Column("record_kind", "record kind"), Column("reason", "reason"),
                 Column("records", "records", "int")],
                rows,
            ))
        s.notes.append(
            "Every rejected record is kept with where it came from and why: "
            "SELECT record_kind, source, location, field, reason FROM main.raw_rejects;"
        )
    else:
        facts.append(("Rejected records", "no data (main.raw_rejects is not in the warehouse)", None))
    if wh.has("main", "raw_batches"):
        n_batches = wh.scalar("SELECT count(*) FROM main.raw_batches")
        facts.append(("Batches loaded (main.raw_batches)", fmt.integer(n_batches), n_batches))

    s.facts = [(label, shown) for label, shown, _ in facts]
    s.tables.insert(0, Table(
        "summary", "Summary", [Column("metric", "metric"), Column("value", "value")],
        [{"metric": label, "value": raw} for label, _, raw in facts], shown=False,
    ))
    return s


def _group_grain(wh: _Warehouse) -> str:
    """Week grain when efficiency_by_group has it, else day (the sums are the same)."""
    grains = {r["period_grain"] for r in wh.rows(
        "SELECT DISTINCT period_grain FROM marts.efficiency_by_group")}
    return "week" if "week" in grains or "day" not in grains else "day"


_GROUP_SUMS = """
    sum(jobs) AS jobs,
    sum(cpu_hours) AS cpu_hours,
    sum(wall_hours) AS wall_hours,
    sum(core_wall_hours) AS core_wall_hours,
    sum(cpu_hours) / nullif(sum(core_wall_hours), 0) AS efficiency,
    sum(mean_job_efficiency * jobs)
      / nullif(sum(jobs) FILTER (WHERE mean_job_efficiency IS NOT NULL), 0) AS mean_job_efficiency,
    sum(jobs_above_one) AS jobs_above_one
"""


def _storage_label(value: Any) -> str:
    return "untagged" if value is None else str(value)


def _arm_label(value: Any) -> str:
    return "no arm" if value is None else f"arm {value}"


def _efficiency_columns(*leading: Column) -> list[Column]:
    return [
        *leading,
        Column("jobs", "jobs", "int"),
        Column("cpu_hours", "CPU hours", "hours"),
        Column("wall_hours", "wall hours", "hours"),
        Column("core_wall_hours", "core-hours (wall × cores)", "hours"),
        Column("efficiency", "efficiency Σcpu / Σ(wall × cores)", "pct"),
        Column("mean_job_efficiency", "mean job efficiency", "pct"),
        Column("jobs_above_one", "jobs above 100 %", "int"),
        Column("efficiency_above_one", "group above 100 %", "flag"),
    ]


def _mark_above_one(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        row["efficiency_above_one"] = row["efficiency"] is not None and row["efficiency"] > 1
    return rows


def _efficiency(wh: _Warehouse) -> Section:
    s = Section(
        "efficiency", "Efficiency by storage type and A/B arm",
        "CPU efficiency of each group of jobs as Σcpu hours / Σ(wall hours × cores) — a ratio of "
        "sums, never a mean of ratios — with the mean of per-job efficiencies (weighted by jobs) "
        "beside it. Groups above 100 % are flagged, not clipped.",
    )
    why = wh.mart_missing("efficiency_by_group")
    if why:
        s.no_data.append(why)
        return s
    grain = _group_grain(wh)
    by_storage = _mark_above_one(wh.rows(f"""
        SELECT storage_type, ab_arm, {_GROUP_SUMS}
        FROM marts.efficiency_by_group WHERE period_grain = ?
        GROUP BY ALL ORDER BY storage_type NULLS LAST, ab_arm NULLS LAST
    """, [grain]))
    if not by_storage:
        s.no_data.append(f"marts.efficiency_by_group has no {grain}-grain rows.")
        return s
    by_class = _mark_above_one(wh.rows(f"""
        SELECT storage_type, ab_arm, job_class, {_GROUP_SUMS}
        FROM marts.efficiency_by_group WHERE period_grain = ?
        GROUP BY ALL ORDER BY storage_type NULLS LAST, ab_arm NULLS LAST, job_class NULLS LAST
    """, [grain]))
    flagged = wh.rows("""
        SELECT period_start, storage_type, ab_arm, account, job_class, jobs, cpu_hours,
               core_wall_hours, efficiency, jobs_above_one
        FROM marts.efficiency_by_group
        WHERE period_grain = ? AND (efficiency_above_one OR efficiency > 1)
        ORDER BY efficiency DESC, period_start, storage_type, ab_arm, account, job_class
        LIMIT 50
    """, [grain])

    chart_rows = [
        {**r, "storage_label": _storage_label(r["storage_type"]), "arm_label": _arm_label(r["ab_arm"])}
        for r in by_storage
    ]
    s.figures.append(FigureBlock(
        plots.efficiency_by_storage(chart_rows),
        "Bar chart of CPU efficiency per storage type and A/B arm",
        "Bars: Σcpu / Σ(wall × cores) per storage type and arm. Diamonds: mean job efficiency "
        "weighted by jobs. Dashed line: 100 %.",
        "efficiency_by_storage.csv",
    ))
    storage_col = Column("storage_type", "storage type", null_text="untagged")
    arm_col = Column("ab_arm", "A/B arm", null_text="no arm")
    s.tables.append(Table(
        "efficiency_by_storage", "By storage type and arm",
        _efficiency_columns(storage_col, arm_col), by_storage, flag_key="efficiency_above_one",
    ))
    s.tables.append(Table(
        "efficiency_by_job_class", "By storage type, arm and job class",
        _efficiency_columns(storage_col, arm_col, Column("job_class", "job class", null_text="unknown")),
        by_class, flag_key="efficiency_above_one",
    ))
    if flagged:
        s.tables.append(Table(
            "efficiency_flagged_groups",
            f"Groups ({grain} × storage × arm × account × job class) with efficiency above 100 %"
            + (" — the 50 highest" if len(flagged) == 50 else ""),
            [Column("period_start", f"{grain} starting"), storage_col, arm_col,
             Column("account", "account"), Column("job_class", "job class", null_text="unknown"),
             Column("jobs", "jobs", "int"), Column("cpu_hours", "CPU hours", "hours"),
             Column("core_wall_hours", "core-hours", "hours"), Column("efficiency", "efficiency", "pct"),
             Column("jobs_above_one", "jobs > 100 %", "int")],
            flagged,
        ))
        s.notes.append(
            "Efficiency above 100 % means a job used more CPU than its allocated cores account for "
            "(unbounded threads, or a wrong core count from the batch system): worth a look."
        )
    else:
        s.notes.append(f"No {grain}ly group has efficiency above 100 %.")
    s.notes.append(f"Source: marts.efficiency_by_group, {grain} grain, summed over all periods.")
    return s


def _ab(wh: _Warehouse) -> Section:
    s = Section(
        "ab", "A/B comparison over time",
        "Two groups of jobs on identical hardware that differ in one storage or cache setting "
        "(the A/B arm a scheduler plugin tagged). As in the SLAC SSD-cache study: compare the "
        "CPU and wall hours each arm contributed, and their CPU/wall, over the same period.",
    )
    why = wh.mart_missing("ab_comparison", "No jobs carry an A/B arm tag yet.")
    if why:
        s.no_data.append(why)
        return s

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
        SELECT period_start, period_end, jobs_a, efficiency_a, cpu_per_wall_a,
               jobs_b, efficiency_b, cpu_per_wall_b, efficiency_b - efficiency_a AS efficiency_b_minus_a
        FROM marts.ab_comparison WHERE period_grain = 'week' ORDER BY period_start
    """)

    if days:
        s.figures.append(FigureBlock(
            plots.ab_daily(days),
            "Line chart of daily CPU efficiency of arm A and arm B",
            "Daily CPU efficiency, Σcpu / Σ(wall × cores), of arm A and arm B "
            "(marts.ab_comparison, day grain). Gaps: no jobs of that arm that day.",
            "ab_daily.csv",
        ))
        s.tables.append(Table(
            "ab_daily", "A/B per day",
            [Column("period_start", "day"), Column("jobs_a", "jobs A", "int"),
             Column("cpu_hours_a", "CPU hours A", "hours"),
             Column("core_wall_hours_a", "core-hours A", "hours"),
             Column("efficiency_a", "efficiency A", "pct"), Column("cpu_per_wall_a", "CPU/wall A", "ratio"),
             Column("jobs_b", "jobs B", "int"), Column("cpu_hours_b", "CPU hours B", "hours"),
             Column("core_wall_hours_b", "core-hours B", "hours"),
             Column("efficiency_b", "efficiency B", "pct"), Column("cpu_per_wall_b", "CPU/wall B", "ratio"),
             Column("efficiency_b_minus_a", "efficiency B − A", "pct")],
            days, shown=False,
        ))
    else:
        s.notes.append("No day-grain rows in marts.ab_comparison: no daily plot.")

    if overall:
        table_rows: list[dict[str, Any]] = []
        for o in overall:
            period = f"{fmt.text(o.get('period_start'))} to {fmt.text(o.get('period_end'))}"
            for arm in ("a", "b"):
                table_rows.append({
                    "period": period, "group": f"arm {arm.upper()}",
                    "jobs": o.get(f"jobs_{arm}"),
                    "cpu_hours": o.get(f"cpu_hours_{arm}"), "wall_hours": o.get(f"wall_hours_{arm}"),
                    "cpu_per_wall": o.get(f"cpu_per_wall_{arm}"),
                    "core_wall_hours": o.get(f"core_wall_hours_{arm}"),
                    "efficiency": o.get(f"efficiency_{arm}"),
                })
            a, b = table_rows[-2], table_rows[-1]
            table_rows.append({
                "period": period, "group": "B − A", "_total": True,
                "cpu_per_wall": _diff(b["cpu_per_wall"], a["cpu_per_wall"]),
                "efficiency": _diff(b["efficiency"], a["efficiency"]),
            })
        s.tables.insert(0, Table(
            "ab_overall", "Whole period (SLAC-style table)",
            [Column("period", "period"), Column("group", "group"), Column("jobs", "jobs", "int"),
             Column("cpu_hours", "CPU hours", "hours"), Column("wall_hours", "wall hours", "hours"),
             Column("cpu_per_wall", "CPU/wall", "ratio"),
             Column("core_wall_hours", "core-hours (wall × cores)", "hours"),
             Column("efficiency", "efficiency Σcpu / Σ(wall × cores)", "pct")],
            table_rows,
        ))
        s.notes.append(
            "CPU/wall is Σcpu hours / Σwall hours as in the SLAC tables (it exceeds 1 for multi-core "
            "jobs); efficiency divides by wall × allocated cores. B − A is computed here from the two arms."
        )
    else:
        s.notes.append("No 'all' row in marts.ab_comparison: no whole-period table.")

    if weeks:
        s.tables.append(Table(
            "ab_weekly", "Per week",
            [Column("period_start", "week start"), Column("period_end", "week end"),
             Column("jobs_a", "jobs A", "int"), Column("efficiency_a", "efficiency A", "pct"),
             Column("cpu_per_wall_a", "CPU/wall A", "ratio"),
             Column("jobs_b", "jobs B", "int"), Column("efficiency_b", "efficiency B", "pct"),
             Column("cpu_per_wall_b", "CPU/wall B", "ratio"),
             Column("efficiency_b_minus_a", "efficiency B − A", "pct")],
            weeks,
        ))
    if not (days or overall or weeks):
        s.no_data.append("marts.ab_comparison has no rows of grain 'day', 'week' or 'all'.")
    return s


def _diff(b: Any, a: Any) -> float | None:
    return None if a is None or b is None else float(b) - float(a)


def _cache(wh: _Warehouse) -> Section:
    s = Section(
        "cache", "Cache: delivered vs staged in, hit ratio",
        "Per hour, summed over all cache servers: GB the cache delivered to clients from its "
        "storage (blue) against GB it staged in from the origin (green), as in the SLAC SSD-cache "
        "plot. A cache that stages in about as much as it delivers is not acting as a cache.",
    )
    why = wh.mart_missing("cache_hourly", "No monitored cache server has reported yet.")
    if why:
        s.no_data.append(why)
        return s
    wh.con.execute("SET TimeZone = 'UTC'")
    ratios = """
        sum(hit_accesses)::DOUBLE / nullif(sum(accesses), 0) AS hit_ratio_requests,
        sum(gb_delivered_from_cache)
          / nullif(sum(gb_delivered_from_cache) + sum(gb_staged_in) + sum(gb_bypassed), 0)
          AS hit_ratio_bytes
    """
    hourly = wh.rows(f"""
        SELECT timezone('UTC', CAST("hour" AS TIMESTAMPTZ)) AS "hour",
               sum(accesses) AS accesses, sum(hit_accesses) AS hit_accesses,
               sum(gb_read) AS gb_read, sum(gb_delivered_from_cache) AS gb_delivered_from_cache,
               sum(gb_staged_in) AS gb_staged_in, sum(gb_bypassed) AS gb_bypassed, {ratios}
        FROM marts.cache_hourly GROUP BY 1 ORDER BY 1
    """)
    servers = wh.rows(f"""
        SELECT CASE WHEN grouping(server_host) = 1 THEN 'all servers' ELSE server_host END AS server_host,
               grouping(server_host) = 1 AS _total,
               count(DISTINCT "hour") AS hours,
               sum(accesses) AS accesses, sum(hit_accesses) AS hit_accesses,
               sum(gb_read) AS gb_read, sum(gb_delivered_from_cache) AS gb_delivered_from_cache,
               sum(gb_staged_in) AS gb_staged_in, sum(gb_bypassed) AS gb_bypassed, {ratios}
        FROM marts.cache_hourly
        GROUP BY GROUPING SETS ((server_host), ())
        ORDER BY grouping(server_host), server_host
    """)
    total = next((r for r in servers if r["_total"]), None)
    if total is not None:
        s.facts = [
            ("Hours covered (UTC)",
             f"{fmt.text(hourly[0]['hour'])} to {fmt.text(hourly[-1]['hour'])} ({len(hourly)} hours with data)"),
            ("GB read by clients", fmt.gb(total["gb_read"])),
            ("GB delivered from cache", fmt.gb(total["gb_delivered_from_cache"])),
            ("GB staged in", fmt.gb(total["gb_staged_in"])),
            ("GB bypassed", fmt.gb(total["gb_bypassed"])),
            ("Hit ratio by requests", fmt.pct(total["hit_ratio_requests"])),
            ("Hit ratio by bytes", fmt.pct(total["hit_ratio_bytes"])),
        ]
    s.figures.append(FigureBlock(
        plots.cache_gb_per_hour(hourly),
        "Line chart of GB per hour delivered from cache and staged in",
        "GB/hour delivered from the cache (blue) and staged into it (green), each point one hour (UTC).",
        "cache_hourly.csv",
    ))
    s.figures.append(FigureBlock(
        plots.cache_hit_ratio(hourly),
        "Line chart of hourly cache hit ratio by requests and by bytes",
        "Hit ratio per hour by requests (accesses served entirely from the cache / accesses) and "
        "by bytes (GB delivered from cache / GB the cache reported as hit, staged in or bypassed).",
        "cache_hourly.csv",
    ))
    s.tables.append(Table(
        "cache_hourly", "Per hour",
        [Column("hour", "hour (UTC)"), Column("accesses", "accesses", "int"),
         Column("hit_accesses", "hit accesses", "int"), Column("gb_read", "GB read", "gb"),
         Column("gb_delivered_from_cache", "GB from cache", "gb"),
         Column("gb_staged_in", "GB staged in", "gb"), Column("gb_bypassed", "GB bypassed", "gb"),
         Column("hit_ratio_requests", "hit ratio (requests)", "pct"),
         Column("hit_ratio_bytes", "hit ratio (bytes)", "pct")],
        hourly, shown=False,
    ))
    s.tables.append(Table(
        "cache_by_server", "By cache server, whole period",
        [Column("server_host", "server"), Column("hours", "hours", "int"),
         Column("accesses", "accesses", "int"), Column("hit_accesses", "hit accesses", "int"),
         Column("gb_read", "GB read", "gb"), Column("gb_delivered_from_cache", "GB from cache", "gb"),
         Column("gb_staged_in", "GB staged in", "gb"), Column("gb_bypassed", "GB bypassed", "gb"),
         Column("hit_ratio_requests", "hit ratio (requests)", "pct"),
         Column("hit_ratio_bytes", "hit ratio (bytes)", "pct")],
        servers,
    ))
    s.notes.append(
        "Hit ratios are ratios of sums over servers and hours, as marts.cache_hourly defines them "
        "per server and hour: Σhit accesses / Σaccesses, and ΣGB from cache / Σ(GB from cache + "
        "staged in + bypassed). GB read is what the clients read (read bytes at close); GB = 1e9 bytes."
    )
    return s


def _price_performance(wh: _Warehouse) -> Section:
    s = Section(
        "price_performance", "Storage price / performance",
        "What each worker-node storage configuration costs against what it delivered, in the "
        "style of Table 4 of the Glasgow SSD study: unit price, price per unit of node throughput "
        "and price per GB, with the efficiency and node throughput measured here. Configurations "
        "in the catalogue that no node runs show \"not measured\".",
    )
    why = wh.mart_missing("storage_price_performance", "Load a storage catalogue first.")
    if why:
        s.no_data.append(why)
        return s
    rows = wh.rows("""
        SELECT config_name, storage_type, device_model, devices_per_node, unit_price, currency,
               price_per_node, capacity_gb_per_node, price_per_gb, price_per_throughput,
               efficiency, node_throughput, nodes, jobs
        FROM marts.storage_price_performance
        ORDER BY price_per_throughput NULLS LAST, config_name
    """)
    nm = fmt.NOT_MEASURED
    s.tables.append(Table(
        "storage_price_performance", "Price / performance per configuration",
        [Column("config_name", "configuration"), Column("storage_type", "storage type"),
         Column("device_model", "device"), Column("devices_per_node", "devices / node", "int"),
         Column("unit_price", "unit price", "money", suffix_key="currency"),
         Column("currency", "currency", csv_only=True),
         Column("price_per_node", "price / node", "money"),
         Column("capacity_gb_per_node", "GB / node", "num"),
         Column("price_per_gb", "price / GB", "money"),
         Column("price_per_throughput", "price / throughput", "money", nm),
         Column("efficiency", "measured efficiency", "pct", nm),
         Column("node_throughput", "node throughput (core-h / node-h)", "num", nm),
         Column("nodes", "nodes", "int", nm), Column("jobs", "jobs", "int", nm)],
        rows,
    ))
    currencies = {r["currency"] for r in rows if r["currency"]}
    if len(currencies) > 1:
        s.notes.append(
            f"Prices are in several currencies ({', '.join(sorted(currencies))}): compare rows of the "
            "same currency only."
        )
    s.notes.append(
        "Node throughput is CPU core-hours delivered per node-hour over the observed period "
        "(Glasgow's throughput: at most the node's cores when fully busy). Price / throughput = "
        "price per node / node throughput; price / GB = price per node / GB per node "
        "(both from marts.storage_price_performance)."
    )
    return s


# --------------------------------------------------------------------------- analytics sections
# Shown when the warehouse has at least one of their marts (a dbt project that builds them);
# each says "no data" on its own when its mart is missing or empty.

_AB_CONCLUSION_NOTE = (
    "Each difference B − A comes with a 95 % bootstrap interval: whole hours (by job end time) "
    "are resampled with both arms' jobs of the hour together, because jobs ending in the same hour "
    "share the cache's contents and the servers' load. The p-value is a permutation test that "
    "swaps the arms within hours. 'B higher' / 'A higher' means the interval excludes 0; "
    "'insufficient data' (highlighted) means an arm has too few jobs, core-hours or hours with "
    "both arms to conclude, whatever the interval says."
)


def _ab_uncertainty(wh: _Warehouse) -> Section:
    s = Section(
        "ab_uncertainty", "A/B difference with confidence intervals",
        "Is arm B's CPU efficiency really different from arm A's, and are there enough data to "
        "say so? The A/B comparison with its uncertainty, for the whole site and per storage "
        "type, job class, account and VO, and again for the hours when the cache hit ratio was "
        "high (the SLAC study's 13–15 September comparison).",
    )
    why = wh.mart_missing("ab_uncertainty", "No jobs carry an A/B arm tag yet.")
    if why:
        s.no_data.append(why)
        return s
    days = wh.rows("""
        SELECT period_start, jobs_a, jobs_b, efficiency_a, efficiency_b, efficiency_difference,
               efficiency_ci_low, efficiency_ci_high, efficiency_p_value, enough_data, conclusion, warning
        FROM marts.ab_uncertainty
        WHERE subset = 'all' AND grouping = 'site' AND period_grain = 'day' ORDER BY period_start
    """)
    overall = wh.rows("""
        SELECT subset, grouping, group_value, period_start, period_end, jobs_a, jobs_b,
               core_wall_hours_a, core_wall_hours_b, efficiency_a, efficiency_b, efficiency_difference,
               efficiency_ci_low, efficiency_ci_high, efficiency_p_value,
               cpu_per_wall_a, cpu_per_wall_b, cpu_per_wall_difference, cpu_per_wall_ci_low,
               cpu_per_wall_ci_high, enough_data, NOT enough_data AS insufficient, conclusion, warning
        FROM marts.ab_uncertainty
        WHERE period_grain = 'all'
        ORDER BY subset, grouping <> 'site', grouping, group_value
    """)
    site = next((r for r in overall if r["subset"] == "all" and r["grouping"] == "site"), None)
    if site is not None:
        ci = f"{fmt.pct(site['efficiency_ci_low'])} to {fmt.pct(site['efficiency_ci_high'])}"
        s.facts = [
            ("Whole period, site: efficiency B − A", fmt.pct(site["efficiency_difference"])),
            ("95 % interval", ci),
            ("Permutation p-value", fmt.number(site["efficiency_p_value"])),
            ("Conclusion", f"{site['conclusion']}" + (f" ({site['warning']})" if site["warning"] else "")),
        ]
    if days:
        s.figures.append(FigureBlock(
            plots.ab_difference_with_ci(days),
            "Daily efficiency difference between arm B and arm A with 95 % confidence intervals",
            "Daily efficiency difference B − A (whole site) with its 95 % bootstrap interval. Hollow "
            "grey points: days without enough data to conclude. Dashed line: no difference.",
            "ab_uncertainty_daily.csv",
        ))
        s.tables.append(Table(
            "ab_uncertainty_daily", "A/B difference per day", [
                Column("period_start", "day"), Column("jobs_a", "jobs A", "int"),
                Column("jobs_b", "jobs B", "int"), Column("efficiency_a", "efficiency A", "pct"),
                Column("efficiency_b", "efficiency B", "pct"),
                Column("efficiency_difference", "B − A", "pct"),
                Column("efficiency_ci_low", "95 % CI low", "pct"),
                Column("efficiency_ci_high", "95 % CI high", "pct"),
                Column("efficiency_p_value", "p-value", "num"),
                Column("enough_data", "enough data", "text"), Column("conclusion", "conclusion"),
                Column("warning", "why not enough", null_text="")],
            days, shown=False,
        ))
    columns = [
        Column("group_value", "group"), Column("grouping", "grouped by"),
        Column("jobs_a", "jobs A", "int"), Column("jobs_b", "jobs B", "int"),
        Column("core_wall_hours_a", "core-hours A", "hours", csv_only=True),
        Column("core_wall_hours_b", "core-hours B", "hours", csv_only=True),
        Column("efficiency_a", "efficiency A", "pct"), Column("efficiency_b", "efficiency B", "pct"),
        Column("efficiency_difference", "B − A", "pct"),
        Column("efficiency_ci_low", "95 % CI low", "pct"), Column("efficiency_ci_high", "95 % CI high", "pct"),
        Column("efficiency_p_value", "p-value", "num"),
        Column("cpu_per_wall_a", "CPU/wall A", "ratio"), Column("cpu_per_wall_b", "CPU/wall B", "ratio"),
        Column("cpu_per_wall_difference", "CPU/wall B − A", "ratio", csv_only=True),
        Column("cpu_per_wall_ci_low", "CPU/wall CI low", "ratio", csv_only=True),
        Column("cpu_per_wall_ci_high", "CPU/wall CI high", "ratio", csv_only=True),
        Column("conclusion", "conclusion"), Column("warning", "why not enough", null_text=""),
        Column("subset", "subset", csv_only=True), Column("period_start", "from", csv_only=True),
        Column("period_end", "to (exclusive)", csv_only=True),
    ]
    for subset, name, caption in (
        ("all", "ab_uncertainty_overall", "Whole period, all jobs"),
        ("high_hit_ratio", "ab_uncertainty_high_hit",
         "Whole period, jobs ending in hours with a high cache hit ratio (SLAC's 13–15 September view)"),
    ):
        rows = [r for r in overall if r["subset"] == subset]
        if rows:
            s.tables.append(Table(name, caption, columns, rows, flag_key="insufficient"))
        elif subset == "high_hit_ratio":
            s.notes.append("No hour reached the high cache hit ratio threshold (dbt var high_hit_ratio): "
                           "no high-hit-ratio comparison.")
    if not (days or overall):
        s.no_data.append("marts.ab_uncertainty has no rows of grain 'day' or 'all'.")
    s.notes.append(_AB_CONCLUSION_NOTE)
    s.notes.append("Source: marts.ab_uncertainty (weekly rows and all groupings there and in "
                   "sql/ab_with_confidence.sql).")
    return s


def _occupancy(wh: _Warehouse) -> Section:
    s = Section(
        "occupancy", "Efficiency and throughput at full occupancy",
        "A half-empty node flatters every disk, so the Glasgow study counted only the periods when "
        "its nodes were fully occupied (its Table 3). Here, per storage type, the CPU efficiency and "
        "throughput over every node-hour beside the same over the fully occupied node-hours only.",
    )
    why = wh.mart_missing("occupancy_efficiency", "No node ran finished jobs yet.")
    if why:
        s.no_data.append(why)
        return s
    rows = wh.rows("""
        SELECT storage_type, scope, nodes, node_hours, share_of_node_hours, jobs_ended, cpu_hours,
               allocated_core_hours, mean_occupancy, efficiency, throughput, jobs_per_node_hour
        FROM marts.occupancy_efficiency ORDER BY storage_type NULLS LAST, scope
    """)
    for r in rows:
        r["storage_type"] = _storage_label(r["storage_type"])
    s.figures.append(FigureBlock(
        plots.occupancy_efficiency(rows),
        "Bar chart of CPU efficiency per storage type, all node-hours and fully occupied node-hours",
        "CPU efficiency per storage type over every node-hour (left bar) and over the node-hours when "
        "the node was fully occupied (right bar).",
        "occupancy_efficiency.csv",
    ))
    s.tables.append(Table(
        "occupancy_efficiency", "Per storage type: all node-hours and fully occupied ones", [
            Column("storage_type", "storage type"), Column("scope", "node-hours"),
            Column("nodes", "nodes", "int"), Column("node_hours", "node-hours", "int"),
            Column("share_of_node_hours", "share of node-hours", "pct"),
            Column("mean_occupancy", "mean occupancy", "pct"),
            Column("efficiency", "efficiency", "pct"),
            Column("throughput", "throughput (core-h / node-h)", "num"),
            Column("jobs_per_node_hour", "jobs / node-hour", "num"),
            Column("jobs_ended", "jobs ended", "int", csv_only=True),
            Column("cpu_hours", "CPU hours", "hours", csv_only=True),
            Column("allocated_core_hours", "allocated core-hours", "hours", csv_only=True)],
        rows,
    ))
    if wh.mart_missing("storage_price_performance") is None:
        cols = {r["column_name"] for r in wh.rows(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'marts' AND table_name = 'storage_price_performance'")}
        wanted = ["config_name", "currency", "price_per_node", "price_per_efficiency_point",
                  "efficiency_full_occupancy", "node_throughput_full_occupancy",
                  "price_per_throughput_full_occupancy", "endurance_tbw", "gb_written_per_device_day",
                  "expected_lifetime_years"]
        if set(wanted) <= cols:
            price = wh.rows(f"""
                SELECT {', '.join(wanted)} FROM marts.storage_price_performance
                ORDER BY price_per_throughput_full_occupancy NULLS LAST, config_name
            """)
            nm = fmt.NOT_MEASURED
            s.tables.append(Table(
                "storage_full_occupancy_endurance",
                "Price at full occupancy, per efficiency point, and SSD endurance", [
                    Column("config_name", "configuration"), Column("currency", "currency", csv_only=True),
                    Column("price_per_node", "price / node", "money", suffix_key="currency"),
                    Column("price_per_efficiency_point", "price / efficiency point", "money", nm),
                    Column("efficiency_full_occupancy", "efficiency when full", "pct", nm),
                    Column("node_throughput_full_occupancy", "throughput when full", "num", nm),
                    Column("price_per_throughput_full_occupancy", "price / throughput when full", "money", nm),
                    Column("endurance_tbw", "endurance (TBW)", "num", "not rated"),
                    Column("gb_written_per_device_day", "GB written / device / day", "gb", nm),
                    Column("expected_lifetime_years", "expected lifetime (years)", "num", fmt.MISSING)],
                price,
            ))
            s.notes.append(
                "Expected lifetime = rated endurance (TB written) / the GB written per device and day "
                "at this site's rate (jobs' scratch writes, including staged-in inputs), in years."
            )
    s.notes.append(
        "Fully occupied: allocated cores ≥ 99 % of the node's slots over the hour (dbt var "
        "full_occupancy). A job's CPU is spread over its hours in proportion to its time in each. "
        "Source: marts.occupancy_efficiency, marts.node_occupancy_hourly, marts.storage_price_performance."
    )
    return s


def _fairness(wh: _Warehouse) -> Section:
    s = Section(
        "fairness", "Client fairness",
        "Does each storage server share its bandwidth fairly among the clients reading from it at "
        "the same time? As in the Fermilab study: the spread of per-client bandwidth around the "
        "mean, the fastest/slowest ratio and Jain's fairness index, per server and time window.",
    )
    why = wh.mart_missing("client_fairness", "No window had two or more clients reading from one server.")
    if why:
        s.no_data.append(why)
        return s
    groups = wh.rows("""
        SELECT server_host, window_start, clients, jain_index, bandwidth_cv, bandwidth_ratio,
               completion_time_ratio, mean_bandwidth_mb_s
        FROM marts.client_fairness ORDER BY server_host, window_start
    """)
    servers = wh.rows("""
        SELECT server_host, count(*) AS windows, avg(clients) AS mean_clients,
               median(jain_index) AS median_jain_index, min(jain_index) AS worst_jain_index,
               median(bandwidth_cv) AS median_bandwidth_cv, median(bandwidth_ratio) AS median_bandwidth_ratio,
               median(completion_time_ratio) AS median_completion_time_ratio,
               median(mean_bandwidth_mb_s) AS median_client_mb_s
        FROM marts.client_fairness GROUP BY server_host ORDER BY median_jain_index, server_host
    """)
    s.figures.append(FigureBlock(
        plots.fairness_distribution(groups),
        "Histogram of Jain's fairness index over server and time-window groups",
        "Jain's fairness index of the clients' bandwidths for each server and time window "
        "(1 = every client got the same bandwidth; 1/n = one client got everything).",
        "client_fairness_windows.csv",
    ))
    s.tables.append(Table(
        "client_fairness_windows", "Per server and window",
        [Column("server_host", "server"), Column("window_start", "window start"),
         Column("clients", "clients", "int"), Column("jain_index", "Jain's index", "num"),
         Column("bandwidth_cv", "bandwidth CV", "pct"), Column("bandwidth_ratio", "fastest / slowest", "ratio"),
         Column("completion_time_ratio", "slowest / fastest time", "ratio"),
         Column("mean_bandwidth_mb_s", "mean MB/s", "num")],
        groups, shown=False,
    ))
    s.tables.append(Table(
        "client_fairness_by_server", "By server (medians over windows)",
        [Column("server_host", "server"), Column("windows", "windows", "int"),
         Column("mean_clients", "mean clients", "num"),
         Column("median_jain_index", "median Jain's index", "num"),
         Column("worst_jain_index", "worst Jain's index", "num"),
         Column("median_bandwidth_cv", "median bandwidth spread (CV)", "pct"),
         Column("median_bandwidth_ratio", "median fastest / slowest bandwidth", "ratio"),
         Column("median_completion_time_ratio", "median slowest / fastest time", "ratio"),
         Column("median_client_mb_s", "median client MB/s", "num")],
        servers,
    ))
    s.notes.append(
        "Fermilab found 49 Lustre clients within about 15 % of the mean bandwidth, the slowest taking "
        "1.77 times as long as the fastest. A client's bandwidth = its bytes read / its seconds of "
        "open access in the window; the completion-time ratio compares clients only when they read "
        "similar amounts. Source: marts.client_fairness."
    )
    return s


def _popularity(wh: _Warehouse) -> Section:
    s = Section(
        "popularity", "File popularity",
        "Which files are hot? The SLAC caching algorithms' view: accesses in each of the last ten "
        "12-hour periods, reads in the recent window and the fraction of each file they read, ranked "
        "by reads × fraction (SLAC algorithm 2).",
    )
    why = wh.mart_missing("file_popularity", "No file accesses yet.")
    if why:
        s.no_data.append(why)
        return s
    counts = [r["reads_recent"] for r in wh.rows("SELECT reads_recent FROM marts.file_popularity")]
    top = wh.rows("""
        SELECT popularity_rank, file_lfn, file_size_bytes / 1e9 AS file_gb, reads_recent,
               mean_read_fraction, score, accesses_p01, accesses_p02, accesses_p03, accesses_p04,
               accesses_p05, accesses_p06, accesses_p07, accesses_p08, accesses_p09, accesses_p10,
               reference_time
        FROM marts.file_popularity ORDER BY popularity_rank LIMIT 25
    """)
    totals = wh.rows("""
        SELECT count(*) AS files, sum(reads_recent) AS reads, any_value(recent_days) AS recent_days,
               any_value(reference_time) AS reference_time
        FROM marts.file_popularity
    """)[0]
    reads = sorted(counts, reverse=True)
    total = sum(reads) or 1
    top_share = sum(reads[: max(1, len(reads) // 10)]) / total
    s.facts = [
        ("As of", fmt.text(totals["reference_time"])),
        (f"Files read in the last {totals['recent_days']} days", fmt.integer(totals["files"])),
        ("Reads in that window", fmt.integer(totals["reads"])),
        ("Share of reads going to the top 10 % of files", fmt.pct(top_share)),
    ]
    s.figures.append(FigureBlock(
        plots.popularity_distribution(counts),
        "Rank-frequency plot of reads per file",
        "Reads per file in the recent window against the file's rank (log-log): a straight line is "
        "Zipf-like popularity, the case where a small cache holds most of the reads.",
        "file_popularity_top.csv",
    ))
    s.tables.append(Table(
        "file_popularity_top", "The 25 highest-ranked files",
        [Column("popularity_rank", "rank", "int"), Column("file_lfn", "file"),
         Column("file_gb", "GB", "gb"), Column("reads_recent", "recent reads", "int"),
         Column("mean_read_fraction", "mean fraction read", "pct"), Column("score", "score", "num"),
         *[Column(f"accesses_p{p:02d}", f"P{p}", "int") for p in range(1, 11)]],
        top,
    ))
    s.notes.append("P1 … P10: accesses in each 12-hour period before the reference time, P1 the latest. "
                   "Source: marts.file_popularity (all files there and in sql/file_popularity.sql).")
    return s


_ANALYSIS_SECTIONS: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("ab_uncertainty", "A/B difference with confidence intervals", _ab_uncertainty),
    ("occupancy", "Efficiency and throughput at full occupancy", _occupancy),
    ("fairness", "Client fairness", _fairness),
    ("popularity", "File popularity", _popularity),
)
def _prediction(wh: _Warehouse) -> Section:
    s = Section(
        "prediction", "Measured vs predicted efficiency, and what-if configurations",
        "The simulator's efficiency model, calibrated on this site's own jobs, next to the "
        "measurements: for each configuration the site ran, the measured CPU efficiency, the model's "
        "prediction with its 95 % interval, and its prediction when that configuration was left out "
        "of the fit (the honest test). Below, configurations not deployed: storage type × jobs per "
        "node × cache, for the same workload.",
    )
    rows = wh.rows("""
        SELECT job_class, storage_type, ab_arm, measured_jobs, measured_efficiency, predicted_efficiency,
               efficiency_low, efficiency_high, loo_predicted_efficiency, loo_prediction_error,
               NOT measured_within_interval AS outside, mean_concurrent_jobs, model_version
        FROM marts.efficiency_measured_vs_predicted ORDER BY job_class, storage_type, ab_arm
    """)
    if not rows:
        s.no_data.append("marts.efficiency_measured_vs_predicted is empty: run `tierlens simulate efficiency`.")
        return s
    s.figures.append(FigureBlock(
        plots.measured_vs_predicted(rows), "Measured against predicted efficiency per configuration",
        "Each point is a storage type × arm: measured efficiency (x) against predicted (y) with the "
        "95 % interval; open circles are the leave-one-out predictions. On the diagonal the model is "
        "exact.", "efficiency_measured_vs_predicted.csv"))
    s.tables.append(Table(
        "efficiency_measured_vs_predicted", "Measured vs predicted CPU efficiency",
        [Column("job_class", "job class"), Column("storage_type", "storage type"),
         Column("ab_arm", "arm"), Column("measured_jobs", "jobs", "int"),
         Column("mean_concurrent_jobs", "jobs / node", "num"),
         Column("measured_efficiency", "measured", "pct"), Column("predicted_efficiency", "predicted", "pct"),
         Column("efficiency_low", "95 % low", "pct"), Column("efficiency_high", "95 % high", "pct"),
         Column("loo_predicted_efficiency", "left out of fit", "pct"),
         Column("loo_prediction_error", "left out − measured", "pct"),
         Column("outside", "outside interval", "flag"), Column("model_version", "model", csv_only=True)],
        rows, flag_key="outside"))
    grid = wh.rows("""
        SELECT job_class, storage_type, jobs_per_node, cache, predicted_efficiency, efficiency_low,
               efficiency_high, jobs_per_node_hour, extrapolated
        FROM marts.efficiency_what_if ORDER BY job_class, cache, jobs_per_node, predicted_efficiency DESC
    """)
    if grid:
        s.tables.append(Table(
            "efficiency_what_if", "What if: predicted efficiency and throughput of configurations",
            [Column("job_class", "job class"), Column("storage_type", "storage type"),
             Column("jobs_per_node", "jobs / node", "num"), Column("cache", "cache"),
             Column("predicted_efficiency", "efficiency", "pct"), Column("efficiency_low", "95 % low", "pct"),
             Column("efficiency_high", "95 % high", "pct"),
             Column("jobs_per_node_hour", "jobs / node-hour", "num"),
             Column("extrapolated", "extrapolated", "flag")],
            grid, flag_key="extrapolated"))
    s.notes.append(
        "Model: each node is a closed queueing network (jobs alternate between their cores and the "
        "node's scratch device, solved by mean value analysis); remote bytes cost a fitted time per "
        "byte by route. Fitted per storage type from marts.job_io_profile; cache what-ifs replay the "
        "jobs' own file accesses. Sources: marts.efficiency_measured_vs_predicted, marts.efficiency_what_if.")
    return s


_PREDICTION_SECTIONS: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("prediction", "Measured vs predicted efficiency, and what-if configurations", _prediction),
)


# --------------------------------------------------------------------------- site operations
# Changes before/after, efficiency against job input size, and the completeness account
# (models/marts/operations). The verdict opens the report; the others follow the rest.

#: Shown first (verdict) and after the others when the warehouse has any of OPERATIONS_MARTS.
OPERATIONS_TOP_IDS = ("verdict",)
OPERATIONS_SECTION_IDS = ("changes", "input_size", "completeness")
OPERATIONS_MARTS = ("data_completeness", "change_effects", "efficiency_by_input_size")
OPERATIONS_CSV_NAMES = (
    "verdict.csv", "change_effects.csv", "change_effects_strata.csv", "efficiency_daily.csv",
    "efficiency_by_input_size.csv", "completeness_by_cluster.csv", "completeness_by_server.csv",
    "completeness_collector.csv", "completeness_rejects.csv",
)


def _share_sql(measure: str) -> str:
    return (f"sum(numerator) filter (where measure = '{measure}') "
            f"/ nullif(sum(denominator) filter (where measure = '{measure}'), 0)")


def _verdict(wh: _Warehouse) -> Section:
    s = Section(
        "verdict", "How much of the data is behind these figures",
        "One line per week (ISO weeks, UTC): the share of CPU hours from jobs a plugin tagged with "
        "their storage and arm, and the share of the bytes read from XRootD servers that joined to a "
        "job (exactly or by inference). What is missing is missing from every figure below.",
    )
    why = wh.mart_missing("data_completeness")
    if why:
        s.no_data.append(why)
        return s
    rows = wh.rows(f"""
        SELECT cast(date_trunc('week', "day") AS date) AS week_start,
               {_share_sql('cpu_hours_tagged')} AS cpu_hours_tagged,
               sum(denominator) FILTER (WHERE measure = 'cpu_hours_tagged') AS cpu_hours,
               {_share_sql('bytes_joined')} AS bytes_joined,
               sum(numerator) FILTER (WHERE measure = 'kernel_drops') AS kernel_drops,
               sum(numerator) FILTER (WHERE measure = 'rejected_records') AS rejected_records
        FROM marts.data_completeness GROUP BY ALL ORDER BY week_start
    """)
    for r in rows:
        parts = [f"{fmt.pct(r['cpu_hours_tagged'])} of CPU hours tagged" if r["cpu_hours"] else "no jobs",
                 f"{fmt.pct(r['bytes_joined'])} of bytes joined to jobs" if r["bytes_joined"] is not None
                 else "no file accesses"]
        if r["kernel_drops"]:
            parts.append(f"{fmt.integer(r['kernel_drops'])} datagrams dropped by the kernel")
        if r["rejected_records"]:
            parts.append(f"{fmt.integer(r['rejected_records'])} records rejected")
        r["verdict"] = ", ".join(parts)
        s.facts.append((f"Week of {fmt.text(r['week_start'])}", r["verdict"]))
    s.tables.append(Table(
        "verdict", "Verdict per week",
        [Column("week_start", "week starting"), Column("cpu_hours_tagged", "CPU hours tagged", "pct"),
         Column("cpu_hours", "CPU hours", "hours"), Column("bytes_joined", "bytes joined", "pct"),
         Column("kernel_drops", "kernel drops", "int"), Column("rejected_records", "rejected", "int"),
         Column("verdict", "verdict")], rows, shown=False))
    s.notes.append("Source: marts.data_completeness (section Data completeness below has the detail).")
    return s


def _changes(wh: _Warehouse) -> Section:
    s = Section(
        "changes", "Site changes: efficiency before and after",
        "Each recorded change (`tierlens change add`) against the jobs in its scope, in a window "
        "before and after it. Where the change touched only some nodes, the other nodes are the "
        "control (difference in differences). The effect is compared within job class × bytes "
        "read per job, so a week of heavier jobs does not pass for an effect; the plain difference "
        "is beside it. 95 % intervals: hour-block bootstrap, as for the A/B trial.",
    )
    why = wh.mart_missing("change_effects", "Record changes with `tierlens change add`.")
    if why:
        s.no_data.append(why)
        return s
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
    if wh.has("marts", "job_efficiency"):
        days = wh.rows("""
            SELECT "day", sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0) AS efficiency,
                   count(*) AS jobs, sum(core_wall_seconds) / 3600.0 AS core_hours
            FROM marts.job_efficiency GROUP BY ALL ORDER BY "day"
        """)
        if days:
            marks = [{"changed_at": c["changed_at"], "label": c["change_id"]} for c in changes]
            s.figures.append(FigureBlock(
                plots.efficiency_timeline_with_changes(days, marks),
                "Daily CPU efficiency of the site with the recorded changes marked",
                "Line: Σcpu / Σ(wall × cores) of the jobs ending each UTC day. Dashed lines: recorded changes.",
                "efficiency_daily.csv"))
            s.tables.append(Table(
                "efficiency_daily", "Daily efficiency",
                [Column("day", "day"), Column("jobs", "jobs", "int"), Column("core_hours", "core-hours", "hours"),
                 Column("efficiency", "efficiency", "pct")], days, shown=False))
    s.tables.append(Table(
        "change_effects", "Before and after each change (in scope; control where there is one)",
        [Column("changed_at", "changed at"), Column("description", "change"), Column("scope", "scope"),
         Column("comparison", "comparison"), Column("jobs_scope_before", "jobs before", "int"),
         Column("jobs_scope_after", "jobs after", "int"),
         Column("core_hours_behind", "core-hours behind", "hours"),
         Column("efficiency_scope_before", "before", "pct"), Column("efficiency_scope_after", "after", "pct"),
         Column("efficiency_control_before", "control before", "pct"),
         Column("efficiency_control_after", "control after", "pct"),
         Column("effect", "effect (stratified)", "pct"), Column("effect_ci_low", "95 % low", "pct"),
         Column("effect_ci_high", "95 % high", "pct"), Column("effect_unstratified", "unstratified", "pct"),
         Column("effect_unstratified_ci_low", "unstrat. low", "pct", csv_only=True),
         Column("effect_unstratified_ci_high", "unstrat. high", "pct", csv_only=True),
         Column("strata_core_hours_share", "share in strata", "pct", csv_only=True),
         Column("conclusion", "conclusion"), Column("conclusion_unstratified", "unstratified says", csv_only=True),
         Column("weak", "caveat", "flag"), Column("warning", "why"), Column("change_id", "id", csv_only=True)],
        changes, flag_key="weak"))
    strata = wh.rows("""
        SELECT change_id, job_class, bytes_read_bin, jobs_scope_before, jobs_scope_after,
               efficiency_scope_before, efficiency_scope_after, effect, effect_ci_low, effect_ci_high, conclusion
        FROM marts.change_effects WHERE row_kind = 'stratum' ORDER BY changed_at, change_id, job_class, bytes_read_bin
    """)
    s.tables.append(Table(
        "change_effects_strata", "Per stratum", [Column(k, k) for k in strata[0]] if strata else
        [Column("change_id", "change_id")], strata, shown=False))
    s.notes.append("A flagged row has a caveat (too few jobs, a short window, an overlapping change or no "
                   "control): read its interval with that in mind. Sources: marts.change_effects, "
                   "marts.job_efficiency; every stratum in change_effects_strata.csv.")
    return s


def _input_size(wh: _Warehouse) -> Section:
    s = Section(
        "input_size", "Efficiency against job input size",
        "IFCA's table: CPU efficiency of jobs by the bytes they read, per storage type over the "
        "whole period, and before against after each change for the jobs in its scope. I/O-heavy "
        "jobs show first where storage is the bottleneck.",
    )
    why = wh.mart_missing("efficiency_by_input_size")
    if why:
        s.no_data.append(why)
        return s
    rows = wh.rows("""
        SELECT period, change_id, change_window, coalesce(storage_type, 'unknown') AS storage_type,
               bytes_read_bin, min(bytes_read_bin_order) AS bin_order, sum(jobs) AS jobs,
               sum(cpu_hours) AS cpu_hours, sum(core_wall_hours) AS core_wall_hours,
               sum(cpu_hours) / nullif(sum(core_wall_hours), 0) AS efficiency
        FROM marts.efficiency_by_input_size
        WHERE period = 'all' OR in_change_scope
        GROUP BY ALL ORDER BY period, storage_type, bin_order
    """)
    overall = [dict(r, series=r["storage_type"], bin=r["bytes_read_bin"]) for r in rows if r["period"] == "all"]
    overall.sort(key=lambda r: r["bin_order"])
    if overall:
        s.figures.append(FigureBlock(
            plots.efficiency_by_input_size(overall), "CPU efficiency against bytes read per job, per storage type",
            "Σcpu / Σ(wall × cores) of the jobs in each bytes-read bin, one line per storage type.",
            "efficiency_by_input_size.csv"))
    s.tables.append(Table(
        "efficiency_by_input_size", "Efficiency by bytes read per job (all jobs; in-scope jobs around each change)",
        [Column("period", "period"), Column("storage_type", "storage type"), Column("bytes_read_bin", "bytes read"),
         Column("jobs", "jobs", "int"), Column("core_wall_hours", "core-hours", "hours"),
         Column("efficiency", "efficiency", "pct"), Column("change_id", "change", csv_only=True)],
        rows))
    s.notes.append("Bytes read per job: the batch system's figure, else the bytes of its exactly matched file "
                   "accesses. Source: marts.efficiency_by_input_size.")
    return s


def _completeness(wh: _Warehouse) -> Section:
    s = Section(
        "completeness", "Data completeness",
        "What share of what happened reached tierlens and was joined: jobs tagged by a plugin, jobs "
        "whose file accesses were found (exactly through the identity the plugin handed the job, or "
        "inferred from host and time), accesses and bytes that joined no job, what the collector "
        "lost, and the records rejected on loading.",
    )
    why = wh.mart_missing("data_completeness")
    if why:
        s.no_data.append(why)
        return s
    pivot = lambda measures: ", ".join(  # noqa: E731
        f"sum(numerator) FILTER (WHERE measure = '{m}') / nullif(sum(denominator) FILTER (WHERE measure = '{m}'), 0)"
        f" AS {m}" for m in measures)
    by_cluster = wh.rows(f"""
        SELECT "day", subject AS cluster,
               sum(denominator) FILTER (WHERE measure = 'jobs_tagged') AS jobs,
               sum(denominator) FILTER (WHERE measure = 'cpu_hours_tagged') AS cpu_hours,
               {pivot(['jobs_tagged', 'cpu_hours_tagged', 'jobs_with_exact_accesses',
                       'jobs_with_inferred_accesses_only', 'jobs_without_accesses'])},
               sum(numerator) FILTER (WHERE measure = 'tags_without_job') AS tags_without_job
        FROM marts.data_completeness WHERE grain = 'cluster' GROUP BY ALL ORDER BY "day", cluster
    """)
    s.tables.append(Table(
        "completeness_by_cluster", "Jobs per day and cluster",
        [Column("day", "day"), Column("cluster", "cluster"), Column("jobs", "jobs", "int"),
         Column("cpu_hours", "CPU hours", "hours"), Column("jobs_tagged", "jobs tagged", "pct"),
         Column("cpu_hours_tagged", "CPU hours tagged", "pct"),
         Column("jobs_with_exact_accesses", "accesses exact", "pct"),
         Column("jobs_with_inferred_accesses_only", "inferred only", "pct"),
         Column("jobs_without_accesses", "no accesses", "pct"),
         Column("tags_without_job", "tags without job", "int")], by_cluster))
    by_server = wh.rows(f"""
        SELECT "day", subject AS server,
               sum(denominator) FILTER (WHERE measure = 'accesses_exact') AS accesses,
               {pivot(['accesses_exact', 'accesses_inferred', 'accesses_unmatched', 'bytes_joined',
                       'cache_accesses_gstream_only', 'sequence_gaps'])},
               sum(numerator) FILTER (WHERE measure = 'cache_stage_in_accesses') AS cache_stage_in_accesses
        FROM marts.data_completeness WHERE grain = 'server' GROUP BY ALL ORDER BY "day", server
    """)
    s.tables.append(Table(
        "completeness_by_server", "File accesses per day and server",
        [Column("day", "day"), Column("server", "server"), Column("accesses", "accesses", "int"),
         Column("accesses_exact", "exact", "pct"), Column("accesses_inferred", "inferred", "pct"),
         Column("accesses_unmatched", "no job", "pct"), Column("bytes_joined", "bytes joined", "pct"),
         Column("cache_accesses_gstream_only", "cache: g-stream only", "pct"),
         Column("sequence_gaps", "sequence gaps", "pct"),
         Column("cache_stage_in_accesses", "cache stage-in", "int")], by_server))
    collector = wh.rows("""
        SELECT "day", subject AS collector, measure, numerator, denominator, share
        FROM marts.data_completeness WHERE grain = 'collector' ORDER BY "day", collector, measure
    """)
    s.tables.append(Table(
        "completeness_collector", "Collector losses",
        [Column("day", "day"), Column("collector", "collector"), Column("measure", "what"),
         Column("numerator", "count", "int"), Column("denominator", "of", "int"), Column("share", "share", "pct")],
        collector, shown=bool(collector)))
    rejects = wh.rows("""
        SELECT subject AS source, detail AS kind_and_reason, sum(numerator) AS rejected, sum(denominator) AS records
        FROM marts.data_completeness WHERE grain = 'source' GROUP BY ALL ORDER BY rejected DESC, source
    """)
    s.tables.append(Table(
        "completeness_rejects", "Rejected records by source and reason",
        [Column("source", "source"), Column("kind_and_reason", "record: reason"),
         Column("rejected", "rejected", "int"), Column("records", "records in its batches", "int")],
        rejects, shown=bool(rejects)))
    s.notes.append("Accesses a cache made to an origin to stage a file in belong to no job and are counted "
                   "apart (cache stage-in). Until the collector records reconciled hit/miss evidence every "
                   "cache access counts as g-stream only. Source: marts.data_completeness.")
    return s


_OPERATIONS_TOP: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("verdict", "How much of the data is behind these figures", _verdict),
)
_OPERATIONS_SECTIONS: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("changes", "Site changes: efficiency before and after", _changes),
    ("input_size", "Efficiency against job input size", _input_size),
    ("completeness", "Data completeness", _completeness),
)


#: The marts of the analytics sections; the sections are shown when the warehouse has any of them.
ANALYSIS_MARTS = ("ab_uncertainty", "occupancy_efficiency", "client_fairness", "file_popularity")


_SECTIONS: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("summary", "Summary", _summary),
    ("efficiency", "Efficiency by storage type and A/B arm", _efficiency),
    ("ab", "A/B comparison over time", _ab),
    ("cache", "Cache: delivered vs staged in, hit ratio", _cache),
    ("price_performance", "Storage price / performance", _price_performance),
)


def _guarded(wh: _Warehouse, section_id: str, title: str,
             build: Callable[[_Warehouse], Section]) -> Section:
    try:
        return build(wh)
    except QUERY_ERRORS as exc:  # a mart of the wrong shape, a view over missing files, ...
        return Section(section_id, title, no_data=[f"The warehouse could not be read: {_first_line(exc)}"])


# --------------------------------------------------------------------------- output


def _atomic_write(path: Path, data: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _render(title: str, warehouse: Path, sections: list[Section]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from tierlens import __version__

    return env.get_template(TEMPLATE_NAME).render(
        title=title,
        warehouse=str(warehouse),
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        sections=sections,
    )


def _has_predictions(wh: _Warehouse) -> bool:
    return _mart_has_rows(wh, "efficiency_measured_vs_predicted")


def _mart_has_rows(wh: _Warehouse, name: str) -> bool:
    if not wh.has("marts", name):
        return False
    try:
        return bool(wh.scalar(f"SELECT count(*) FROM marts.{name}"))
    except QUERY_ERRORS:
        return True  # unreadable: the section says so


def build_report(warehouse: Path, out_dir: Path, title: str = "tierlens site report") -> ReportResult:
    """Write ``out_dir/report.html`` and its CSV files from the marts of ``warehouse``.

    The warehouse is opened read-only. Raises ``FileNotFoundError`` when it does not exist; a
    missing, empty or unreadable mart only turns its section into "no data".
    """
    warehouse = Path(warehouse).expanduser().resolve()
    out_dir = Path(out_dir)
    if not warehouse.is_file():
        raise FileNotFoundError(f"no warehouse at {warehouse} (run `tierlens demo` or load data first)")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        wh = _Warehouse(con)
        chosen = _SECTIONS
        if any(wh.has("marts", name) for name in ANALYSIS_MARTS):
            chosen = _SECTIONS + _ANALYSIS_SECTIONS
        if _has_predictions(wh):
            chosen = chosen + _PREDICTION_SECTIONS
        if any(wh.has("marts", name) for name in OPERATIONS_MARTS):
            chosen = _OPERATIONS_TOP + chosen + _OPERATIONS_SECTIONS
        if _has_hardware_options(wh):
            chosen = chosen + _HARDWARE_SECTIONS
        sections = [_guarded(wh, sid, title_, build) for sid, title_, build in chosen]

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_paths: list[Path] = []
    for section in sections:
        for table in section.tables:
            path = out_dir / table.csv_name
            _atomic_write(path, table.csv_text())
            csv_paths.append(path)
    written = {p.name for p in csv_paths}
    for name in CSV_NAMES + ANALYSIS_CSV_NAMES + PREDICTION_CSV_NAMES + OPERATIONS_CSV_NAMES + HARDWARE_CSV_NAMES:
        if name not in written:
            (out_dir / name).unlink(missing_ok=True)

    html_path = out_dir / HTML_NAME
    _atomic_write(html_path, _render(title, warehouse, sections))
    return ReportResult(
        html_path=html_path,
        csv_paths=csv_paths,
        sections=[s.id for s in sections],
        no_data=[s.id for s in sections if not s.has_data],
    )


# --------------------------------------------------------------------------- hardware you could buy

HARDWARE_CSV_NAMES = ("hardware_options.csv", "device_type_validation.csv")


def _has_hardware_options(wh: _Warehouse) -> bool:
    return _mart_has_rows(wh, "hardware_options")


def _hardware(wh: _Warehouse) -> Section:
    s = Section(
        "hardware", "Hardware you could buy",
        "Storage configurations of the catalogue, including ones no node here has, ranked by the "
        "storage price per CPU core-hour they would deliver with this site's jobs (Glasgow Table 4 "
        "style). Each prediction's 95 % interval is carried into its prices, and each row says what "
        "it rests on: jobs measured on that storage type, a device probe (`tierlens probe storage`), "
        "or only a datasheet, whose predictions have been checked to be much less reliable.",
    )
    rows = wh.rows("""
        SELECT job_class, price_rank, config_name, storage_type, evidence, jobs_per_node, cache, currency,
               price_per_node, price_per_gb, efficiency, efficiency_low, efficiency_high, node_throughput,
               price_per_throughput, price_per_core_hour * 1000 AS price_per_1000_core_hours,
               price_per_core_hour_low * 1000 AS price_per_1000_core_hours_low,
               price_per_core_hour_high * 1000 AS price_per_1000_core_hours_high,
               ssd_lifetime_years, structural_error
        FROM marts.hardware_options ORDER BY job_class, price_rank
    """)
    s.tables.append(Table(
        "hardware_options", "Candidate configurations, cheapest delivered core-hour first",
        [Column("job_class", "job class"), Column("price_rank", "rank", "int"),
         Column("config_name", "configuration"), Column("storage_type", "storage type"),
         Column("evidence", "evidence"), Column("jobs_per_node", "jobs / node", "num"), Column("cache", "cache"),
         Column("price_per_node", "price / node", "money", suffix_key="currency"),
         Column("currency", "currency", csv_only=True),
         Column("price_per_gb", "price / GB", "money"),
         Column("efficiency", "efficiency", "pct"), Column("efficiency_low", "95 % low", "pct"),
         Column("efficiency_high", "95 % high", "pct"),
         Column("node_throughput", "core-h / node-h", "num"),
         Column("price_per_throughput", "price / throughput", "money"),
         Column("price_per_1000_core_hours", "per 1000 core-h", "money"),
         Column("price_per_1000_core_hours_low", "95 % low", "money"),
         Column("price_per_1000_core_hours_high", "95 % high", "money"),
         Column("ssd_lifetime_years", "SSD life (years)", "num"),
         Column("structural_error", "structural error", "pct", csv_only=True)],
        rows,
    ))
    if wh.has("staging", "stg_sim_efficiency_type_loo"):
        checks = wh.rows("""
            SELECT loo.storage_type, loo.evidence, loo.jobs, loo.measured_efficiency, loo.predicted_efficiency,
                   loo.error
            FROM staging.stg_sim_efficiency_type_loo AS loo
            WHERE loo.run_id IN (SELECT DISTINCT run_id FROM marts.hardware_options)
            ORDER BY loo.evidence DESC, loo.storage_type
        """)
        if checks:
            s.tables.append(Table(
                "device_type_validation", "How far derived predictions were off: each storage type left out entirely",
                [Column("storage_type", "storage type left out"), Column("evidence", "predicted from"),
                 Column("jobs", "jobs", "int"), Column("measured_efficiency", "measured", "pct"),
                 Column("predicted_efficiency", "predicted", "pct"), Column("error", "error", "pct")],
                checks,
            ))
    s.notes.append(
        "Throughput = jobs per node x cores per job x efficiency (core-hours per node-hour); price / "
        "throughput = storage price per node / throughput, as in Glasgow's Table 4. A core-hour is "
        "priced over 5 years of service, or over the SSD's rated life when the predicted scratch "
        "writes use up its endurance sooner. Probe- and datasheet-derived rows carry the RMS "
        "leave-one-type-out error of their kind of evidence as structural error. Source: "
        "marts.hardware_options (tierlens simulate efficiency --candidates)."
    )
    return s


_HARDWARE_SECTIONS: tuple[tuple[str, str, Callable[[_Warehouse], Section]], ...] = (
    ("hardware", "Hardware you could buy", _hardware),
)
