-- Efficiency and throughput per storage type, over every node-hour ('all') and over the
-- fully occupied node-hours only ('fully_occupied'), side by side: the Glasgow seed's Table 3
-- counted only periods when the nodes were full, because a half-empty node flatters its disk.
--   efficiency           = Σ cpu_seconds / Σ allocated core-seconds of those node-hours
--   throughput           = CPU core-hours delivered per node-hour (Σ cpu hours / node-hours)
--   jobs_per_node_hour   = jobs ending in those node-hours / node-hours
with hours as (
    select * from {{ ref('node_occupancy_hourly') }}
),

scoped as (
    select 'all' as scope, * from hours
    union all
    select 'fully_occupied' as scope, * from hours where fully_occupied
),

aggregated as (
    select
        storage_type,
        scope,
        {{ count_distinct_pair('cluster', 'node') }} as nodes,
        count(*)                                                 as node_hours,
        sum(jobs_ended)                                          as jobs_ended,
        sum(allocated_core_seconds) / 3600.0                     as allocated_core_hours,
        sum(cpu_seconds) / 3600.0                                as cpu_hours,
        avg(occupancy)                                           as mean_occupancy
    from scoped
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
