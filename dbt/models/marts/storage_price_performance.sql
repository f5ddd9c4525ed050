-- Price/performance of each storage configuration in the catalog, Glasgow-style (Table 4):
--   price_per_node       = unit_price x devices_per_node
--   capacity_gb_per_node = usable capacity (RAID0: all devices, RAID1: one, RAID5: n-1,
--                          RAID6: n-2, RAID10: n/2, otherwise all), GB = 1e9 bytes
--   node_throughput      = CPU core-hours delivered per node-hour: Σ cpu_hours of the jobs on
--                          the configuration's nodes / (nodes x hours of the observed period),
--                          the observed period running from the first start_time to the last
--                          end_time of those jobs
--   price_per_throughput = price_per_node / node_throughput
-- A node has a configuration when its storage_type and first device model (device_models[1])
-- equal the catalog's (device model compared trimmed, case-insensitively; a catalog row without
-- a device model matches on storage_type alone). Configurations no node has keep NULL measurements.
-- Added by the analytics-depth issue (never replacing a column above):
--   price_per_efficiency_point = price_per_node / (efficiency x 100)
--   efficiency_full_occupancy, node_throughput_full_occupancy: over the node-hours when the node
--     was fully occupied (marts.node_occupancy_hourly), Glasgow Table 3's restriction
--   price_per_throughput_full_occupancy = price_per_node / node_throughput_full_occupancy
--   scratch writes: per job, the larger of the batch system's bytes_written (wchar, which holds
--     the stage-in copy) and the bytes it staged in with xrdcp (exact-matched accesses); per node
--     and day over the observed period; per device = per node / usable devices (RAID1 mirrors
--     every write, RAID0 splits them); expected_lifetime_years = endurance_tbw x 1e12 /
--     (bytes written per device per day x 365.25), for catalog rows with an endurance.
-- The job and node-hour figures add up the per-day, per-node partials of
-- int_node_jobs_day_partials and int_occupancy_day_partials, so a run reads days x nodes rows.
with catalog as (
    select * from {{ ref('stg_storage_catalog') }}
),

-- The catalog configurations each node has (see above): one row per node x configuration.
node_catalog as (
    select
        catalog.config_name,
        config.cluster,
        config.node
    from catalog
    inner join {{ ref('int_node_config') }} as config
        on  config.storage_type = catalog.storage_type
        and (
            catalog.device_model is null
            or lower(trim(config.device_model)) = lower(trim(catalog.device_model))
        )
),

-- Per node over all days, from the per-day partials (days x nodes rows, not every job); scratch
-- bytes written: per job the larger of wchar and the bytes it copied in.
node_jobs as (
    select
        cluster,
        node,
        sum(jobs)                  as jobs,
        sum(cpu_seconds)           as cpu_seconds,
        sum(core_wall_seconds)     as core_wall_seconds,
        min(first_start_time)      as first_start_time,
        max(last_end_time)         as last_end_time,
        sum(scratch_bytes_written) as scratch_bytes_written
    from {{ ref('int_node_jobs_day_partials') }}
    group by cluster, node
),

node_full as (
    select
        cluster,
        node,
        cast(sum(node_hours) as bigint)         as full_node_hours,
        coalesce(sum(cpu_seconds), 0)            as full_cpu_seconds,
        coalesce(sum(allocated_core_seconds), 0) as full_allocated_core_seconds
    from {{ ref('int_occupancy_day_partials') }}
    where scope = 'fully_occupied'
    group by cluster, node
),

extra as (
    select
        node_catalog.config_name,
        sum(coalesce(node_full.full_node_hours, 0))               as full_node_hours,
        sum(coalesce(node_full.full_cpu_seconds, 0))              as full_cpu_seconds,
        sum(coalesce(node_full.full_allocated_core_seconds, 0))   as full_allocated_core_seconds,
        sum(node_jobs.scratch_bytes_written)                    as scratch_bytes_written
    from node_catalog
    inner join node_jobs
        on node_jobs.cluster = node_catalog.cluster and node_jobs.node = node_catalog.node
    left join node_full
        on node_full.cluster = node_catalog.cluster and node_full.node = node_catalog.node
    group by node_catalog.config_name
),

measured as (
    select
        node_catalog.config_name,
        {{ count_distinct_pair('node_jobs.cluster', 'node_jobs.node') }} as nodes,
        cast(sum(node_jobs.jobs) as bigint)                       as jobs,
        sum(node_jobs.cpu_seconds)                                as cpu_seconds,
        sum(node_jobs.core_wall_seconds)                          as core_wall_seconds,
        {{ seconds_between('min(node_jobs.first_start_time)', 'max(node_jobs.last_end_time)') }} / 3600.0 as observed_hours
    from node_catalog
    inner join node_jobs
        on node_jobs.cluster = node_catalog.cluster and node_jobs.node = node_catalog.node
    group by node_catalog.config_name
),

priced as (
    select
        catalog.*,
        catalog.unit_price * coalesce(catalog.devices_per_node, 1) as price_per_node,
        catalog.capacity_bytes / 1e9
            * {{ usable_devices('catalog.storage_type', 'coalesce(catalog.devices_per_node, 1)') }}
                                                                   as capacity_gb_per_node,
        measured.nodes,
        measured.jobs,
        measured.cpu_seconds / nullif(measured.core_wall_seconds, 0) as efficiency,
        (measured.cpu_seconds / 3600.0)
            / nullif(measured.nodes * measured.observed_hours, 0)   as node_throughput,
        extra.full_node_hours,
        extra.full_cpu_seconds / nullif(extra.full_allocated_core_seconds, 0) as efficiency_full_occupancy,
        (extra.full_cpu_seconds / 3600.0) / nullif(extra.full_node_hours, 0)  as node_throughput_full_occupancy,
        extra.scratch_bytes_written / 1e9
            / nullif(measured.nodes * measured.observed_hours / 24.0, 0)      as scratch_gb_written_per_node_day,
        {{ usable_devices('catalog.storage_type', 'coalesce(catalog.devices_per_node, 1)') }} as usable_devices
    from catalog
    left join measured
        on measured.config_name = catalog.config_name
    left join extra
        on extra.config_name = catalog.config_name
)

select
    config_name,
    storage_type,
    device_model,
    devices_per_node,
    unit_price,
    currency,
    price_per_node,
    capacity_gb_per_node,
    price_per_node / nullif(capacity_gb_per_node, 0)  as price_per_gb,
    nodes,
    jobs,
    efficiency,
    node_throughput,
    price_per_node / nullif(node_throughput, 0)       as price_per_throughput,
    price_per_node / nullif(efficiency * 100, 0)      as price_per_efficiency_point,
    full_node_hours,
    efficiency_full_occupancy,
    node_throughput_full_occupancy,
    price_per_node / nullif(node_throughput_full_occupancy, 0) as price_per_throughput_full_occupancy,
    endurance_tbw,
    scratch_gb_written_per_node_day,
    scratch_gb_written_per_node_day / nullif(usable_devices, 0) as gb_written_per_device_day,
    case when endurance_tbw is not null then
        endurance_tbw * 1e12
            / nullif(scratch_gb_written_per_node_day * 1e9 / nullif(usable_devices, 0) * 365.25, 0)
    end                                               as expected_lifetime_years
from priced
