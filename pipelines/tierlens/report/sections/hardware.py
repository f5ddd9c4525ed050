"""Hardware you could buy: catalogue configurations ranked by price per delivered core-hour
(marts.hardware_options, written by `tierlens simulate efficiency --candidates`)."""

from __future__ import annotations

from typing import Any

from .. import bounds, buying_plots
from ..columns import CURRENCY, interval, priced, priced_interval
from ..page import Column
from ..reader import MartReader
from ..spec import HARDWARE, PlotSpec, SectionOut, SectionSpec, TableSpec

#: The buying guide's rows on the page: the cheapest delivered core-hours of each job class (the
#: CSV file and `tierlens sql cheapest_configuration_for_efficiency` have every row).
TOP = 10


def best_buys(options: list[dict[str, Any]], top: int = TOP) -> list[dict[str, Any]]:
    """The ``top`` cheapest options of each job class (``options`` in price rank order), then the
    cheapest of each configuration not measured here that fell below them: the candidate a site
    probed to decide on is the one its manager looks for, even when it does not pay (the demo's
    terminal table keeps the same rows)."""
    from ...simulator.tables import cheapest_with_unmeasured

    page: list[dict[str, Any]] = []
    for job_class in dict.fromkeys(r["job_class"] for r in options):
        page += cheapest_with_unmeasured([r for r in options if r["job_class"] == job_class], top)
    return page


