-- How each file is read over the whole period: how often, by how many jobs, and how much of it
-- (read fraction = bytes read / file size, the quantity SLAC's algorithm 2 ranks by). Accesses a
-- cache makes to fill itself (app XrdPfc, or a cache host's own reads) are counted apart, as the
-- staging they are, so client reads are not double counted.
with accesses as (
    select
        *,
        coalesce(app_name, '') = 'XrdPfc' as cache_fill
    from {{ ref('int_file_access_by_job') }}
    where file_lfn is not null
)

select
    file_lfn,
    max(file_size_bytes)                                            as file_size_bytes,
    count(*) filter (where not cache_fill)                          as reads,
    count(distinct job_id) filter (where not cache_fill)            as jobs,
    coalesce(sum(read_bytes_at_close) filter (where not cache_fill), 0) as bytes_read,
    avg(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0)) filter (where not cache_fill)
                                                                    as mean_read_fraction,
    cast(coalesce(sum(read_bytes_at_close) filter (where not cache_fill), 0) as double)
        / nullif(max(file_size_bytes), 0)                           as total_read_fraction,
    coalesce(sum(cache_hit_bytes), 0)                               as bytes_from_cache,
    coalesce(sum(cache_miss_bytes), 0)                              as bytes_staged_in,
    count(*) filter (where cache_fill)                              as cache_fill_reads,
    min(start_time)                                                 as first_read,
    max(coalesce(end_time, start_time))                             as last_read
from accesses
group by file_lfn
