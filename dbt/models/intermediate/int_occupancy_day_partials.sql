-- Per-day partial aggregates of node occupancy: one row per UTC day x node (cluster, node) x
-- storage_type x scope ('all' node-hours, 'fully_occupied' ones) with node-hours in the scope
-- that day. Sums and counts only, so any set of days adds up exactly: occupancy_efficiency is
-- built from it (days x nodes rows, a 24th of node_occupancy_hourly's). The node stays in the
-- grain because occupancy_efficiency counts distinct nodes, which no per-day count can give.
-- The mean occupancy is kept as a sum and the count of its non-NULL terms.
--
-- Incremental by day (UTC day of the hour) with node_occupancy_hourly's lookback.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='day',
                               grain=['day', 'cluster', 'node', 'storage_type', 'scope'])) }}
with hours as (
    select
        day,
        cluster,
        node,
        storage_type,
        fully_occupied,
        jobs_ended,
        allocated_core_seconds,
        cpu_seconds,
        occupancy
    from {{ ref('node_occupancy_hourly') }}
    where {{ in_window('day', lookback) }}
),

scoped as (
    select 'all' as scope, * from hours
    union all
    select 'fully_occupied' as scope, * from hours where fully_occupied
)

select
    day,
    cluster,
    node,
    storage_type,
    scope,
    count(*)                    as node_hours,
    sum(jobs_ended)             as jobs_ended,
    sum(allocated_core_seconds) as allocated_core_seconds,
    sum(cpu_seconds)            as cpu_seconds,
    sum(occupancy)              as occupancy_sum,
    count(occupancy)            as occupancies
from scoped
group by day, cluster, node, storage_type, scope
