-- Efficiency and throughput per storage type, over every node-hour ('all') and over the
-- fully occupied node-hours only ('fully_occupied'), side by side: the Glasgow seed's Table 3
-- counted only periods when the nodes were full, because a half-empty node flatters its disk.
--   efficiency           = Σ cpu_seconds / Σ allocated core-seconds of those node-hours
--   throughput           = CPU core-hours delivered per node-hour (Σ cpu hours / node-hours)
--   jobs_per_node_hour   = jobs ending in those node-hours / node-hours
-- Built from the per-day, per-node partial sums of int_occupancy_day_partials, so it reads days x
-- nodes rows, not every node-hour of history.
with aggregated as (
    select
        storage_type,
        scope,
        {{ count_distinct_pair('cluster', 'node') }} as nodes,
        cast(sum(node_hours) as bigint)                            as node_hours,
        sum(jobs_ended)                                          as jobs_ended,
        sum(allocated_core_seconds) / 3600.0                     as allocated_core_hours,
        sum(cpu_seconds) / 3600.0                                as cpu_hours,
        sum(occupancy_sum) / nullif(sum(occupancies), 0)         as mean_occupancy
    from {{ ref('int_occupancy_day_partials') }}
    group by storage_type, scope
),

totals as (
    select storage_type, node_hours as all_node_hours
    from aggregated where scope = 'all'
)

select
    aggregated.storage_type,
    aggregated.scope,
    aggregated.nodes,
    aggregated.node_hours,
    aggregated.node_hours / nullif(totals.all_node_hours, 0)     as share_of_node_hours,
    aggregated.jobs_ended,
    aggregated.allocated_core_hours,
    aggregated.cpu_hours,
    aggregated.mean_occupancy,
    aggregated.cpu_hours / nullif(aggregated.allocated_core_hours, 0) as efficiency,
    aggregated.cpu_hours / nullif(aggregated.node_hours, 0)      as throughput,
    aggregated.jobs_ended / nullif(aggregated.node_hours, 0)     as jobs_per_node_hour
from aggregated
left join totals using (storage_type)
