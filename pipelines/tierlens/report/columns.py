"""The column catalogue: columns and column sets that several tables of the report share.

A shared set is written once here, so a label or a format changes in every table at once.
"""

from __future__ import annotations

from dataclasses import replace

from . import fmt
from .page import Column

STORAGE_TYPE = Column("storage_type", "storage type", null_text="untagged")
AB_ARM = Column("ab_arm", "A/B arm", null_text="no arm")
JOB_CLASS = Column("job_class", "job class", null_text="unknown")
#: Only in the CSV: the HTML appends the currency to the price it belongs to (``priced``).
CURRENCY = Column("currency", "currency", csv_only=True)
WARNING = Column("warning", "why not enough", null_text="")


def priced(key: str, label: str, null_text: str = fmt.MISSING) -> Column:
    """A price, shown with its row's currency."""
    return Column(key, label, "money", null_text, suffix_key="currency")


def interval(prefix: str, kind: str, label: str = "95 %", csv_only: bool = False) -> tuple[Column, Column]:
    """The bounds ``<prefix>_low`` and ``<prefix>_high`` of a 95 % interval."""
    return (
        Column(f"{prefix}_low", f"{label} low", kind, csv_only=csv_only),
        Column(f"{prefix}_high", f"{label} high", kind, csv_only=csv_only),
    )


def priced_interval(prefix: str, label: str = "95 %") -> tuple[Column, Column]:
    """The bounds of a price's 95 % interval, each with its row's currency as the price beside it
    has (a bound without it reads as another unit)."""
    low, high = interval(prefix, "money", label)
    return replace(low, suffix_key="currency"), replace(high, suffix_key="currency")


#: Sums of a group of jobs (marts.efficiency_by_group summed), after its key columns.
EFFICIENCY_SUMS = (
    Column("jobs", "jobs", "int"),
    Column("cpu_hours", "CPU hours", "hours"),
    Column("wall_hours", "wall hours", "hours"),
    Column("core_wall_hours", "core-hours (wall × cores)", "hours"),
    Column("efficiency", "efficiency Σcpu / Σ(wall × cores)", "pct"),
    Column("mean_job_efficiency", "mean job efficiency", "pct"),
    Column("jobs_above_one", "jobs above 100 %", "int"),
    Column("efficiency_above_one", "group above 100 %", "flag"),
)

#: Failed jobs of a group (marts.efficiency_by_group summed): launch failures never ran, so they
#: are in the failed share but in no efficiency.
FAILED_JOBS = (
    Column("failed_jobs", "failed jobs", "int"),
    Column("launch_failures", "of which never started", "int"),
    Column("failed_share", "failed share", "pct"),
)

#: What the cache servers moved, summed over servers and/or hours (marts.cache_hourly).
CACHE_TRAFFIC = (
    Column("accesses", "accesses", "int"),
    Column("hit_accesses", "hit accesses", "int"),
    Column("gb_read", "GB read", "gb"),
    Column("gb_delivered_from_cache", "GB from cache", "gb"),
    Column("gb_staged_in", "GB staged in", "gb"),
    Column("gb_bypassed", "GB bypassed", "gb"),
    Column("hit_ratio_requests", "hit ratio (requests)", "pct"),
    Column("hit_ratio_bytes", "hit ratio (bytes)", "pct"),
)

#: A/B measures of one arm: the column ``<measure>_<arm>`` is labelled ``<label> <ARM>``.
_ARM_MEASURES = {
    "jobs": ("jobs", "int"),
    "cpu_hours": ("CPU hours", "hours"),
    "core_wall_hours": ("core-hours", "hours"),
    "efficiency": ("efficiency", "pct"),
    "cpu_per_wall": ("CPU/wall", "ratio"),
}


def arm(arm_name: str, *measures: str, csv_only: bool = False) -> tuple[Column, ...]:
    """The columns of ``measures`` for one arm ('a' or 'b'), in the order given."""
    return tuple(
        Column(f"{m}_{arm_name}", f"{_ARM_MEASURES[m][0]} {arm_name.upper()}", _ARM_MEASURES[m][1], csv_only=csv_only)
        for m in measures
    )


def arms(*measures: str, csv_only: bool = False) -> tuple[Column, ...]:
    """Each of ``measures`` for arm A then arm B, side by side."""
    return tuple(c for m in measures for c in arm("a", m, csv_only=csv_only) + arm("b", m, csv_only=csv_only))


EFFICIENCY_B_MINUS_A = Column("efficiency_b_minus_a", "efficiency B − A (pt)", "points")
