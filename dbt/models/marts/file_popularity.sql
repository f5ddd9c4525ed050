-- File popularity as the SLAC seed's caching algorithms see it, as of the last access in the
-- warehouse (reference time = latest end_time, else start_time, of the recent accesses, below):
--   accesses_p01 .. accesses_p10: accesses started in each of the 10 most recent 12-hour periods
--     (p01 = the latest 12 hours; algorithm 1's table, right-shifted every 12 hours);
--   reads_recent: accesses in the last var popularity_recent_days days (default 5);
--   mean_read_fraction: mean of read bytes / file size over those accesses;
--   score = reads_recent x mean_read_fraction, and popularity_rank by score (algorithm 2).
-- Accesses made by a cache filling itself (app_name 'XrdPfc') are not counted: they repeat a
-- client's read. Files accessed only before the 10 periods and the recent window are absent.
--
-- Only the last days are read: the newest access open is found first (a top-1 by start_time,
-- which DuckDB answers from the newest row groups), then every access opened since that day
-- minus max(max_wall_days, the 10 periods, the recent window) is read through a constant
-- predicate on start_time that DuckDB prunes older row groups on. The reference time is the
-- latest end (else start) of the accesses opened in the max_wall_days before the newest open:
-- an access stays open at most as long as its job, so no older access ends later.
{%- set recent_days = var('popularity_recent_days', 5) | int %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{%- set since = popularity_first_day(ref('stg_file_access'), [wall_days, recent_days, 5] | max + 1) %}
with latest as (
    select * from {{ ref('stg_file_access') }}
    where start_time is not null
    {%- if since is not none %}
      and start_time >= {{ day_start_instant(since) }}
    {%- endif %}
),

newest_open as (
    select max(start_time) as newest_start from latest
),

accesses as (
    select
        file_lfn,
        file_size_bytes,
        read_bytes_at_close,
        {{ utc('start_time') }}                                  as start_utc
    from latest
    where file_lfn is not null
      and coalesce(app_name, '') <> 'XrdPfc'
),

reference as (
    select max({{ utc('coalesce(latest.end_time, latest.start_time)') }}) as ref_utc
    from latest, newest_open
    where latest.start_time >= newest_open.newest_start - interval {{ wall_days }} day
),

placed as (
    select
        accesses.*,
        cast(floor({{ seconds_between('accesses.start_utc', 'reference.ref_utc') }} / 43200) as integer) + 1
                                                                 as period,
        accesses.start_utc > reference.ref_utc - interval {{ recent_days }} day as recent,
        reference.ref_utc
    from accesses, reference
),

per_file as (
    select
        file_lfn,
        max(file_size_bytes)                                     as file_size_bytes,
{%- for p in range(1, 11) %}
        count(*) filter (where period = {{ p }})                 as accesses_p{{ '%02d' % p }},
{%- endfor %}
        count(*) filter (where period between 1 and 10)          as accesses_10_periods,
        count(*) filter (where recent)                           as reads_recent,
        coalesce(sum(read_bytes_at_close) filter (where recent), 0) as bytes_read_recent,
        avg(cast(read_bytes_at_close as double) / nullif(file_size_bytes, 0)) filter (where recent)
                                                                 as mean_read_fraction,
        max(start_utc)                                           as last_access_utc,
        {{ any_value('ref_utc') }} as ref_utc
    from placed
    group by file_lfn
    having count(*) filter (where period between 1 and 10 or recent) > 0
)

select
    file_lfn,
    file_size_bytes,
{%- for p in range(1, 11) %}
    accesses_p{{ '%02d' % p }},
{%- endfor %}
    accesses_10_periods,
    reads_recent,
    {{ recent_days }}                                            as recent_days,
    bytes_read_recent,
    mean_read_fraction,
    reads_recent * coalesce(mean_read_fraction, 0)               as score,
    row_number() over (
        order by reads_recent * coalesce(mean_read_fraction, 0) desc, reads_recent desc, file_lfn
    )                                                            as popularity_rank,
    {{ from_utc('last_access_utc') }}                           as last_access,
    {{ from_utc('ref_utc') }}                                   as reference_time
from per_file
