-- Question: How much did each XCache deliver per day, and how often did it hit?
-- Per cache server and UTC day: accesses, GB served from the cache vs staged in from the origin
-- vs bypassed (GB = 1e9 bytes), and hit ratios recomputed from the day's sums (request hit ratio
-- = accesses with hits and no misses / accesses; byte hit ratio = hit / (hit + miss + bypass)).
-- Reads marts.cache_hourly.
select
    cast(timezone('UTC', hour) as date)                      as day,
    server_host,
    cast(sum(accesses) as bigint)                            as accesses,
    cast(sum(hit_accesses) as bigint)                        as hit_accesses,
    round(sum(gb_delivered_from_cache), 2)                   as gb_delivered_from_cache,
    round(sum(gb_staged_in), 2)                              as gb_staged_in,
    round(sum(gb_bypassed), 2)                               as gb_bypassed,
    round(sum(gb_read), 2)                                   as gb_read,
    round(sum(hit_accesses) / nullif(sum(accesses), 0), 3)   as hit_ratio_requests,
    round(sum(gb_delivered_from_cache)
          / nullif(sum(gb_delivered_from_cache) + sum(gb_staged_in) + sum(gb_bypassed), 0), 3)
                                                             as hit_ratio_bytes
from marts.cache_hourly
group by all
order by day, server_host;
