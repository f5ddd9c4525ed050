-- Every file access, with an XCache's hit/miss/bypass bytes taken from the best evidence there is.
--
-- The cache's own g-stream (b_hit, b_miss) is not to be taken at its word: blocks a first read
-- waited for are counted as hits (xrootd #2366), and one lost datagram loses a file's figures
-- (#2447). The origin knows better: a cache stages a file by reading it from the origin under
-- its own login, so the origin's f-stream records an access whose client pid is the cache
-- server's pid (server_pid of the cache's rows, from its '=' record) from the cache's host.
-- Those are the cache's fills. This is done here, over all accesses, and not in the collector:
-- with several collector workers the origin's and the cache's packets may be decoded by
-- different processes, and origins at other sites may report to another collector entirely.
--
-- Per cache access (server_role 'cache'):
--   * fills: origin accesses from the cache's host (short name or monitoring address) and pid,
--     same lfn, starting within the cache access's open..close (2 s either side: both servers
--     report in 1 s windows). A fill belongs to the earliest-opened cache access it can; the one
--     that made the cache fetch.
--   * evidence 'origin' / 'both' (g-stream present too): miss = the fill bytes, capped by what
--     the access was served (less bypass; the f-stream's bytes, or the g-stream's when larger)
--     and by the file size; hit = the rest of what it was served. A
--     cache access without a fill is all hits when the cache's origin is monitored (the cache
--     has fills on the UTC day the access opened) and the g-stream does not say an origin was contacted (remotes).
--   * evidence 'todisk' (no origin evidence; XRootD 5.7.2+ caches): the cache's own b_todisk, the
--     bytes it fetched from the origin and wrote to its disk during the attach (unlike b_miss it
--     counts the blocks a first read waited for), capped by what the access was served; hit =
--     the rest. It includes prefetched blocks no read asked for, hence the cap.
--   * evidence 'gstream' (no origin evidence, no b_todisk): b_hit + b_miss corrected with what the event
--     carries besides: access_cnt = 1 is the file's first access, so nothing was on disk (all
--     miss); remotes = '' means no origin was contacted (all hit); when the cache's report on the
--     access before (by open time, access_cnt one less, within var cache_previous_report_days) is there, the blocks that reached its disk since
--     (n_blks_done now - then, at the file's mean block size) were fetched for this access;
--     otherwise the g-stream split.
--   * no evidence: NULL bytes.
-- gstream_* keep the cache's own word beside the reconciled figures.
--
-- Incremental by the UTC day of start_time (column day), lookback access_lateness_days: cache
-- events and origin fills arrive within minutes. The window's accesses are rebuilt from the
-- accesses of the window and, before it, only those its rows look back to, each kind as far as
-- it needs: cache accesses of var cache_previous_report_days (default 7; at least 1) before, for
-- the cache's previous report on a file and for the earlier cache access a fill may belong to;
-- origin accesses from a cache's pid of the day before, the fills (a fill opens at most 2 s
-- before its cache access); no other access, since an origin row takes nothing from its
-- neighbours. The window's own rows and those without an open are read whole.
{%- set lookback = access_lookback_days() %}
{%- set report_days = var('cache_previous_report_days', 7) | int %}
{%- set first = window_first_day(lookback) %}
{{ config(**incremental_by_day('day', lookback, event_time='start_time', grain=['server_host', 'unique_id'])) }}
with accesses as (
    select
        *,
        cast({{ utc('start_time') }} as date) as day
    from {{ ref('stg_file_access') }}
    where start_time is null
       or ({{ instant_after_window('start_time', lookback) }}
           and {{ instant_before_window_end('start_time', 1) }})
{%- if first is not none %}
    union all
    select
        *,
        cast({{ utc('start_time') }} as date) as day
    from {{ ref('stg_file_access') }}
    where server_role = 'cache'
      and {{ instant_after_window('start_time', lookback, [report_days, 1] | max) }}
      and start_time < {{ day_start_instant(first) }}
    union all
    select
        *,
        cast({{ utc('start_time') }} as date) as day
    from {{ ref('stg_file_access') }}
    where coalesce(server_role, 'origin') = 'origin' and client_pid is not null
      and {{ instant_after_window('start_time', lookback, 1) }}
      and start_time < {{ day_start_instant(first) }}
{%- endif %}
),

caches as (
    select distinct
        server_host,
        {{ short_host(dbt.split_part('server_host', "':'", 1)) }} as cache_host,
        server_addr                                               as cache_addr,
        server_pid                                                as cache_pid
    from accesses
    where server_role = 'cache' and server_pid is not null
),

fills as (
    select
        caches.server_host                       as cache_server_host,
        origin.server_host                       as origin_server_host,
        origin.unique_id                         as origin_unique_id,
        origin.file_lfn,
        origin.start_time                        as fill_start,
        {{ epoch_micros('origin.start_time') }}  as fill_start_us,
        coalesce(origin.read_bytes_at_close, 0)  as fill_bytes
    from accesses as origin
    inner join caches
        on origin.client_pid = caches.cache_pid
        and ({{ short_host('origin.client_host') }} = caches.cache_host
             or origin.client_host = caches.cache_addr)
    where coalesce(origin.server_role, 'origin') = 'origin'
),

fill_candidates as (
    select
        fills.origin_server_host,
        fills.origin_unique_id,
        fills.fill_bytes,
        cache_access.server_host,
        cache_access.unique_id,
        row_number() over (
            partition by fills.origin_server_host, fills.origin_unique_id
            order by cache_access.start_time, cache_access.unique_id
        ) as fill_rank
    from fills
    inner join accesses as cache_access
        on cache_access.server_host = fills.cache_server_host
        and cache_access.file_lfn = fills.file_lfn
        and fills.fill_start_us >= {{ epoch_micros('cache_access.start_time') }} - 2000000
        and fills.fill_start_us <= {{ epoch_micros('coalesce(cache_access.end_time, cache_access.start_time)') }} + 2000000
),