def body(wh: MartReader, s: SectionOut) -> None:
    options = wh.rows("""
        SELECT job_class, price_rank, config_name, storage_type, evidence, jobs_per_node, cache, currency,
               node_config, cores_per_job, whole_node_price, price_per_node, price_per_gb, power_price_per_node_hour,
               efficiency, efficiency_low, efficiency_high, node_throughput,
               price_per_throughput, price_per_core_hour * 1000 AS price_per_1000_core_hours,
               price_per_core_hour_low * 1000 AS price_per_1000_core_hours_low,
               price_per_core_hour_high * 1000 AS price_per_1000_core_hours_high,
               interval_driver, ssd_lifetime_years, structural_error, staged_gb_per_node_hour, write_warning,
               under_write_read_p99_ms,
               generator_structural_error, published_structural_error, structural_error_source
        FROM marts.hardware_options ORDER BY job_class, price_rank
    """)
    cut_efficiency = bounds.clip_interval(options, "efficiency_low", "efficiency_high", bounds.EFFICIENCY, "efficiency")
    cut_price = bounds.clip_interval(
        options,
        "price_per_1000_core_hours_low",
        "price_per_1000_core_hours_high",
        bounds.PRICE,
        "price_per_1000_core_hours",
    )
    # the plot shows one job class and one cache (the first of the run): 20-odd points, not 60
    first = options[0] if options else None
    shown = [
        r
        for r in options
        if first
        and (r["job_class"], r["cache"]) == (first["job_class"], first["cache"])
        and r["price_per_1000_core_hours"] is not None
    ]
    if shown:
        s.figure("price_against_efficiency", shown)
    s.table("hardware_options", options, page_rows=best_buys(options))
    # the warning depends on the device and the jobs per node, not on the cache: one row each
    flagged = {(r["job_class"], r["config_name"], r["jobs_per_node"]): r for r in options if r["write_warning"]}
    if flagged:
        s.table(
            "write_warnings",
            sorted(flagged.values(), key=lambda r: (r["job_class"], r["config_name"], r["jobs_per_node"])),
        )
    # what a derived row's interval carries: both leave-one-out errors, the larger one used
    errors = {
        (r["job_class"], r["evidence"]): r
        for r in options
        if r["evidence"] != "measured" and r["structural_error"] is not None
    }
    if errors:
        from ...simulator.seeds import source_in_words

        rows = [
            errors[k] | {"structural_error_source": source_in_words(errors[k]["structural_error_source"])}
            for k in sorted(errors)
        ]
        s.table("structural_errors", rows)
    if wh.has("marts", "efficiency_what_if"):
        grid = wh.rows("""
            SELECT storage_type, jobs_per_node, cache, predicted_efficiency
            FROM marts.efficiency_what_if
            WHERE job_class = (SELECT min(job_class) FROM marts.efficiency_what_if)
            ORDER BY cache, storage_type, jobs_per_node
        """)
        if grid:
            s.figure("what_if_heat_map", grid)
            s.table("what_if_grid", grid)
    if wh.has("staging", "stg_sim_efficiency_type_loo"):
        checks = wh.rows("""
            SELECT loo.storage_type, loo.evidence, loo.jobs, loo.measured_efficiency, loo.predicted_efficiency,
                   loo.error
            FROM staging.stg_sim_efficiency_type_loo AS loo
            WHERE loo.run_id IN (SELECT DISTINCT run_id FROM marts.hardware_options)
            ORDER BY loo.evidence DESC, loo.storage_type
        """)
        if checks:
            s.table("device_type_validation", checks)
    s.note(
        "Throughput = jobs per node x cores per job x efficiency (core-hours per node-hour). Price per "
        "delivered core-hour is the whole node's: the cheapest node row with the cores the jobs need "
        "(CPU, memory, chassis) written off over 5 years, its storage over 5 years or the SSD's rated "
        "life when the predicted scratch writes use up its endurance sooner (the SSD is then replaced), "
        "and its power at the site tariff, per core-hour delivered. The price interval comes from the "
        "efficiency interval and, where endurance sets the SSD's life, from the interval of the writes "
        "per core-hour (interval driver). Price / throughput is the storage's alone, as in Glasgow's "
        "Table 4. Default node rows and tariff are stated estimates, not quotes: give your own with "
        "`tierlens simulate efficiency --candidates --node-catalog FILE --power-price P`. Probe- and "
        "datasheet-derived rows carry as structural error the larger of two leave-one-out RMS errors: "
        "their kind of evidence's on this site (each measured storage type left out) and the device "
        "layer's on Glasgow's published figures (bench/seeds.md), since the site's own check cannot "
        "show where the model is wrong about real devices. A write warning marks a device whose steady-state write rate (past its "
        "fast-write region, as probed) is below what a full node of this site's jobs writes to scratch "
        "per hour at their measured pace, or whose fast region that node fills within the hour: its "
        "efficiency then rests on the steady-state rate, not the datasheet's burst. "
        "Source: marts.hardware_options."
    )
    for count, allowed in ((cut_efficiency, bounds.EFFICIENCY), (cut_price, bounds.PRICE)):
        if count:
            s.note(bounds.cut_note(count, allowed))


