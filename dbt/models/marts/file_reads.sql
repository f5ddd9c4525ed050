-- How each file is read over the whole period: how often, by how many jobs, and how much of it
-- (read fraction = bytes read / file size, the quantity SLAC's algorithm 2 ranks by). Accesses a
-- cache makes to fill itself (app XrdPfc, or a cache host's own reads) are counted apart, as the
-- staging they are, so client reads are not double counted.
--
-- Built from the per-day partials of int_file_reads_day_partials (a table of files x days, not
-- of accesses): every figure is a sum, count, minimum or maximum over days, the mean read
-- fraction a sum of fractions over a count of terms, and a job is counted on the day of its
-- first read of the file, so the sums equal the aggregate over all accesses.
with days as (
    select * from {{ ref('int_file_reads_day_partials') }}
)

select
    file_lfn,
    max(file_size_bytes)                                            as file_size_bytes,
    sum(reads)                                                      as reads,
    sum(jobs_first_reading)                                         as jobs,
    sum(bytes_read)                                                 as bytes_read,
    sum(read_fraction_sum) / nullif(sum(read_fraction_terms), 0)    as mean_read_fraction,
    cast(sum(bytes_read) as double) / nullif(max(file_size_bytes), 0) as total_read_fraction,
    sum(bytes_from_cache)                                           as bytes_from_cache,
    sum(bytes_staged_in)                                            as bytes_staged_in,
    sum(cache_fill_reads)                                           as cache_fill_reads,
    min(first_read)                                                 as first_read,
    max(last_read)                                                  as last_read
from days
group by file_lfn
