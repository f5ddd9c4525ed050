-- How far each figure can be trusted: per UTC day, what share of the jobs, CPU hours, file
-- accesses and bytes behind the marts was actually seen and joined. Long format, one row per
-- day x grain x subject x measure (x detail): numerator / denominator = share.
--   grain 'cluster'   (subject = cluster; day of the job's end): jobs in accounting, tagged by a
--                     plugin, with file accesses found exactly / only by inference / not at all;
--                     plugin spool records (job tags) with no accounting job (day of tagged_at).
--   grain 'server'    (subject = XRootD server; day of the access's open): accesses and bytes
--                     joined exactly, by inference, to no job; cache accesses by the evidence
--                     behind their hit/miss bytes (int_file_access_reconciled.cache_evidence);
--                     sequence gaps of the server's datagrams.
--   grain 'collector' (subject = collector host; day of the counting interval): datagrams the
--                     kernel dropped, records quarantined, cache events matched to no access.
--   grain 'source'    (subject = the source, detail = record kind: reason; day of loading):
--                     records rejected, against the records the source's batches brought;
--                     (detail = outcome; day of the interval) scheduled ingest intervals that
--                     loaded nothing, by why, against the intervals the source ran.
-- A job is its whole-job row (step_id ''), else its first step, as in int_file_access_by_job.
-- Accesses a cache made to an origin to stage a file in (client = a cache server) belong to no
-- job by nature: they are counted apart (cache_stage_in_accesses), outside the join shares.
-- Closed data: a day's figures are provisional until nothing that could still change them can
-- arrive, judged against the newest data loaded (the horizon: latest job end or file access
-- seen, never later than now), not the clock, so a site that stops loading stays provisional:
--   cluster    jobs are counted by the day they ended; their accounting record and plugin tags
--              may arrive up to var job_lateness_days late;
--   server     accesses by the day they opened; the job that made one is loaded when it ends,
--              up to var max_wall_days later (and its record job_lateness_days after that), so
--              its bytes count as unjoined until then;
--   collector, source  counters of their own day.
-- The completeness tests (data_completeness.yml) judge closed rows only.
-- Incremental by day (grain: day x grain x subject x measure x detail; event day: column day, as
-- above): a plain run rebuilds the days that can still change, from the earliest day it holds a
-- provisional row for, or the horizon's day minus the longest days-to-final if earlier
-- (macros/completeness_window.sql); closed days are never recomputed. A back-fill rebuilds its days.
{{ config(**incremental_by_day('day', 0, event_time='day', grain=['day', 'grain', 'subject', 'measure', 'detail'],
                               first_day_rule='provisional')) }}
{%- set max_wall = var('max_wall_days', 7) | int %}
{%- set days_to_final = completeness_days_to_final_sql('u.grain') %}
{%- set first = window_first_day(0) %}
{%- set stop = window_end_day() %}
with job_rows as (
    -- jobs that ran: a launch failure has no CPU hours and is counted in efficiency_by_group.
    -- A job's rows (whole job, steps) end within its run, at most max_wall_days apart: read from
    -- that much before the window, pick the job's row, keep it if it ended in the window.
    select * from {{ one_row_per_job(ref('int_job_tagged'),
                                     where='ran and ' ~ day_range_sql('end_time', first, none, instant=true, before=max_wall + 1)) }} as first_rows
    where {{ day_range_sql('end_time', first, stop, instant=true) }}
),

-- (int_file_access_by_job is read by each of the next three on its own, not through one CTE,
-- so each reads only its own days and columns)
-- the window's accesses by the day they opened
window_accesses as (
    select server_host, client_host, server_role, start_time, read_bytes_at_close, match_quality, cache_evidence
    from {{ ref('int_file_access_by_job') }}
    where {{ day_range_sql('start_time', first, stop, instant=true) }}
),

-- every cache server ever seen (a stage-in access's client is one; two columns of all accesses)
cache_hosts as (
    select distinct {{ short_host('server_host') }} as host_key
    from (select distinct server_host from {{ ref('int_file_access_by_job') }} where server_role = 'cache') as servers
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

cluster_measures as (
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
),

-- Plugin spool records whose job accounting never delivered (tag of a job or step not in stg_job).
window_tags as (
    -- tags written in the window, and those without a time (dated by their job's start)
    select * from {{ ref('stg_job_tag') }}
    where {{ day_range_sql('tagged_at', first, stop, instant=true) }} or tagged_at is null
),

tags as (
    select
        cast({{ utc('coalesce(t.tagged_at, j.start_time)') }} as date) as day,
        t.cluster,
        j.job_id is null                                                as orphan
    from window_tags t
    left join (select {{ job_key(with_step=false) }}, min(start_time) as start_time
               from {{ ref('stg_job') }} as all_jobs
               where exists (select 1 from window_tags w where {{ job_key_join('w', 'all_jobs', with_step=false) }})
               group by {{ job_key(with_step=false) }}) j
        on {{ job_key_join('j', 't', with_step=false) }}
),

tag_measures as (
    select day, cluster as subject, 'tags_without_job' as measure, 'tags' as unit,
           count(*) filter (where orphan) as numerator, count(*) as denominator
    from tags
    where day is not null and {{ day_range_sql('day', first, stop) }}
    group by day, cluster
),

job_side_accesses as (
    select
        a.*,
        cast({{ utc('a.start_time') }} as date)                               as day,
        coalesce(a.read_bytes_at_close, 0)                                    as bytes,
        c.host_key is not null                                                as from_cache
    from window_accesses a
    left join cache_hosts c on c.host_key = {{ short_host('a.client_host') }}
),

server_measures as (
    select day, server_host as subject, 'accesses_exact' as measure, 'accesses' as unit,
           count(*) filter (where match_quality = 'exact') as numerator, count(*) as denominator
    from job_side_accesses where not from_cache group by day, server_host
    union all
    select day, server_host, 'accesses_inferred', 'accesses',
           count(*) filter (where match_quality = 'inferred'), count(*)
    from job_side_accesses where not from_cache group by day, server_host
    union all
    select day, server_host, 'accesses_unmatched', 'accesses',
           count(*) filter (where match_quality = 'unmatched'), count(*)
    from job_side_accesses where not from_cache group by day, server_host
    union all
    select day, server_host, 'bytes_joined', 'bytes',
           sum(bytes) filter (where match_quality <> 'unmatched'), sum(bytes)
    from job_side_accesses where not from_cache group by day, server_host
    union all
    select day, server_host, 'bytes_unmatched', 'bytes',
           sum(bytes) filter (where match_quality = 'unmatched'), sum(bytes)
    from job_side_accesses where not from_cache group by day, server_host
    union all
    select day, server_host, 'cache_stage_in_accesses', 'accesses', count(*) filter (where from_cache), count(*)
    from job_side_accesses group by day, server_host
    union all
    -- the evidence behind a cache access's hit/miss bytes (int_file_access_reconciled): the
    -- origin's record of the cache's reads ('origin', or 'both' with the g-stream beside it), or
    -- the g-stream alone, which is not to be taken at its word
    select day, server_host, 'cache_accesses_reconciled', 'accesses',
           count(*) filter (where cache_evidence in ('origin', 'both')), count(*)
    from job_side_accesses where server_role = 'cache' group by day, server_host
    union all
    select day, server_host, 'cache_accesses_gstream_only', 'accesses',
           count(*) filter (where cache_evidence = 'gstream'), count(*)
    from job_side_accesses where server_role = 'cache' group by day, server_host
),

stats as (
    select * from (
        select *, cast({{ utc('interval_start') }} as date) as day
        from {{ ref('stg_collector_stats') }}
    ) as dated
    where {{ day_range_sql('day', first, stop) }}
),

collector_measures as (
    select day, 'server' as grain, server_host as subject, 'sequence_gaps' as measure, 'datagrams' as unit,
           sum(sequence_gaps) as numerator, sum(datagrams + sequence_gaps) as denominator
    from stats where server_host <> '' group by day, server_host
    union all
    select day, 'collector', collector_host, 'kernel_drops', 'datagrams',
           sum(kernel_drops), sum(datagrams + kernel_drops)
    from stats group by day, collector_host
    union all
    select day, 'collector', collector_host, 'quarantined', 'datagrams', sum(quarantined), sum(datagrams)
    from stats group by day, collector_host
    union all
    select day, 'collector', collector_host, 'cache_events_unmatched', 'events', sum(pfc_unmatched),
           cast(null as bigint)
    from stats group by day, collector_host
),

batches as (
    select cast({{ utc('loaded_at') }} as date) as day, source, record_kind, sum(rows_in) as rows_in
    from {{ source('raw', 'raw_batches') }}
    where {{ day_range_sql('cast(' ~ utc('loaded_at') ~ ' as date)', first, stop) }}
    group by 1, 2, 3
),

rejects as (
    select cast({{ utc('rejected_at') }} as date) as day, source, record_kind, reason, count(*) as rejected
    from {{ source('raw', 'raw_rejects') }}
    where {{ day_range_sql('cast(' ~ utc('rejected_at') ~ ' as date)', first, stop) }}
    group by 1, 2, 3, 4
),

source_measures as (
    select r.day, r.source as subject, r.record_kind || ': ' || r.reason as detail,
           'rejected_records' as measure, 'records' as unit,
           r.rejected as numerator, b.rows_in as denominator
    from rejects r
    left join batches b on b.day = r.day and b.source = r.source and b.record_kind = r.record_kind
),

-- Scheduled ingest intervals that loaded nothing, by why (outcome), against the intervals the
-- source ran for that day (day of the interval's start).
intervals as (
    select * from (
        select cast({{ utc('interval_start') }} as date) as day, source, outcome
        from {{ ref('stg_source_interval') }}
    ) as dated
    where {{ day_range_sql('day', first, stop) }}
),

interval_measures as (
    select i.day, i.source as subject, i.outcome as detail, 'intervals_loaded_nothing' as measure,
           'intervals' as unit, count(*) as numerator, max(t.intervals) as denominator
    from intervals i
    inner join (select day, source, count(*) as intervals from intervals group by day, source) t
        on t.day = i.day and t.source = i.source
    where i.outcome <> 'loaded'
    group by i.day, i.source, i.outcome
),

unioned as (
    select day, 'cluster' as grain, subject, measure, '' as detail, unit,
           cast(numerator as double) as numerator, cast(denominator as double) as denominator
    from cluster_measures
    union all
    select day, 'cluster', subject, measure, '', unit, numerator, denominator from tag_measures
    union all
    select day, 'server', subject, measure, '', unit, numerator, denominator from server_measures
    union all
    select day, grain, subject, measure, '', unit, numerator, denominator from collector_measures
    union all
    select day, 'source', subject, measure, detail, unit, numerator, denominator from source_measures
    union all
    select day, 'source', subject, measure, detail, unit, numerator, denominator from interval_measures
),

horizon as (
    {{ completeness_horizon_sql() }}
),

closing as (
    select
        u.*,
        cast({{ dbt.dateadd('day', days_to_final, 'u.day') }} as date) as final_from
    from unioned u
),

final as (
    select
        c.day,
        c.grain,
        coalesce(subject, '')                                   as subject,
        measure,
        detail,
        unit,
        coalesce(numerator, 0)                                  as numerator,
        denominator,
        coalesce(numerator, 0) / nullif(denominator, 0)         as share,
        final_from,
        h.newest is null or {{ utc('h.newest') }} < cast(final_from as timestamp) as provisional
    from closing c
    cross join horizon h
    where c.day is not null
)

select * from final
