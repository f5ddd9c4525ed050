"""Hardware you could buy: catalogue configurations ranked by price per delivered core-hour
(marts.hardware_options, written by `tierlens simulate efficiency --candidates`)."""

from __future__ import annotations

from ..columns import CURRENCY, interval, priced
from ..page import Column
from ..reader import MartReader
from ..spec import HARDWARE, SectionOut, SectionSpec, TableSpec


def body(wh: MartReader, s: SectionOut) -> None:
    s.table("hardware_options", wh.rows("""
        SELECT job_class, price_rank, config_name, storage_type, evidence, jobs_per_node, cache, currency,
               price_per_node, price_per_gb, efficiency, efficiency_low, efficiency_high, node_throughput,
               price_per_throughput, price_per_core_hour * 1000 AS price_per_1000_core_hours,
               price_per_core_hour_low * 1000 AS price_per_1000_core_hours_low,
               price_per_core_hour_high * 1000 AS price_per_1000_core_hours_high,
               ssd_lifetime_years, structural_error
        FROM marts.hardware_options ORDER BY job_class, price_rank
    """))
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
        "Throughput = jobs per node x cores per job x efficiency (core-hours per node-hour); price / "
        "throughput = storage price per node / throughput, as in Glasgow's Table 4. A core-hour is "
        "priced over 5 years of service, or over the SSD's rated life when the predicted scratch "
        "writes use up its endurance sooner. Probe- and datasheet-derived rows carry the RMS "
        "leave-one-type-out error of their kind of evidence as structural error. Source: "
        "marts.hardware_options (tierlens simulate efficiency --candidates)."
    )


SPEC = SectionSpec(
    id="hardware",
    title="Hardware you could buy",
    intro="Storage configurations of the catalogue, including ones no node here has, ranked by the "
          "storage price per CPU core-hour they would deliver with this site's jobs (Glasgow Table 4 "
          "style). Each prediction's 95 % interval is carried into its prices, and each row says what "
          "it rests on: jobs measured on that storage type, a device probe (`tierlens probe storage`), "
          "or only a datasheet, whose predictions have been checked to be much less reliable.",
    body=body,
    marts=("hardware_options",),
    group=HARDWARE,
    tables=(
        TableSpec("hardware_options", "Candidate configurations, cheapest delivered core-hour first",
                  (Column("job_class", "job class"), Column("price_rank", "rank", "int"),
                   Column("config_name", "configuration"), Column("storage_type", "storage type"),
                   Column("evidence", "evidence"), Column("jobs_per_node", "jobs / node", "num"),
                   Column("cache", "cache"),
                   priced("price_per_node", "price / node"), CURRENCY,
                   Column("price_per_gb", "price / GB", "money"),
                   Column("efficiency", "efficiency", "pct"), *interval("efficiency", "pct"),
                   Column("node_throughput", "core-h / node-h", "num"),
                   Column("price_per_throughput", "price / throughput", "money"),
                   Column("price_per_1000_core_hours", "per 1000 core-h", "money"),
                   *interval("price_per_1000_core_hours", "money"),
                   Column("ssd_lifetime_years", "SSD life (years)", "num"),
                   Column("structural_error", "structural error", "pct", csv_only=True))),
        TableSpec("device_type_validation",
                  "How far derived predictions were off: each storage type left out entirely",
                  (Column("storage_type", "storage type left out"), Column("evidence", "predicted from"),
                   Column("jobs", "jobs", "int"), Column("measured_efficiency", "measured", "pct"),
                   Column("predicted_efficiency", "predicted", "pct"), Column("error", "error", "pct"))),
    ),
)