SPEC = SectionSpec(
    id="hardware",
    title="Hardware you could buy",
    intro="Storage configurations of the catalogue, including ones no node here has, ranked by what "
    "a CPU core-hour delivered with this site's jobs would cost on a whole node built around "
    "them (node, storage, power). Each prediction's 95 % interval is carried into its prices, and each row says what "
    "it rests on: jobs measured on that storage type, a device probe (`tierlens probe storage`), "
    "or only a datasheet, whose predictions have been checked to be much less reliable.",
    body=body,
    marts=("hardware_options",),
    group=HARDWARE,
    tables=(
        TableSpec(
            "hardware_options",
            "Candidate configurations, cheapest delivered core-hour first",
            # what a purchaser compares (configuration, efficiency, price per 1000 core-hours, each
            # with its interval) in the row, within a laptop's width; the node, the storage's own
            # prices, the SSD's life and the write figures on the details line under it
            (
                Column("job_class", "job class"),
                Column("price_rank", "rank", "int"),
                Column("config_name", "configuration"),
                Column("storage_type", "storage type"),
                Column("evidence", "evidence"),
                Column("jobs_per_node", "jobs / node", "num"),
                Column("cache", "cache"),
                Column("efficiency", "efficiency", "pct"),
                *interval("efficiency", "pct"),
                priced("price_per_1000_core_hours", "whole node per 1000 core-h"),
                *priced_interval("price_per_1000_core_hours"),
                Column("node_config", "node", detail=True),
                Column("cores_per_job", "cores / job", "num", csv_only=True),
                priced("whole_node_price", "node + storage").detailed(),
                CURRENCY,
                priced("price_per_node", "storage / node").detailed(),
                priced("price_per_gb", "storage / GB").detailed(),
                Column("power_price_per_node_hour", "power / node-h", "money", csv_only=True),
                Column("node_throughput", "core-h / node-h", "num", detail=True),
                priced("price_per_throughput", "storage / throughput").detailed(),
                Column("interval_driver", "interval from", csv_only=True),
                Column("ssd_lifetime_years", "SSD life", "lifetime", detail=True),
                Column("structural_error", "structural error", "points_size", csv_only=True),
                Column("staged_gb_per_node_hour", "scratch GB written / node-h", "num", csv_only=True),
                Column("write_warning", "write warning", detail=True),
                Column("under_write_read_p99_ms", "read p99 under 50 % writes (ms)", "num", detail=True),
            ),
            top=TOP,
            top_text="the {top} cheapest of each job class, then the cheapest of each configuration not measured "
            "here that ranks below them",
            every_row_text="`tierlens sql cheapest_configuration_for_efficiency --param target=0`",
        ),
        TableSpec(
            "structural_errors",
            "The structural error derived predictions carry: the larger of this site's and the published figures'",
            (
                Column("job_class", "job class"),
                Column("evidence", "predicted from"),
                Column("generator_structural_error", "this site (types left out)", "points_size"),
                Column("published_structural_error", "published figures (Glasgow)", "points_size"),
                Column("structural_error", "carried", "points_size"),
                Column("structural_error_source", "from"),
            ),
        ),
        TableSpec(
            "write_warnings",
            "Devices whose writes cannot keep up with what a full node of this site's jobs stages in",
            (
                Column("job_class", "job class"),
                Column("config_name", "configuration"),
                Column("storage_type", "storage type"),
                Column("evidence", "evidence"),
                Column("jobs_per_node", "jobs / node", "num"),
                Column("staged_gb_per_node_hour", "scratch GB written / node-h", "num"),
                Column("write_warning", "evidence of the shortfall"),
            ),
        ),
        TableSpec(
            "device_type_validation",
            "How far derived predictions were off: each storage type left out entirely",
            (
                Column("storage_type", "storage type left out"),
                Column("evidence", "predicted from"),
                Column("jobs", "jobs", "int"),
                Column("measured_efficiency", "measured", "pct"),
                Column("predicted_efficiency", "predicted", "pct"),
                Column("error", "error", "points"),
            ),
        ),
        TableSpec(
            "what_if_grid",
            "The what-if grid of the heat map",
            (
                Column("storage_type", "storage type"),
                Column("jobs_per_node", "jobs / node", "num"),
                Column("cache", "cache"),
                Column("predicted_efficiency", "efficiency", "pct"),
            ),
            shown=False,
        ),
    ),
    plots=(
        PlotSpec(
            "price_against_efficiency",
            buying_plots.price_against_efficiency,
            "Whole-node price per 1000 core-hours against predicted efficiency per candidate",
            "Each point is a configuration at a number of jobs per node (first cache of the run): "
            "predicted efficiency (x) against whole-node price per 1000 delivered core-hours (y), both "
            "with their 95 % intervals; colour says whether it rests on measured jobs, a probe or a "
            "datasheet. Lower right is better.",
            "hardware_options",
        ),
        PlotSpec(
            "what_if_heat_map",
            buying_plots.what_if_heat_map,
            "Predicted efficiency by storage type and jobs per node, per cache",
            "The what-if grid: predicted efficiency of each storage type (rows) at each number of jobs "
            "per node (columns), one panel per cache.",
            "what_if_grid",
        ),
    ),
)
