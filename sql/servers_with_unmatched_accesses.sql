-- Question: Which servers' accesses match no job?
-- Per XRootD server over its last 7 days with data (marts.data_completeness, grain 'server'):
-- accesses and bytes read that joined no job (neither through the job identity nor by client
-- host and time), against all accesses from job clients (a cache's own stage-in reads from an
-- origin are counted apart). High shares point at clients without the plugin's XRD_MONINFO or at
-- accounting that has not arrived. Most unmatched bytes first.
with server_days as (
    select *, max("day") over (partition by subject) as last_day
    from marts.data_completeness
    where grain = 'server'
),

recent as (
    select * from server_days where "day" >= last_day - 6
)
select
    subject                                                                     as server,
    sum(numerator) filter (where measure = 'accesses_unmatched')               as accesses_unmatched,
    sum(denominator) filter (where measure = 'accesses_unmatched')             as accesses,
    round(sum(numerator) filter (where measure = 'accesses_unmatched')
          / nullif(sum(denominator) filter (where measure = 'accesses_unmatched'), 0), 3) as unmatched_share,
    round(sum(numerator) filter (where measure = 'bytes_unmatched') / 1e9, 1)  as gb_unmatched,
    round(sum(numerator) filter (where measure = 'bytes_unmatched')
          / nullif(sum(denominator) filter (where measure = 'bytes_unmatched'), 0), 3) as unmatched_bytes_share,
    round(sum(numerator) filter (where measure = 'accesses_inferred')
          / nullif(sum(denominator) filter (where measure = 'accesses_inferred'), 0), 3) as inferred_share,
    sum(numerator) filter (where measure = 'cache_stage_in_accesses')          as cache_stage_in_accesses
from recent
group by subject
order by gb_unmatched desc nulls last, unmatched_share desc nulls last, server;
