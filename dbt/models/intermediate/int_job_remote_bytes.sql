-- What each job read over XRootD, summed once per job (or step) from its matched file accesses
-- (int_file_access_by_job, exact or inferred), for every mart that reports remote bytes per job.
-- One row per job key with at least one matched access.
--
-- Bytes are split by route (origin, cache hit, cache miss) and by kind of read: plain reads are
-- whole-file copies to scratch (stage-in), vector reads are ROOT reading the file in place
-- (direct). They cost very differently at a disk server (a stream against a seek every few
-- kilobytes), so the efficiency model keeps them apart. A cache's hit bytes are shared between
-- the two kinds in proportion to the access's bytes of each.
-- The *_exact columns count the accesses matched by job identity alone: job_efficiency reports
-- only those, and the SSD wear estimate counts only the xrdcp copies it is sure of.
--
-- Incremental by last_access_day, the UTC day of the job's latest matched access: a job whose
-- matches change has an access in int_file_access_by_job's rebuilt days, so it is rebuilt here
-- from all its accesses (those of the days up to max_wall_days before), with the same lookback.
-- A plain run on DuckDB after a rebuild by key of int_file_access_by_job rebuilds only the jobs
-- that model recorded in int_job_match_changes (job_changes_by_key in macros/incremental.sql):
-- their rows, whatever their day, are replaced by their sums over their accesses (a job's
-- accesses lie within its run, at most max_wall_days + 1 UTC days); a job left without a
-- matched access loses its row. The rows of every other job are what a rebuild would give.
-- A back-fill's window has an end: a job with accesses after it is rebuilt by the window holding
-- its last access, so the accesses up to max_wall_days + 1 days after the end are read as context
-- and a job whose last access lies after the end is not written (the having clause): a back-fill
-- of a stretch in the middle of history leaves such a job's row, summed over all its accesses, as
-- it was.
-- The changed jobs int_file_access_by_job recorded:
-- depends_on: {{ source('state', 'int_job_match_changes') }}
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('last_access_day', lookback, event_time='last_access_day', grain=job_key_names(),
                               row_key=job_key_names(), row_moves_days=wall_days + 1, rebuild_by='job_changes')) }}
{{ config(post_hook="{{ job_match_changes_taken_up() }}") }}
{%- set by_key = job_changes_by_key() %}
with accesses as (
    select
        {{ job_key() }},
        day,
        match_quality,
        file_lfn,
        file_size_bytes,
        server_role,
        app_name,
        close_seen,
        read_bytes_at_close,
        -- the reconciled cache outcome of the access, as int_file_access_reconciled gives it
        cache_hit_bytes                                                        as outcome_hit_bytes,
        cache_miss_bytes                                                       as outcome_miss_bytes,
        cache_bypass_bytes                                                     as outcome_bypass_bytes,
        cast(coalesce(read_bytes_at_close, 0) as double)                       as total_bytes,
        case when coalesce(read_bytes, 0) + coalesce(readv_bytes, 0) > 0
             then cast(coalesce(read_bytes, 0) as double)
                  / (coalesce(read_bytes, 0) + coalesce(readv_bytes, 0))
             else 1.0 end                                                      as stage_share,
        case when server_role = 'cache' then 0.0
             else cast(coalesce(read_bytes_at_close, 0) as double) end         as origin_part,
        case when server_role <> 'cache' then 0.0
             when coalesce(cache_hit_bytes, 0) < coalesce(read_bytes_at_close, 0)
             then cast(coalesce(cache_hit_bytes, 0) as double)
             else cast(coalesce(read_bytes_at_close, 0) as double) end         as hit_part
    {%- set where = 'job_id is not null' %}
    {%- if by_key %}
        {%- set where = where ~ ' and exists (select 1 from ' ~ job_match_changes() ~ ' as changed where '
                        ~ job_key_join('changed', ref('int_file_access_by_job')) ~ ')' %}
    {%- endif %}
    from ({{ dated_rows(ref('int_file_access_by_job'), 'day',
                        in_window('day', lookback, wall_days + (1 if by_key else 0), wall_days + 1),
                        where=where) }}) as window_rows
),

routed as (
    select
        *,
        total_bytes - origin_part - hit_part                                   as miss_part
    from accesses
)

select
    {{ job_key() }},
    count(*)                                                                   as accesses,
    count(distinct file_lfn)                                                   as files,
    count(*) filter (where match_quality = 'exact')                            as accesses_exact,
    count(*) filter (where match_quality = 'inferred')                         as accesses_inferred,
    count(*) filter (where not close_seen)                                     as accesses_unclosed,
    count(*) filter (where server_role = 'cache')                              as accesses_via_cache,
    coalesce(sum(read_bytes_at_close), 0)                                      as bytes_read,
    coalesce(sum(read_bytes_at_close) filter (where match_quality = 'exact'), 0) as bytes_read_exact,
    coalesce(sum(read_bytes_at_close) filter (where match_quality = 'exact' and app_name = 'xrdcp'), 0)
                                                                               as bytes_copied_exact,
    coalesce(sum(file_size_bytes), 0)                                          as bytes_opened,
    avg(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0))      as mean_read_fraction,
    coalesce(sum(outcome_hit_bytes), 0)                                        as bytes_from_cache,
    coalesce(sum(outcome_miss_bytes), 0)                                       as bytes_staged_in,
    coalesce(sum(outcome_bypass_bytes), 0)                                     as bytes_bypassed,
    sum(total_bytes)                                                           as remote_bytes,
    sum(total_bytes * stage_share)                                             as stage_in_bytes,
    sum(total_bytes * (1 - stage_share))                                       as direct_read_bytes,
    sum(origin_part)                                                           as origin_bytes,
    sum(hit_part)                                                              as cache_hit_bytes,
    sum(miss_part)                                                             as cache_miss_bytes,
    sum(origin_part * stage_share)                                             as stage_origin_bytes,
    sum(hit_part * stage_share)                                                as stage_cache_hit_bytes,
    sum(miss_part * stage_share)                                               as stage_cache_miss_bytes,
    sum(origin_part * (1 - stage_share))                                       as direct_origin_bytes,
    sum(hit_part * (1 - stage_share))                                          as direct_cache_hit_bytes,
    sum(miss_part * (1 - stage_share))                                         as direct_cache_miss_bytes,
    max(day)                                                                   as last_access_day
from routed
group by {{ job_key() }}
{%- if not by_key %}
having max(day) is null or {{ in_window('max(day)', lookback) }}
{%- endif %}
