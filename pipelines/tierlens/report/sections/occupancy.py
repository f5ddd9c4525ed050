"""Efficiency and throughput at full occupancy, Glasgow Table 3 style (marts.occupancy_efficiency)."""

from __future__ import annotations

from .. import fmt, plots
from ..columns import CURRENCY, priced
from ..page import Column
from ..reader import MartReader
from ..spec import ANALYSIS, PlotSpec, SectionOut, SectionSpec, TableSpec
from .common import storage_label

_NM = fmt.NOT_MEASURED
_ENDURANCE = (
    Column("config_name", "configuration"),
    CURRENCY,
    priced("price_per_node", "price / node"),
    priced("price_per_efficiency_point", "price / efficiency point", _NM),
    Column("efficiency_full_occupancy", "efficiency when full", "pct", _NM),
    Column("node_throughput_full_occupancy", "throughput when full", "num", _NM),
    priced("price_per_throughput_full_occupancy", "price / throughput when full", _NM),
    Column("endurance_tbw", "endurance (TBW)", "num", "not rated"),
    Column("gb_written_per_device_day", "GB written / device / day", "gb", _NM),
    Column("expected_lifetime_years", "expected lifetime", "lifetime", fmt.MISSING),
)


def _price_at_full_occupancy(wh: MartReader, s: SectionOut) -> None:
    """Added when storage_price_performance has the full-occupancy and endurance columns."""
    if wh.mart_missing("storage_price_performance") is not None:
        return
    cols = {
        r["column_name"]
        for r in wh.rows(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'marts' AND table_name = 'storage_price_performance'"
        )
    }
    wanted = [c.key for c in _ENDURANCE]
    if not set(wanted) <= cols:
        return
    s.table(
        "storage_full_occupancy_endurance",
        wh.rows(f"""
        SELECT {", ".join(wanted)} FROM marts.storage_price_performance
        ORDER BY price_per_throughput_full_occupancy NULLS LAST, config_name
    """),
    )
    s.note(
        "Expected lifetime = rated endurance (TB written) / the GB written per device and day "
        "at this site's rate (jobs' scratch writes, including staged-in inputs), in years."
    )


def body(wh: MartReader, s: SectionOut) -> None:
    rows = wh.rows("""
        SELECT storage_type, scope, nodes, node_hours, share_of_node_hours, jobs_ended, cpu_hours,
               allocated_core_hours, mean_occupancy, efficiency, throughput, jobs_per_node_hour
        FROM marts.occupancy_efficiency ORDER BY storage_type NULLS LAST, scope
    """)
    for r in rows:
        r["storage_type"] = storage_label(r["storage_type"])
    s.figure("by_scope", rows)
    s.table("occupancy_efficiency", rows)
    _price_at_full_occupancy(wh, s)
    s.note(
        "Fully occupied: allocated cores ≥ 99 % of the node's slots over the hour (dbt var "
        "full_occupancy). A job's CPU is spread over its hours in proportion to its time in each. "
        "Source: marts.occupancy_efficiency, marts.node_occupancy_hourly, marts.storage_price_performance."
    )


SPEC = SectionSpec(
    id="occupancy",
    title="Efficiency and throughput at full occupancy",
    intro="A half-empty node flatters every disk, so the Glasgow study counted only the periods when "
    "its nodes were fully occupied (its Table 3). Here, per storage type, the CPU efficiency and "
    "throughput over every node-hour beside the same over the fully occupied node-hours only.",
    body=body,
    marts=("occupancy_efficiency",),
    empty_hint="No node ran finished jobs yet.",
    group=ANALYSIS,
    tables=(
        TableSpec(
            "occupancy_efficiency",
            "Per storage type: all node-hours and fully occupied ones",
            (
                Column("storage_type", "storage type"),
                Column("scope", "node-hours"),
                Column("nodes", "nodes", "int"),
                Column("node_hours", "node-hours", "int"),
                Column("share_of_node_hours", "share of node-hours", "pct"),
                Column("mean_occupancy", "mean occupancy", "pct"),
                Column("efficiency", "efficiency", "pct"),
                Column("throughput", "throughput (core-h / node-h)", "num"),
                Column("jobs_per_node_hour", "jobs / node-hour", "num"),
                Column("jobs_ended", "jobs ended", "int", csv_only=True),
                Column("cpu_hours", "CPU hours", "hours", csv_only=True),
                Column("allocated_core_hours", "allocated core-hours", "hours", csv_only=True),
            ),
        ),
        TableSpec(
            "storage_full_occupancy_endurance",
            "Price at full occupancy, per efficiency point, and SSD endurance",
            _ENDURANCE,
        ),
    ),
    plots=(
        PlotSpec(
            "by_scope",
            plots.occupancy_efficiency,
            "Bar chart of CPU efficiency per storage type, all node-hours and fully occupied node-hours",
            "CPU efficiency per storage type over every node-hour (left bar) and over the node-hours when "
            "the node was fully occupied (right bar).",
            "occupancy_efficiency",
        ),
    ),
)
