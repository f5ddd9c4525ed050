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
-- One ephemeral model per kind of measure (int_completeness_*, each over this model's window:
-- window_of), unioned here, where the closing rule is applied.
-- Incremental by day (grain: day x grain x subject x measure x detail; event day: column day, as
-- above): a plain run rebuilds the days that can still change, from the earliest day it holds a
-- provisional row for, or the horizon's day minus the longest days-to-final if earlier
-- (macros/completeness_window.sql); closed days are never recomputed. A back-fill rebuilds its days.
{{ config(**incremental_by_day('day', 0, event_time='day', grain=['day', 'grain', 'subject', 'measure', 'detail'],
                               first_day_rule='provisional')) }}
{%- set days_to_final = completeness_days_to_final_sql('u.grain') %}
with unioned as (
    select * from {{ ref('int_completeness_jobs') }}
    union all
    select * from {{ ref('int_completeness_tags') }}
    union all
    select * from {{ ref('int_completeness_accesses') }}
    union all
    select * from {{ ref('int_completeness_collector') }}
    union all
    select * from {{ ref('int_completeness_rejects') }}
    union all
    select * from {{ ref('int_completeness_intervals') }}
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
