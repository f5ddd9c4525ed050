-- Question: What is the cheapest storage configuration that reaches a target CPU efficiency?
-- From the newest buying guide (marts.hardware_options, written by `tierlens simulate efficiency
-- --candidates`): the configurations whose predicted efficiency reaches the target even at the
-- low end of its 95 % interval, cheapest delivered core-hour of the whole node
-- first (node price over its service life + storage over its life + power, per core-hour the
-- node delivers; node rows and tariff from `simulate efficiency --node-catalog/--power-price`). evidence
-- says what each prediction rests on (measured jobs, a device probe, a datasheet) and
-- structural_error how far that kind of prediction has been off when checked (a fraction: 0.017 is
-- 1.7 pt): for measured rows each measured configuration left out of the fit, for derived rows the
-- larger of this site's (its measured storage types left out) and the published figures'. write_warning, when
-- set, says the device's steady-state writes fall short of what a full node stages in (with the figures).
-- Parameter: target = 0.75  the CPU efficiency to reach, a fraction (tierlens sql ... --param target=0.8)
with target as (
    -- the plain DuckDB CLI sets no variable: the default above, repeated
    select coalesce(getvariable('target'), 0.75) as efficiency
)

select
    options.job_class,
    options.config_name,
    options.storage_type,
    options.jobs_per_node,
    options.cache,
    options.evidence,
    round(options.efficiency, 3)            as efficiency,
    -- an efficiency cannot be below 0: the interval is cut there, as the report and terminal cut it
    round(greatest(options.efficiency_low, 0), 3) as efficiency_low,
    round(options.structural_error, 3)      as structural_error,
    -- probe- and datasheet-derived rows: the two errors the carried one is the larger of, named as
    -- the report's structural-error table names them (null for measured rows)
    round(options.generator_structural_error, 3) as structural_error_this_site,
    round(options.published_structural_error, 3) as structural_error_published,
    options.currency,
    options.node_config,
    options.cores_per_job,
    round(options.whole_node_price, 2)      as whole_node_price,
    round(options.price_per_node, 2)        as storage_price_per_node,
    round(options.power_price_per_node_hour, 4) as power_price_per_node_hour,
    round(options.price_per_throughput, 2)  as price_per_throughput,
    round(options.price_per_core_hour, 6)   as price_per_core_hour,
    round(options.price_per_core_hour_low, 6)  as price_per_core_hour_low,
    round(options.price_per_core_hour_high, 6) as price_per_core_hour_high,
    options.interval_driver,
    round(options.ssd_lifetime_years, 1)    as ssd_lifetime_years,
    round(options.staged_gb_per_node_hour, 1) as staged_gb_per_node_hour,
    options.write_warning
from marts.hardware_options as options
cross join target
where greatest(options.efficiency_low, 0) >= target.efficiency
order by options.price_per_core_hour, options.price_per_gb
