-- Fairness of one server to the clients reading from it at the same time (Fermilab seed):
-- groups = server x time window (var fairness_window_minutes, default 60, by access start_time,
-- UTC) with at least var fairness_min_clients (default 2) client hosts that read bytes.
-- A client's bandwidth in the window = its bytes read / its seconds of open access (Σ over its
-- closed accesses). Per group: the bandwidth distribution (mean, spread), the slowest/fastest
-- completion-time ratio and Jain's fairness index (Σx)² / (n Σx²) over the clients' bandwidths.
--
-- Incremental by day (the UTC day of window_start), lookback max_wall_days + access_lateness_days:
-- an access arrives when it closes, up to its job's longest wall time after it opened. A group
-- needs only its own window's accesses, so the window's days are rebuilt exactly from the
-- accesses opened in them (a window crossing midnight belongs to the day it starts: its accesses
-- all open on or after that day's start, and a back-fill reads one day past its end for it).
{%- set lookback = access_open_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='window_start', grain=['server_host', 'window_start'])) }}
with accesses as (
    select
        server_host,
        client_host,
        {{ minute_bucket(var('fairness_window_minutes', 60), utc('start_time')) }} as window_utc,
        read_bytes_at_close                                      as bytes_read,
        {{ seconds_between('start_time', 'end_time') }}          as seconds
    from {{ ref('stg_file_access') }}
    where close_seen
      and end_time > start_time
      and read_bytes_at_close > 0
      and client_host is not null
      and {{ instant_after_window('start_time', lookback) }}
      and {{ instant_before_window_end('start_time', 1) }}
),

per_client as (
    select
        server_host,
        window_utc,
        client_host,
        count(*)                                                 as accesses,
        sum(bytes_read)                                          as bytes_read,
        sum(seconds)                                             as seconds,
        sum(bytes_read) / 1e6 / sum(seconds)                     as bandwidth_mb_s
    from accesses
    group by server_host, window_utc, client_host
),

groups as (
    select
        server_host,
        window_utc,
        count(*)                                                 as clients,
        sum(accesses)                                            as accesses,
        sum(bytes_read) / 1e9                                    as gb_read,
        avg(bandwidth_mb_s)                                      as mean_bandwidth_mb_s,
        stddev_pop(bandwidth_mb_s)                               as stddev_bandwidth_mb_s,
        min(bandwidth_mb_s)                                      as min_bandwidth_mb_s,
        max(bandwidth_mb_s)                                      as max_bandwidth_mb_s,
        {{ quantile_cont('bandwidth_mb_s', 0.1) }} as p10_bandwidth_mb_s,
        {{ quantile_cont('bandwidth_mb_s', 0.9) }} as p90_bandwidth_mb_s,
        max(seconds) / nullif(min(seconds), 0)                   as completion_time_ratio,
        power(sum(bandwidth_mb_s), 2)
            / nullif(count(*) * sum(power(bandwidth_mb_s, 2)), 0) as jain_index
    from per_client
    group by server_host, window_utc
    having count(*) >= {{ var('fairness_min_clients', 2) }}
)

select
    server_host,
    {{ from_utc('window_utc') }}                                as window_start,
    {{ var('fairness_window_minutes', 60) }}                     as window_minutes,
    clients,
    accesses,
    gb_read,
    mean_bandwidth_mb_s,
    stddev_bandwidth_mb_s,
    stddev_bandwidth_mb_s / nullif(mean_bandwidth_mb_s, 0)       as bandwidth_cv,
    max_bandwidth_mb_s / nullif(mean_bandwidth_mb_s, 0) - 1      as spread_above_mean,
    1 - min_bandwidth_mb_s / nullif(mean_bandwidth_mb_s, 0)      as spread_below_mean,
    min_bandwidth_mb_s,
    max_bandwidth_mb_s,
    p10_bandwidth_mb_s,
    p90_bandwidth_mb_s,
    completion_time_ratio,
    max_bandwidth_mb_s / nullif(min_bandwidth_mb_s, 0)           as bandwidth_ratio,
    jain_index,
    cast(window_utc as date)                                     as day
from groups
