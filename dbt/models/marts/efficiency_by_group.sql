-- CPU efficiency per period (UTC day and ISO week of end_time) and per combination of
-- storage_type x ab_arm x account x job_class that has jobs in the period.
-- efficiency = Σ cpu / Σ (wall x cores); mean_job_efficiency = mean of per-job efficiencies.
-- cpu_hours, wall_hours, core_wall_hours, jobs, failed_jobs and launch_failures add up across
-- rows; efficiencies and shares do not: re-aggregate as Σ cpu_hours / Σ core_wall_hours.
-- Failed jobs: the jobs of job_efficiency whose state is failed, and the launch failures
-- (int_job_tagged: failed, never ran, no start and wall 0), which are in no efficiency or hour
-- sum and not in jobs; a group of launch failures alone has jobs 0 and a NULL efficiency.
{#- Listed, not `* exclude (day, week)`: Spark SQL has no EXCLUDE. #}
{%- set group_columns = 'storage_type, ab_arm, account, job_class, ran, failed, cpu_seconds, wall_seconds, '
                        ~ 'core_wall_seconds, efficiency, efficiency_above_one' %}
with jobs as (
    select
        day,
        week,
        storage_type,
        ab_arm,
        coalesce(account, 'unknown') as account,
        job_class,
        true as ran,
        failed,
        cpu_seconds,
        wall_seconds,
        core_wall_seconds,
        efficiency,
        efficiency_above_one
    from {{ ref('job_efficiency') }}

    union all

    select
        day,
        week,
        storage_type,
        ab_arm,
        coalesce(account, 'unknown'),
        job_class,
        false,
        failed,
        null,
        null,
        null,
        null,
        false
    from {{ ref('int_job_tagged') }}
    where failed and not ran
),

by_period as (
    select 'day' as period_grain, day as period_start, {{ group_columns }} from jobs
    union all
    select 'week' as period_grain, week as period_start, {{ group_columns }} from jobs
),

aggregated as (
    select
        period_grain,
        period_start,
        storage_type,
        ab_arm,
        account,
        job_class,
        count(*) filter (where ran)                         as jobs,
        sum(cpu_seconds) / 3600.0                           as cpu_hours,
        sum(wall_seconds) / 3600.0                          as wall_hours,
        sum(core_wall_seconds) / 3600.0                     as core_wall_hours,
        sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0) as efficiency,
        avg(efficiency)                                     as mean_job_efficiency,
        count(*) filter (where efficiency_above_one)        as jobs_above_one,
        count(*) filter (where failed)                      as failed_jobs,
        count(*) filter (where not ran)                     as launch_failures
    from by_period
    group by period_grain, period_start, storage_type, ab_arm, account, job_class
)

select
    period_grain,
    cast(period_start as date)                   as period_start,
    storage_type,
    ab_arm,
    account,
    job_class,
    jobs,
    coalesce(cpu_hours, 0)                       as cpu_hours,
    coalesce(wall_hours, 0)                      as wall_hours,
    coalesce(core_wall_hours, 0)                 as core_wall_hours,
    efficiency,
    mean_job_efficiency,
    jobs_above_one,
    coalesce(efficiency > 1, false)              as efficiency_above_one,
    failed_jobs,
    launch_failures,
    cast(failed_jobs as double) / (jobs + launch_failures) as failed_share
from aggregated
