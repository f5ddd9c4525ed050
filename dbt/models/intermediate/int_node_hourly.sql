-- Occupancy of each node per UTC hour: core-seconds allocated to finished jobs overlapping the
-- hour (allocated_cores x overlap seconds) against job_slots x 3600, and the CPU those jobs used
-- in the hour: accounting gives one CPU total per job, not a time series, so a job's CPU is
-- spread over the hours it ran in proportion to its overlap with each.
-- Every hour from a node's first job start to its last job end is present (idle hours have 0).
-- Jobs count on their first node (job.node) only; running jobs (no end_time) are not counted.
--
-- Incremental by day (UTC day of hour), lookback max_wall_days + job_lateness_days: a job whose
-- record arrives late adds to the hours it ran, up to max_wall_days before it ended. The
-- window's hours are rebuilt from the jobs that ran in them; a node's first and last hour come
-- from all its jobs (job grain, not hours). A back-fill's chunk also reads the jobs running
-- across its end from staging (they end in a later chunk), so its last hours are whole whatever
-- the chunk size.
{%- set lookback = job_match_lookback_days() %}
{%- set first_day = window_first_day(lookback) %}
{%- set stop_day = window_end_day() %}
{#- a back-fill's chunk: the jobs running across its end, not built yet (macros/incremental.sql) -#}
{%- set across_end = jobs_across_window_end(ref('stg_job')) %}
{{ config(**incremental_by_day('day', lookback, event_time='hour', grain=['cluster', 'node', 'hour'])) }}
-- Jobs on a node that ran for some time. Read twice below, each time with its own filter, not
-- as one CTE of every job: DuckDB materialises a CTE used twice, with its columns, for all of
-- history (seconds an hour at a year of a large site's jobs).
{%- set ran_on_a_node %}
    node is not null
      and start_time is not null
      and end_time > start_time
{%- endset %}
with jobs as (
    select
        cluster,
        node,
        allocated_cores,
        coalesce(cpu_user_seconds, 0) + coalesce(cpu_system_seconds, 0) as cpu_seconds,
        start_time,
        end_time,
        {{ utc('start_time') }} as start_utc,
        {{ utc('end_time') }}   as end_utc
    from {{ ref('int_job_tagged') }}
    where {{ ran_on_a_node }}
      and {{ instant_after_window('end_time', lookback) }}
      {%- if stop_day is not none %}
      and start_time < {{ day_start_instant(stop_day) }}
      and {{ instant_before_window_end('end_time') }}
      {%- endif %}
    {%- if across_end is not none %}
    union all
    select
        across_end.cluster,
        across_end.node,
        across_end.allocated_cores,
        across_end.cpu_seconds,
        across_end.start_time,
        across_end.end_time,
        {{ utc('across_end.start_time') }} as start_utc,
        {{ utc('across_end.end_time') }}   as end_utc
    from ({{ across_end }}) as across_end
    where {{ ran_on_a_node }}
    {%- endif %}
),

job_hours as (
    select * from (
        select
            jobs.*,
            {{ explode_hours("date_trunc('hour', start_utc)", 'end_utc') }} as hour_utc
        from jobs
    ) as exploded
    where {{ in_window('cast(hour_utc as date)', lookback) }}
),

usage as (
    select
        cluster,
        node,
        hour_utc,
        count(*) as jobs,
        sum(
            allocated_cores
            * {{ seconds_between('greatest(start_utc, hour_utc)', 'least(end_utc, hour_utc + interval 1 hour)') }}
        ) as allocated_core_seconds,
        sum(
            cpu_seconds
            * {{ seconds_between('greatest(start_utc, hour_utc)', 'least(end_utc, hour_utc + interval 1 hour)') }}
            / nullif({{ seconds_between('start_utc', 'end_utc') }}, 0)
        ) as cpu_seconds,
        count(*) filter (where end_utc < hour_utc + interval 1 hour) as jobs_ended
    from job_hours
    group by cluster, node, hour_utc
),

-- A node's first and last hour with a job, over all its jobs: the last hour a job counts in is
-- the hour before its end (the hours run from its start's hour up to, not including, its end).
-- This reads every job of history, so it takes the extremes of the instants and converts only
-- those two per node (UTC wall-clock time is monotonic in the instant): converting each job's
-- times first cost seconds an hour at a year of a large site's jobs.
node_span as (
    select
        cluster,
        node,
        date_trunc('hour', {{ utc('min(start_time)') }})                        as first_hour,
        date_trunc('hour', {{ utc('max(end_time)') }} - interval 1 microsecond) as last_hour
    from (
        select cluster, node, start_time, end_time from {{ ref('int_job_tagged') }}
        where {{ ran_on_a_node }}
        {%- if across_end is not none %}
        union all
        select cluster, node, start_time, end_time from ({{ across_end }}) as across_end
        where {{ ran_on_a_node }}
        {%- endif %}
    ) as ran
    group by cluster, node
),

spine as (
    select * from (
        select
            cluster,
            node,
            {{ explode_hours(
                'first_hour' if first_day is none
                else 'greatest(first_hour, ' ~ utc(day_start_instant(first_day)) ~ ')',
                'last_hour + interval 1 hour' if stop_day is none
                else 'least(last_hour + interval 1 hour, ' ~ utc(day_start_instant(stop_day)) ~ ')') }} as hour_utc
        from node_span
    ) as hours
    where {{ in_window('cast(hour_utc as date)', lookback) }}
),

final as (
    select
        spine.cluster,
        spine.node,
        {{ from_utc('spine.hour_utc') }}                        as hour,
        config.storage_type,
        config.job_slots,
        coalesce(usage.jobs, 0)                                  as jobs,
        coalesce(usage.jobs_ended, 0)                            as jobs_ended,
        coalesce(usage.allocated_core_seconds, 0)                as allocated_core_seconds,
        coalesce(usage.cpu_seconds, 0)                           as cpu_seconds,
        config.job_slots * 3600.0                                as capacity_core_seconds,
        coalesce(usage.allocated_core_seconds, 0)
            / nullif(config.job_slots * 3600.0, 0)               as occupancy,
        cast(spine.hour_utc as date)                             as day
    from spine
    left join usage
        on  usage.cluster = spine.cluster
        and usage.node = spine.node
        and usage.hour_utc = spine.hour_utc
    left join {{ ref('int_node_config') }} as config
        on  config.cluster = spine.cluster
        and config.node = spine.node
)

select * from final
