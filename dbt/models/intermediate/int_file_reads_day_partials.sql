-- Per-day partial aggregates of the reads of each file: one row per file (file_lfn) x UTC day of
-- the access's open (int_file_access_by_job.day; NULL for accesses without an open time). Sums,
-- counts, minima and maxima only, so any set of days adds up exactly: file_reads is built from
-- it instead of rescanning every access of history. Accesses a cache makes to fill itself (app
-- XrdPfc) are counted apart (cache_fill_reads), as in file_reads.
--
-- A count of distinct jobs does not add up across days, so a job is counted once, on the day of
-- its first client read of the file (jobs_first_reading): the sum over days is the file's
-- distinct jobs. A job's accesses lie within its run, at most max_wall_days long, so its earlier
-- reads of the file are among the max_wall_days of accesses read before the window. A read
-- without an open time places no job.
--
-- Incremental by day with int_file_access_by_job's lookback (max_wall_days + job_lateness_days):
-- an access's job changes while a late accounting record can still match it.
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('day', lookback, event_time='day', grain=['file_lfn', 'day'])) }}
with accesses as (
    select
        file_lfn,
        day,
        file_size_bytes,
        read_bytes_at_close,
        cache_hit_bytes,
        cache_miss_bytes,
        start_time,
        end_time,
        batch_system,
        cluster,
        job_id,
        coalesce(app_name, '') = 'XrdPfc' as cache_fill
    from ({{ dated_rows(ref('int_file_access_by_job'), 'day', in_window('day', lookback, wall_days),
                        where='file_lfn is not null') }}) as window_rows
),

first_reads as (
    select
        file_lfn,
        min(day) as day
    from accesses
    where not cache_fill and job_id is not null and day is not null
    group by file_lfn, batch_system, cluster, job_id
),

jobs_per_day as (
    select
        file_lfn,
        day,
        count(*) as jobs_first_reading
    from first_reads
    where {{ in_window('day', lookback) }}
    group by file_lfn, day
),

per_day as (
    select
        file_lfn,
        day,
        max(file_size_bytes)                                                     as file_size_bytes,
        count(*) filter (where not cache_fill)                                   as reads,
        coalesce(sum(read_bytes_at_close) filter (where not cache_fill), 0)      as bytes_read,
        sum(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0)) filter (where not cache_fill)
                                                                                 as read_fraction_sum,
        count(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0)) filter (where not cache_fill)
                                                                                 as read_fraction_terms,
        coalesce(sum(cache_hit_bytes), 0)                                        as bytes_from_cache,
        coalesce(sum(cache_miss_bytes), 0)                                       as bytes_staged_in,
        count(*) filter (where cache_fill)                                       as cache_fill_reads,
        min(start_time)                                                          as first_read,
        max(coalesce(end_time, start_time))                                      as last_read
    from accesses
    where day is null or {{ in_window('day', lookback) }}
    group by file_lfn, day
)

select
    per_day.file_lfn,
    per_day.file_size_bytes,
    per_day.reads,
    coalesce(jobs_per_day.jobs_first_reading, 0)                                 as jobs_first_reading,
    per_day.bytes_read,
    per_day.read_fraction_sum,
    per_day.read_fraction_terms,
    per_day.bytes_from_cache,
    per_day.bytes_staged_in,
    per_day.cache_fill_reads,
    per_day.first_read,
    per_day.last_read,
    per_day.day
from per_day
left join jobs_per_day
    on per_day.file_lfn = jobs_per_day.file_lfn
    and per_day.day = jobs_per_day.day
