"""Measured against predicted efficiency, and what-if configurations (the simulator's marts)."""

from __future__ import annotations

from .. import bounds, plots
from ..columns import interval
from ..page import Column
from ..reader import MartReader
from ..spec import PREDICTION, PlotSpec, SectionOut, SectionSpec, TableSpec, first_of_each

#: The what-if rows on the page, per job class: the configurations that get the most jobs through a
#: node per hour. Ranked by throughput, not efficiency: one job on a node is the most efficient
#: and the least useful configuration (efficiency counts the cores the jobs hold, not idle ones).
WHAT_IF_TOP = 10


def body(wh: MartReader, s: SectionOut) -> None:
    rows = wh.rows("""
        SELECT job_class, storage_type, ab_arm, measured_jobs, measured_efficiency, predicted_efficiency,
               efficiency_low, efficiency_high, loo_predicted_efficiency, loo_prediction_error,
               NOT measured_within_interval AS outside, mean_concurrent_jobs, model_version
        FROM marts.efficiency_measured_vs_predicted ORDER BY job_class, storage_type, ab_arm
    """)
    cut = bounds.clip_interval(
        rows, "efficiency_low", "efficiency_high", bounds.EFFICIENCY, "predicted_efficiency", "measured_efficiency"
    )
    s.figure("measured_vs_predicted", rows)
    s.table("efficiency_measured_vs_predicted", rows)
    grid = wh.rows("""
        SELECT job_class, storage_type, jobs_per_node, cache, predicted_efficiency, efficiency_low,
               efficiency_high, jobs_per_node_hour, extrapolated
        FROM marts.efficiency_what_if
        ORDER BY job_class, jobs_per_node_hour DESC NULLS LAST, predicted_efficiency DESC NULLS LAST,
                 storage_type, cache, jobs_per_node
    """)
    cut += bounds.clip_interval(grid, "efficiency_low", "efficiency_high", bounds.EFFICIENCY, "predicted_efficiency")
    if grid:
        s.table("efficiency_what_if", grid, page_rows=first_of_each(grid, "job_class", WHAT_IF_TOP))
    s.note(
        "Model: each node is a closed queueing network (jobs alternate between their cores and the "
        "node's scratch device, solved by mean value analysis); remote bytes cost a fitted time per "
        "byte by route. Fitted per storage type from marts.job_io_profile; cache what-ifs replay the "
        "jobs' own file accesses. Sources: marts.efficiency_measured_vs_predicted, marts.efficiency_what_if."
    )
    if cut:
        s.note(bounds.cut_note(cut, bounds.EFFICIENCY))


_JOB_CLASS = Column("job_class", "job class")

SPEC = SectionSpec(
    id="prediction",
    title="Measured vs predicted efficiency, and what-if configurations",
    intro="The simulator's efficiency model, calibrated on this site's own jobs, next to the "
    "measurements: for each configuration the site ran, the measured CPU efficiency, the model's "
    "prediction with its 95 % interval, and its prediction when that configuration was left out "
    "of the fit (the honest test). Below, configurations not deployed: storage type × jobs per "
    "node × cache, for the same workload.",
    body=body,
    marts=("efficiency_measured_vs_predicted",),
    empty_hint="Run `tierlens simulate efficiency`.",
    group=PREDICTION,
    tables=(
        TableSpec(
            "efficiency_measured_vs_predicted",
            "Measured vs predicted CPU efficiency",
            (
                _JOB_CLASS,
                Column("storage_type", "storage type"),
                Column("ab_arm", "arm"),
                Column("measured_jobs", "jobs", "int"),
                Column("mean_concurrent_jobs", "jobs / node", "num"),
                Column("measured_efficiency", "measured", "pct"),
                Column("predicted_efficiency", "predicted", "pct"),
                *interval("efficiency", "pct"),
                Column("loo_predicted_efficiency", "left out of fit", "pct"),
                Column("loo_prediction_error", "left out − measured", "points"),
                Column("outside", "outside interval", "flag"),
                Column("model_version", "model", csv_only=True),
            ),
            flag_key="outside",
        ),
        TableSpec(
            "efficiency_what_if",
            "What if: predicted efficiency and throughput of configurations, most jobs per node-hour first",
            (
                _JOB_CLASS,
                Column("storage_type", "storage type"),
                Column("jobs_per_node", "jobs / node", "num"),
                Column("cache", "cache"),
                Column("predicted_efficiency", "efficiency", "pct"),
                *interval("efficiency", "pct"),
                Column("jobs_per_node_hour", "jobs / node-hour", "num"),
                Column("extrapolated", "extrapolated", "flag"),
            ),
            flag_key="extrapolated",
            top=WHAT_IF_TOP,
            top_text="the {top} with the most jobs per node-hour of each job class",
        ),
    ),
    plots=(
        PlotSpec(
            "measured_vs_predicted",
            plots.measured_vs_predicted,
            "Measured against predicted efficiency per configuration",
            "Each point is a storage type × arm: measured efficiency (x) against predicted (y) with the "
            "95 % interval; open circles are the leave-one-out predictions. On the diagonal the model is "
            "exact.",
            "efficiency_measured_vs_predicted",
        ),
    ),
)
