-- One row per finished job (or step) that ran: CPU efficiency = (cpu user + cpu system) /
-- (wall x cores). Values above 1 are kept and flagged (efficiency_above_one), never clipped.
-- day and week place the job by its end_time in UTC (week = the Monday starting its ISO week).
-- A launch failure (no start, wall 0) is in int_job_tagged but not here: it has no efficiency;
-- efficiency_by_group counts it among the failed jobs of its group.
--
-- Incremental by day, with int_job_remote_bytes' lookback: a job's remote bytes change while its
-- accesses can still be matched anew (max_wall_days + job_lateness_days).
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='end_time', grain=['batch_system', 'cluster', 'job_id', 'step_id'])) }}
with jobs as (
    select * from {{ ref('int_job_tagged') }}
    where ran and {{ in_window('day', lookback) }}
),

-- Only the remote bytes of jobs that can end in the window: a job's accesses lie within its run,
-- at most max_wall_days long, so its latest access opened at most that long before its end.
remote as (
    {{ dated_rows(ref('int_job_remote_bytes'), 'last_access_day',
                  day_after_window('last_access_day', lookback, var('max_wall_days', 7) | int)) }}
)

select
    {{ job_key('jobs') }},
    jobs.job_identity,
    jobs.user_name,
    jobs.account,
    jobs.vo,
    jobs.job_class,
    jobs.{{ adapter.quote("partition") }},
    jobs.node,
    jobs.storage_type,
    jobs.ab_arm,
    jobs.cache_route,
    jobs.start_time,
    jobs.end_time,
    jobs.day,
    jobs.week,
    jobs.allocated_cores,
    jobs.cpu_user_seconds,
    jobs.cpu_system_seconds,
    jobs.cpu_seconds,
    jobs.wall_seconds,
    jobs.core_wall_seconds,
    jobs.cpu_seconds / nullif(jobs.core_wall_seconds, 0)                      as efficiency,
    coalesce(jobs.cpu_seconds / nullif(jobs.core_wall_seconds, 0) > 1, false) as efficiency_above_one,
    jobs.state,
    jobs.exit_code,
    jobs.bytes_read,
    jobs.bytes_written,
    coalesce(remote.accesses_exact, 0)                                        as files_accessed,
    cast(coalesce(remote.bytes_read_exact, 0) as bigint)                      as bytes_read_remote,
    jobs.failed
from jobs
left join remote
    on {{ job_key_join('remote', 'jobs') }}
