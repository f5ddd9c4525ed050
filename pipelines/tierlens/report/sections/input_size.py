"""Efficiency against job input size, IFCA style (marts.efficiency_by_input_size)."""

from __future__ import annotations

from .. import plots
from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, PlotSpec, SectionOut, SectionSpec, TableSpec


def body(wh: MartReader, s: SectionOut) -> None:
    rows = wh.rows("""
        SELECT period, change_id, change_window, coalesce(storage_type, 'unknown') AS storage_type,
               bytes_read_bin, min(bytes_read_bin_order) AS bin_order, sum(jobs) AS jobs,
               sum(cpu_hours) AS cpu_hours, sum(core_wall_hours) AS core_wall_hours,
               sum(cpu_hours) / nullif(sum(core_wall_hours), 0) AS efficiency
        FROM marts.efficiency_by_input_size
        WHERE period = 'all' OR in_change_scope
        GROUP BY ALL ORDER BY storage_type, bin_order
    """)
    # the whole period first, then each change's jobs before it and after it, in the order a reader
    # compares them (the alphabet puts 'after …' first)
    rows.sort(key=lambda r: (r["period"] != "all", str(r["change_id"]), r["change_window"] == "after"))
    overall = [dict(r, series=r["storage_type"], bin=r["bytes_read_bin"]) for r in rows if r["period"] == "all"]
    overall.sort(key=lambda r: r["bin_order"])
    if overall:
        s.figure("by_storage", overall)
    s.table("efficiency_by_input_size", rows)
    s.note(
        "Bytes read per job: the batch system's figure, else the bytes of its exactly matched file "
        "accesses. Source: marts.efficiency_by_input_size."
    )


SPEC = SectionSpec(
    id="input_size",
    title="Efficiency against job input size",
    intro="IFCA's table: CPU efficiency of jobs by the bytes they read, per storage type over the "
    "whole period, and before against after each change for the jobs in its scope. I/O-heavy "
    "jobs show first where storage is the bottleneck.",
    body=body,
    marts=("efficiency_by_input_size",),
    group=OPERATIONS,
    tables=(
        TableSpec(
            "efficiency_by_input_size",
            "Efficiency by bytes read per job (all jobs; in-scope jobs around each change)",
            (
                Column("period", "period"),
                Column("storage_type", "storage type"),
                Column("bytes_read_bin", "bytes read"),
                Column("jobs", "jobs", "int"),
                Column("core_wall_hours", "core-hours", "hours"),
                Column("efficiency", "efficiency", "pct"),
                Column("change_id", "change", csv_only=True),
            ),
        ),
    ),
    plots=(
        PlotSpec(
            "by_storage",
            plots.efficiency_by_input_size,
            "CPU efficiency against bytes read per job, per storage type",
            "Σcpu / Σ(wall × cores) of the jobs in each bytes-read bin, one line per storage type.",
            "efficiency_by_input_size",
        ),
    ),
)
