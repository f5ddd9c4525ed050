-- How each file is read over the whole period: how often, by how many jobs, and how much of it
-- (read fraction = bytes read / file size, the quantity SLAC's algorithm 2 ranks by). Accesses a
-- cache makes to fill itself (app XrdPfc, or a cache host's own reads) are counted apart, as the
-- staging they are, so client reads are not double counted.
--
-- Built from the per-day partials of int_file_reads_day_partials (a table of files x days, not
-- of accesses): every figure is a sum, count, minimum or maximum over days, the mean read
-- fraction a sum of fractions over a count of terms, and a job is counted on the day of its
-- first read of the file, so the sums equal the aggregate over all accesses.
--
-- Incremental by file (macros/file_reads_window.sql): a plain run re-adds every day of the files
-- whose partials its window can have changed, so its cost follows those files, not history.
{%- set lookback = job_match_lookback_days() %}
{{ config(**incremental_by_day('last_access_day', lookback, event_time='last_access_day', grain=['file_lfn'],
                               rebuild_by='file', on_schema_change='append_new_columns')) }}
{%- set first = file_reads_first_day(lookback) %}
with
{%- if first is not none %}
changed_files as (
    select file_lfn
    from {{ ref('int_file_reads_day_partials') }}
    where day is null or day >= {{ date_literal(first) }}
    union
    select file_lfn
    from {{ this }}
    where last_access_day is null or last_access_day >= {{ date_literal(first) }}
),
{%- endif %}

days as (
    select * from {{ ref('int_file_reads_day_partials') }}
    {%- if first is not none %}
    where file_lfn in (select file_lfn from changed_files)
    {%- endif %}
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
    max(last_read)                                                  as last_read,
    max(day)                                                        as last_access_day
from days
group by file_lfn
