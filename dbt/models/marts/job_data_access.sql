-- What each job read over XRootD and where its bytes came from: one row per job that has at
-- least one matched file access. Accesses a cache makes to fill itself (no job) are not here;
-- they show as staged-in bytes in cache_hourly. match_quality says how the accesses were tied
-- to the job (exact by XRD_MONINFO identity, or inferred from host, time and pid).
with accesses as (
    select * from {{ ref('int_file_access_by_job') }}
    where job_id is not null
)

select
    batch_system,
    cluster,
    job_id,
    step_id,
    count(*)                                                        as accesses,
    count(distinct file_lfn)                                        as files,
    count(*) filter (where match_quality = 'exact')                 as accesses_exact,
    count(*) filter (where match_quality = 'inferred')              as accesses_inferred,
    count(*) filter (where not close_seen)                          as accesses_unclosed,
    coalesce(sum(read_bytes_at_close), 0)                           as bytes_read,
    coalesce(sum(file_size_bytes), 0)                               as bytes_opened,
    cast(coalesce(sum(read_bytes_at_close), 0) as double)
        / nullif(sum(file_size_bytes), 0)                           as read_fraction,
    avg(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0))  as mean_read_fraction,
    count(*) filter (where server_role = 'cache')                   as accesses_via_cache,
    coalesce(sum(cache_hit_bytes), 0)                               as bytes_from_cache,
    coalesce(sum(cache_miss_bytes), 0)                              as bytes_staged_in,
    coalesce(sum(cache_bypass_bytes), 0)                            as bytes_bypassed,
    cast(coalesce(sum(cache_hit_bytes), 0) as double)
        / nullif(coalesce(sum(cache_hit_bytes), 0) + coalesce(sum(cache_miss_bytes), 0)
                 + coalesce(sum(cache_bypass_bytes), 0), 0)         as cache_hit_ratio_bytes,
    case
        when count(*) filter (where server_role = 'cache') = 0 then 'no cache'
        when coalesce(sum(cache_miss_bytes), 0) + coalesce(sum(cache_bypass_bytes), 0) = 0 then 'all hits'
        when coalesce(sum(cache_hit_bytes), 0) = 0 then 'all misses'
        else 'mixed'
    end                                                             as cache_outcome
from accesses
group by batch_system, cluster, job_id, step_id
