-- data_completeness's 'server' measures of the file accesses, by the UTC day they opened: shares
-- joined to a job exactly, by inference or not at all (accesses and bytes); accesses a cache made
-- to stage a file in (client = a cache server: no job by nature, left out of the join shares);
-- cache accesses by the evidence behind their hit/miss bytes. Ephemeral: a readable part of the
-- mart's one query, over the mart's window (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
-- (int_file_access_by_job is read by each of the next two on its own, not through one CTE,
-- so each reads only its own days and columns)
-- the window's accesses by the day they opened
with window_accesses as (
    select server_host, client_host, server_role, start_time, read_bytes_at_close, match_quality, cache_evidence
    from {{ ref('int_file_access_by_job') }}
    where {{ day_range_sql('start_time', first, stop, instant=true) }}
),

-- every cache server ever seen (a stage-in access's client is one; two columns of all accesses)
cache_hosts as (
    select distinct {{ short_host('server_host') }} as host_key
    from (select distinct server_host from {{ ref('int_file_access_by_job') }} where server_role = 'cache') as servers
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

measures as (
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
)

select
    day, 'server' as grain, subject, measure, '' as detail, unit,
    cast(numerator as double) as numerator, cast(denominator as double) as denominator
from measures
