-- Per-day partial sums of the completed jobs' CPU and core-wall time: one row per UTC day of
-- end_time x job_class x storage_type x ab_arm with completed jobs that used CPU and core-time
-- (state COMPLETED, cpu_seconds > 0, core_wall_seconds > 0: the jobs
-- efficiency_measured_vs_predicted measures). Sums and counts only, so any set of days adds up
-- exactly: that mart reads days x groups rows from here instead of every job of history.
-- ab_arm is kept as job_efficiency has it (NULL outside a trial): the mart joins on it as it did
-- on the jobs.
--
-- Incremental by day (UTC day of end_time) with job_efficiency's lookback: a day's rows change
-- while its jobs can still arrive or change.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='day',
                               grain=['day', 'job_class', 'storage_type', 'ab_arm'])) }}
select
    day,
    job_class,
    storage_type,
    ab_arm,
    count(*)               as completed_jobs,
    sum(cpu_seconds)       as cpu_seconds,
    sum(core_wall_seconds) as core_wall_seconds
from {{ ref('job_efficiency') }}
where state = 'COMPLETED'
  and core_wall_seconds > 0
  and cpu_seconds > 0
  and {{ in_window('day', lookback) }}
group by day, job_class, storage_type, ab_arm
