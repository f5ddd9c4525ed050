-- What each XCache (server_role 'cache') delivered per UTC hour, by the hour of the access's
-- end_time (its close; start_time when no end was recorded), as in the SLAC study's hourly
-- "GB delivered from cache vs GB staged in" plot. GB = 1e9 bytes (decimal gigabytes).
-- Hit and miss bytes are the reconciled ones (int_file_access_reconciled: the origin's record of
-- the cache's own reads where there is one, else the g-stream corrected), not the g-stream's word.
--
-- Incremental by day (UTC day of hour), lookback access_lateness_days (as
-- int_file_access_reconciled); an access open longer than max_wall_days is not looked back to.
{%- set lookback = access_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('day', lookback, event_time='hour', grain=['hour', 'server_host'])) }}
with accesses as (
    select
        server_host,
        date_trunc('hour', {{ utc('coalesce(end_time, start_time)') }}) as hour_utc,
        coalesce(cache_hit_bytes, 0)    as hit_bytes,
        coalesce(cache_miss_bytes, 0)   as miss_bytes,
        coalesce(cache_bypass_bytes, 0) as bypass_bytes,
        coalesce(read_bytes_at_close, 0) as read_bytes
    from ({{ dated_rows(ref('int_file_access_reconciled'), 'day', in_window('day', lookback, wall_days),
                        where="server_role = 'cache'") }}) as window_rows
    where coalesce(end_time, start_time) is null
       or {{ in_window('cast(' ~ utc('coalesce(end_time, start_time)') ~ ' as date)', lookback) }}
),

aggregated as (
    select
        hour_utc,
        server_host,
        count(*)                                                 as accesses,
        count(*) filter (where hit_bytes > 0 and miss_bytes = 0) as hit_accesses,
        sum(hit_bytes)                                           as hit_bytes,
        sum(miss_bytes)                                          as miss_bytes,
        sum(bypass_bytes)                                        as bypass_bytes,
        sum(read_bytes)                                          as read_bytes
    from accesses
    group by hour_utc, server_host
)

select
    {{ from_utc('hour_utc') }}                                  as hour,
    server_host,
    accesses,
    hit_accesses,
    hit_bytes / 1e9                                              as gb_delivered_from_cache,
    miss_bytes / 1e9                                             as gb_staged_in,
    bypass_bytes / 1e9                                           as gb_bypassed,
    read_bytes / 1e9                                             as gb_read,
    hit_accesses / nullif(accesses, 0)                           as hit_ratio_requests,
    hit_bytes / nullif(hit_bytes + miss_bytes + bypass_bytes, 0) as hit_ratio_bytes,
    cast(hour_utc as date)                                       as day
from aggregated
