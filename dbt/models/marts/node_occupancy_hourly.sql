-- Per node and UTC hour: the cores allocated to jobs against the node's slots, the CPU the jobs
-- used in that hour, and whether the node was fully occupied (occupancy >= var full_occupancy,
-- default 0.99), as the Glasgow study's Table 3 counted only periods when the nodes were full.
-- A job's CPU is spread over the hours it ran in proportion to its overlap with each hour
-- (intermediate.int_node_hourly does the split). Incremental by day (UTC day of hour), as
-- int_node_hourly.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='hour', grain=['cluster', 'node', 'hour'])) }}
select
    cluster,
    node,
    hour,
    storage_type,
    job_slots,
    jobs                                                         as jobs_running,
    jobs_ended,
    allocated_core_seconds / 3600.0                              as allocated_cores,
    allocated_core_seconds,
    capacity_core_seconds,
    occupancy,
    cpu_seconds,
    cpu_seconds / nullif(allocated_core_seconds, 0)              as efficiency,
    coalesce(occupancy >= {{ var('full_occupancy', 0.99) }}, false) as fully_occupied,
    day
from {{ ref('int_node_hourly') }}
where {{ in_window('day', lookback) }}
