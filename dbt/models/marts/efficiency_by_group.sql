-- CPU efficiency per period (UTC day and ISO week of end_time) and per combination of
-- storage_type x ab_arm x account x job_class that has jobs in the period.
-- efficiency = Σ cpu / Σ (wall x cores); mean_job_efficiency = mean of per-job efficiencies.
-- cpu_hours, wall_hours, core_wall_hours, jobs, failed_jobs and launch_failures add up across
-- rows; efficiencies and shares do not: re-aggregate as Σ cpu_hours / Σ core_wall_hours.
-- Failed jobs: the jobs of job_efficiency whose state is failed, and the launch failures
-- (int_job_tagged: failed, never ran, no start and wall 0), which are in no efficiency or hour
-- sum and not in jobs; a group of launch failures alone has jobs 0 and a NULL efficiency.
-- Built from the per-day partial sums and counts of int_efficiency_day_partials (a week is the
-- sum of its days; a mean is Σ sums / Σ counts), so it reads days x groups rows, not every job.
with by_period as (
    select 'day' as period_grain, day as period_start, *
    from {{ ref('int_efficiency_day_partials') }}
    union all
    select 'week' as period_grain, week as period_start, *
    from {{ ref('int_efficiency_day_partials') }}
),

aggregated as (
    select
        period_grain,
        period_start,
        storage_type,
        ab_arm,
        account,
        job_class,
        cast(sum(jobs) as bigint)                               as jobs,
        sum(cpu_seconds) / 3600.0                               as cpu_hours,
        sum(wall_seconds) / 3600.0                              as wall_hours,
        sum(core_wall_seconds) / 3600.0                         as core_wall_hours,
        sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0)    as efficiency,
        sum(efficiency_sum) / nullif(sum(efficiencies), 0)      as mean_job_efficiency,
        cast(sum(jobs_above_one) as bigint)                     as jobs_above_one,
        cast(sum(failed_jobs) as bigint)                        as failed_jobs,
        cast(sum(launch_failures) as bigint)                    as launch_failures
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
