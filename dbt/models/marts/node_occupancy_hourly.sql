-- Per node and UTC hour: the cores allocated to jobs against the node's slots, the CPU the jobs
-- used in that hour, and whether the node was fully occupied (occupancy >= var full_occupancy,
-- default 0.99), as the Glasgow study's Table 3 counted only periods when the nodes were full.
-- A job's CPU is spread over the hours it ran in proportion to its overlap with each hour
-- (the accounting gives one CPU total per job, not a time series).
with jobs as (
    select
        cluster,
        node,
        allocated_cores,
        cpu_seconds,
        wall_seconds,
        {{ utc('start_time') }} as start_utc,
        {{ utc('end_time') }}   as end_utc
    from {{ ref('job_efficiency') }}
    where node is not null
      and start_time is not null
      and end_time > start_time
),

job_hours as (
    select
        jobs.*,
        unnest(range(date_trunc('hour', start_utc), end_utc, interval 1 hour)) as hour_utc
    from jobs
),

usage as (
    select
        cluster,
        node,
        hour_utc,
        sum(
            cpu_seconds
            * {{ seconds_between('greatest(start_utc, hour_utc)', 'least(end_utc, hour_utc + interval 1 hour)') }}
            / nullif({{ seconds_between('start_utc', 'end_utc') }}, 0)
        )                                                        as cpu_seconds,
        count(*) filter (where end_utc < hour_utc + interval 1 hour) as jobs_ended
    from job_hours
    group by cluster, node, hour_utc
)

select
    occ.cluster,
    occ.node,
    occ.hour,
    occ.storage_type,
    occ.job_slots,
    occ.jobs                                                     as jobs_running,
    coalesce(usage.jobs_ended, 0)                                as jobs_ended,
    occ.allocated_core_seconds / 3600.0                          as allocated_cores,
    occ.allocated_core_seconds,
    occ.capacity_core_seconds,
    occ.occupancy,
    coalesce(usage.cpu_seconds, 0)                               as cpu_seconds,
    coalesce(usage.cpu_seconds, 0) / nullif(occ.allocated_core_seconds, 0) as efficiency,
    coalesce(occ.occupancy >= {{ var('full_occupancy', 0.99) }}, false)   as fully_occupied
from {{ ref('int_node_hourly') }} as occ
left join usage
    on  usage.cluster = occ.cluster
    and usage.node = occ.node
    and usage.hour_utc = {{ utc('occ.hour') }}
