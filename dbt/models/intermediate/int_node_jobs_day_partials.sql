-- Per-day partial aggregates of the jobs on each node: one row per UTC day of end_time x node
-- (cluster, node) with jobs that ran (job_efficiency) ending that day. Sums, counts, the first
-- start and the last end only, so any set of days adds up exactly: storage_price_performance
-- is built from it (days x nodes rows) instead of rescanning every job of history.
-- Scratch bytes written per job: the larger of the batch system's bytes_written (wchar, which
-- holds the stage-in copy) and the bytes it staged in with xrdcp (exact-matched accesses).
--
-- Incremental by day (UTC day of end_time) with job_efficiency's lookback: a job's xrdcp bytes
-- change while its accesses can still be matched anew.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='day', grain=['day', 'cluster', 'node'])) }}
with jobs as (
    select * from {{ ref('job_efficiency') }}
    where {{ in_window('day', lookback) }}
),

-- Only the remote bytes of jobs that can end in the window: a job's accesses lie within its run,
-- at most max_wall_days long, so its latest access opened at most that long before its end.
remote as (
    {{ dated_rows(ref('int_job_remote_bytes'), 'last_access_day',
                  day_after_window('last_access_day', lookback, var('max_wall_days', 7) | int)) }}
)

select
    jobs.day,
    jobs.cluster,
    jobs.node,
    count(*)                                                                               as jobs,
    sum(jobs.cpu_seconds)                                                                  as cpu_seconds,
    sum(jobs.core_wall_seconds)                                                            as core_wall_seconds,
    min(jobs.start_time)                                                                   as first_start_time,
    max(jobs.end_time)                                                                     as last_end_time,
    sum(greatest(coalesce(jobs.bytes_written, 0), coalesce(remote.bytes_copied_exact, 0))) as scratch_bytes_written
from jobs
left join remote
    on {{ job_key_join('remote', 'jobs') }}
group by jobs.day, jobs.cluster, jobs.node
