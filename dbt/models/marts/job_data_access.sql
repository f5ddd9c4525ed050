-- What each job read over XRootD and where its bytes came from: one row per job that has at
-- least one matched file access. Accesses a cache makes to fill itself (no job) are not here;
-- they show as staged-in bytes in cache_hourly. match_quality says how the accesses were tied
-- to the job (exact by XRD_MONINFO identity, or inferred from host, time and pid).
-- The sums per job are int_job_remote_bytes'; the ratios and the outcome are this mart's.
-- Incremental by last_access_day, as int_job_remote_bytes.
{%- set lookback = job_match_lookback_days() %}
{#- a job's accesses lie within its run, so its row's earlier last_access_day is at most
    max_wall_days + 1 days before the window -#}
{{ config(**incremental_by_day('last_access_day', lookback, event_time='last_access_day', grain=job_key_names(),
                               row_key=job_key_names(),
                               row_moves_days=(var('max_wall_days', 7) | int) + 1)) }}
select
    {{ job_key() }},
    accesses,
    files,
    accesses_exact,
    accesses_inferred,
    accesses_unclosed,
    bytes_read,
    bytes_opened,
    cast(bytes_read as double) / nullif(bytes_opened, 0)                     as read_fraction,
    mean_read_fraction,
    accesses_via_cache,
    bytes_from_cache,
    bytes_staged_in,
    bytes_bypassed,
    cast(bytes_from_cache as double)
        / nullif(bytes_from_cache + bytes_staged_in + bytes_bypassed, 0)     as cache_hit_ratio_bytes,
    case
        when accesses_via_cache = 0 then 'no cache'
        when bytes_staged_in + bytes_bypassed = 0 then 'all hits'
        when bytes_from_cache = 0 then 'all misses'
        else 'mixed'
    end                                                                      as cache_outcome,
    last_access_day
from ({{ dated_rows(ref('int_job_remote_bytes'), 'last_access_day', in_window('last_access_day', lookback)) }}) as remote
