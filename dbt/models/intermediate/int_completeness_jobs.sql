-- data_completeness's 'cluster' measures of the jobs that ran, by the UTC day they ended: how
-- many are in accounting and tagged by a plugin (and their CPU hours), and how many have file
-- accesses matched exactly, only by inference, or none. A job is its whole-job row (step_id ''),
-- else its first step, as in int_file_access_by_job. Ephemeral: a readable part of the mart's
-- one query, over the mart's window (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
{%- set max_wall = var('max_wall_days', 7) | int %}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
with job_rows as (
    -- jobs that ran: a launch failure has no CPU hours and is counted in efficiency_by_group.
    -- A job's rows (whole job, steps) end within its run, at most max_wall_days apart: read from
    -- that much before the window, pick the job's row, keep it if it ended in the window.
    select * from {{ one_row_per_job(ref('int_job_tagged'),
                                     where='ran and ' ~ day_range_sql('end_time', first, none, instant=true, before=max_wall + 1)) }} as first_rows
    where {{ day_range_sql('end_time', first, stop, instant=true) }}
),

-- the accesses that can belong to the window's jobs: a job's accesses open within its run (at
-- most max_wall_days before its end), and those without an open time
job_window_accesses as (
    select {{ job_key(with_step=false) }}, match_quality from {{ ref('int_file_access_by_job') }}
    where {{ day_range_sql('start_time', first, stop, instant=true, before=max_wall + 1, after=1) }}
    {%- if first is not none or stop is not none %}
    union all
    select {{ job_key(with_step=false) }}, match_quality from {{ ref('int_file_access_by_job') }}
    where start_time is null
    {%- endif %}
),

job_access_quality as (
    select
        {{ job_key(with_step=false) }},
        max(case when match_quality = 'exact' then 1 else 0 end)    as has_exact,
        max(case when match_quality = 'inferred' then 1 else 0 end) as has_inferred
    from job_window_accesses
    where job_id is not null
    group by {{ job_key(with_step=false) }}
),

jobs as (
    select
        cast({{ utc('j.end_time') }} as date)                        as day,
        j.cluster,
        j.tag_level is not null                                       as tagged,
        coalesce(j.cpu_user_seconds, 0) + coalesce(j.cpu_system_seconds, 0) as cpu_seconds,
        coalesce(q.has_exact, 0) = 1                                  as accesses_exact,
        coalesce(q.has_exact, 0) = 0 and coalesce(q.has_inferred, 0) = 1 as accesses_inferred_only
    from job_rows j
    left join job_access_quality q
        on {{ job_key_join('q', 'j', with_step=false) }}
),

measures as (
    select day, cluster as subject, 'jobs_tagged' as measure, 'jobs' as unit,
           count(*) filter (where tagged) as numerator, count(*) as denominator
    from jobs group by day, cluster
    union all
    select day, cluster, 'jobs_without_tag', 'jobs', count(*) filter (where not tagged), count(*)
    from jobs group by day, cluster
    union all
    select day, cluster, 'cpu_hours_tagged', 'CPU hours',
           sum(cpu_seconds) filter (where tagged) / 3600.0, sum(cpu_seconds) / 3600.0
    from jobs group by day, cluster
    union all
    select day, cluster, 'jobs_with_exact_accesses', 'jobs', count(*) filter (where accesses_exact), count(*)
    from jobs group by day, cluster
    union all
    select day, cluster, 'jobs_with_inferred_accesses_only', 'jobs',
           count(*) filter (where accesses_inferred_only), count(*)
    from jobs group by day, cluster
    union all
    select day, cluster, 'jobs_without_accesses', 'jobs',
           count(*) filter (where not accesses_exact and not accesses_inferred_only), count(*)
    from jobs group by day, cluster
)

select
    day, 'cluster' as grain, subject, measure, '' as detail, unit,
    cast(numerator as double) as numerator, cast(denominator as double) as denominator
from measures
