-- Per-day partial aggregates of CPU efficiency by input volume: one row per UTC day of end_time x
-- storage_type x ab_arm x job_class x bytes-read bin with jobs that ran with allocated core-time
-- (core_wall_seconds > 0, so every one has an efficiency). Sums and counts only, so any set of
-- days adds up exactly: efficiency_by_input_size's 'all' rows are built from it (days x groups
-- rows) instead of rescanning every job of history. The mean GB read is kept as a sum and the
-- count of its non-NULL terms.
--
-- Incremental by day (UTC day of end_time) with job_efficiency's lookback: a job's bin follows
-- its matched remote bytes, which change while its accesses can still be matched anew.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='day',
                               grain=['day', 'storage_type', 'ab_arm', 'job_class', 'bytes_read_bin'])) }}
with jobs as (
    select
        day,
        storage_type,
        ab_arm,
        job_class,
        cpu_seconds,
        core_wall_seconds,
        efficiency,
        coalesce(bytes_read, bytes_read_remote)                          as input_bytes,
        {{ bytes_read_bin('coalesce(bytes_read, bytes_read_remote)') }} as bytes_read_bin
    from {{ ref('job_efficiency') }}
    where core_wall_seconds > 0 and {{ in_window('day', lookback) }}
)

select
    day,
    storage_type,
    ab_arm,
    job_class,
    bytes_read_bin,
    count(*)               as jobs,
    sum(cpu_seconds)       as cpu_seconds,
    sum(core_wall_seconds) as core_wall_seconds,
    sum(efficiency)        as efficiency_sum,
    sum(input_bytes)       as input_bytes,
    count(input_bytes)     as jobs_with_input_bytes
from jobs
group by day, storage_type, ab_arm, job_class, bytes_read_bin