fill_bytes as (
    select server_host, unique_id, sum(fill_bytes) as origin_fill_bytes, count(*) as origin_fills
    from fill_candidates
    where fill_rank = 1
    group by server_host, unique_id
),

-- The days a cache's origin was monitored: it had fills that day.
monitored_origin as (
    select distinct cache_server_host as server_host, cast({{ utc('fill_start') }} as date) as day
    from fills
),

-- The cache's previous report on the same file: the blocks it had on disk then, when the
-- access just before this one (by open time) was the file's previous access (access_cnt one
-- less) and opened at most var cache_previous_report_days before it.
previous_report as (
    select
        server_host,
        unique_id,
        case
            when previous_count = cache_access_count - 1
                 and previous_start >= start_time - interval '{{ report_days }}' day
            then previous_blocks_done
        end as previous_blocks_done
    from (
        select
            server_host,
            unique_id,
            start_time,
            cache_access_count,
            lag(cache_access_count) over file_reports as previous_count,
            lag(start_time) over file_reports         as previous_start,
            lag(cache_blocks_done) over file_reports  as previous_blocks_done
        from accesses
        where server_role = 'cache' and cache_access_count is not null
        window file_reports as (partition by server_host, file_lfn order by start_time, unique_id)
    ) as reports
),

sides as (
    select
        accesses.*,
        previous_report.previous_blocks_done,
        fill_bytes.origin_fill_bytes,
        monitored_origin.server_host is not null                          as origin_monitored,
        -- what the access was served, less bypass: the f-stream's bytes, or the g-stream's when
        -- larger (a close the server forces when the client dies reports 0 bytes on an XCache)
        greatest(
            greatest(coalesce(accesses.read_bytes_at_close, 0),
                     coalesce(accesses.cache_hit_bytes + accesses.cache_miss_bytes + accesses.cache_bypass_bytes, 0))
            - coalesce(accesses.cache_bypass_bytes, 0),
            0)                                                             as stored_path_bytes,
        accesses.cache_hit_bytes + accesses.cache_miss_bytes               as gstream_served_bytes
    from accesses
    left join fill_bytes
        on fill_bytes.server_host = accesses.server_host
        and fill_bytes.unique_id = accesses.unique_id
    left join monitored_origin
        on monitored_origin.server_host = accesses.server_host
        and monitored_origin.day = accesses.day
        and accesses.server_role = 'cache'
    left join previous_report
        on previous_report.server_host = accesses.server_host
        and previous_report.unique_id = accesses.unique_id
),

evidence as (
    select
        sides.*,
        case
            when server_role <> 'cache' or server_role is null then null
            when origin_fill_bytes is not null
                then least(origin_fill_bytes, stored_path_bytes, coalesce(file_size_bytes, origin_fill_bytes))
            when origin_monitored and coalesce(cache_remotes, '') = '' then 0
            when cache_todisk_bytes is not null then least(cache_todisk_bytes, stored_path_bytes)
            when gstream_served_bytes is null then null
            when cache_access_count = 1 then gstream_served_bytes
            when cache_remotes = '' then 0
            -- blocks that reached the disk during this attach, at the file's mean block size
            when previous_blocks_done is not null and cache_blocks_done >= previous_blocks_done
                 and cache_blocks > 0 and file_size_bytes is not null
                then least(gstream_served_bytes,
                           cast((cache_blocks_done - previous_blocks_done) * file_size_bytes / cache_blocks as bigint))
            else cache_miss_bytes
        end as reconciled_miss_bytes,
        case
            when server_role <> 'cache' or server_role is null then null
            when origin_fill_bytes is not null or (origin_monitored and coalesce(cache_remotes, '') = '')
                then case when cache_hit_bytes is not null then 'both' else 'origin' end
            when cache_todisk_bytes is not null then 'todisk'
            when gstream_served_bytes is not null then 'gstream'
        end as cache_evidence
    from sides
)

select
    server_host,
    unique_id,
    server_role,
    file_lfn,
    file_size_bytes,
    start_time,
    end_time,
    read_single_average_bytes,
    read_vector_average_bytes,
    write_average_bytes,
    read_bytes_at_close,
    write_bytes_at_close,
    read_bytes,
    readv_bytes,
    write_bytes,
    read_ops,
    readv_ops,
    write_ops,
    client_host,
    client_pid,
    app_name,
    job_identity,
    case
        when cache_evidence in ('origin', 'both', 'todisk') then stored_path_bytes - reconciled_miss_bytes
        when cache_evidence = 'gstream' then gstream_served_bytes - reconciled_miss_bytes
    end                                                              as cache_hit_bytes,
    reconciled_miss_bytes                                            as cache_miss_bytes,
    case when cache_evidence is not null then coalesce(cache_bypass_bytes, 0) end as cache_bypass_bytes,
    close_seen,
    end_reason,
    server_pid,
    server_addr,
    cache_attach_time,
    cache_detach_time,
    cache_access_count,
    cache_remotes,
    cache_blocks,
    cache_blocks_done,
    cache_todisk_bytes,
    cache_prefetch_bytes,
    cache_evidence,
    origin_fill_bytes,
    cache_hit_bytes                                                  as gstream_hit_bytes,
    cache_miss_bytes                                                 as gstream_miss_bytes,
    cache_bypass_bytes                                               as gstream_bypass_bytes,
    day
from evidence
where {{ in_window('day', lookback) }} or day is null
