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
with catalog as (
    select * from {{ ref('stg_storage_catalog') }}
),

node_jobs as (
    select
        jobs.cluster,
        jobs.node,
        config.storage_type as node_storage_type,
        config.device_model as node_device_model,
        jobs.cpu_seconds,
        jobs.core_wall_seconds,
        jobs.start_time,
        jobs.end_time
    from {{ ref('job_efficiency') }} as jobs
    inner join {{ ref('int_node_config') }} as config
        on config.cluster = jobs.cluster and config.node = jobs.node
),

measured as (
    select
        catalog.config_name,
        count(distinct [node_jobs.cluster, node_jobs.node])       as nodes,
        count(*)                                                  as jobs,
        sum(node_jobs.cpu_seconds)                                as cpu_seconds,
        sum(node_jobs.core_wall_seconds)                          as core_wall_seconds,
        {{ seconds_between('min(node_jobs.start_time)', 'max(node_jobs.end_time)') }} / 3600.0 as observed_hours
    from catalog
    inner join node_jobs
        on  node_jobs.node_storage_type = catalog.storage_type
        and (
            catalog.device_model is null
            or lower(trim(node_jobs.node_device_model)) = lower(trim(catalog.device_model))
        )
    group by catalog.config_name
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
            / nullif(measured.nodes * measured.observed_hours, 0)   as node_throughput
    from catalog
    left join measured
        on measured.config_name = catalog.config_name
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
    price_per_node / nullif(node_throughput, 0)       as price_per_throughput
from priced
