-- Per-day partial aggregates of the jobs' CPU efficiency: one row per UTC day of end_time x
-- storage_type x ab_arm x account x job_class with jobs that ended that day (jobs that ran, or
-- launch failures). Only sums and counts, so any set of days re-aggregates exactly:
-- efficiency_by_group's day and week rows and ab_comparison's day, week and 'all' rows are
-- built from this table (days x groups rows) instead of rescanning every job of history.
-- Averages are kept as a sum and the count of its non-NULL terms (efficiency_sum /
-- efficiencies), so a mean over several days is Σ efficiency_sum / Σ efficiencies.
-- week (the Monday of the day's ISO week) rides along: one per day. Grouped by every ab_arm,
-- not only the arms compared, so other arm_a / arm_b vars need no rebuild of the partials.
--
-- Incremental by day (UTC day of end_time) with job_efficiency's lookback: a day's rows change
-- while its jobs can still arrive or change.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='day',
                               grain=['day', 'storage_type', 'ab_arm', 'account', 'job_class'])) }}
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
    where {{ in_window('day', lookback) }}

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
    where failed and not ran and {{ in_window('day', lookback) }}
)

select
    day,
    week,
    storage_type,
    ab_arm,
    account,
    job_class,
    count(*) filter (where ran)                  as jobs,
    sum(cpu_seconds)                             as cpu_seconds,
    sum(wall_seconds)                            as wall_seconds,
    sum(core_wall_seconds)                       as core_wall_seconds,
    sum(efficiency)                              as efficiency_sum,
    count(efficiency)                            as efficiencies,
    count(*) filter (where efficiency_above_one) as jobs_above_one,
    count(*) filter (where failed)               as failed_jobs,
    count(*) filter (where not ran)              as launch_failures
from jobs
group by day, week, storage_type, ab_arm, account, job_class
