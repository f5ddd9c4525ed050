-- Question: Do jobs that read through the cache run more efficiently than jobs reading directly?
-- Jobs grouped by the cache route their tag recorded ('cache:<host>:<port>', 'direct', or
-- untagged) and storage type: efficiency (Σ CPU / Σ wall x cores), the XRootD file accesses
-- joined to them exactly and the GB they read remotely (GB = 1e9 bytes). Reads marts.job_efficiency.
select
    case
        when cache_route like 'cache:%' then 'cache'
        when cache_route is null then '(untagged)'
        else cache_route
    end                                                              as route,
    storage_type,
    count(*)                                                         as jobs,
    round(sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0), 3)   as efficiency,
    round(avg(efficiency), 3)                                        as mean_job_efficiency,
    cast(sum(files_accessed) as bigint)                              as files_accessed,
    round(sum(bytes_read_remote) / 1e9, 2)                           as gb_read_remote
from marts.job_efficiency
group by all
order by route, storage_type;
