-- data_completeness's measures of the collectors' own counters, by the UTC day of the counting
-- interval: sequence gaps of a server's datagrams ('server'), datagrams the kernel dropped,
-- records quarantined and cache events matched to no access ('collector'). Ephemeral: a
-- readable part of the mart's one query, over the mart's window (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
with stats as (
    select * from (
        select *, cast({{ utc('interval_start') }} as date) as day
        from {{ ref('stg_collector_stats') }}
    ) as dated
    where {{ day_range_sql('day', first, stop) }}
),

measures as (
    select day, 'server' as grain, server_host as subject, 'sequence_gaps' as measure, 'datagrams' as unit,
           sum(sequence_gaps) as numerator, sum(datagrams + sequence_gaps) as denominator
    from stats where server_host <> '' group by day, server_host
    union all
    select day, 'collector', collector_host, 'kernel_drops', 'datagrams',
           sum(kernel_drops), sum(datagrams + kernel_drops)
    from stats group by day, collector_host
    union all
    select day, 'collector', collector_host, 'quarantined', 'datagrams', sum(quarantined), sum(datagrams)
    from stats group by day, collector_host
    union all
    select day, 'collector', collector_host, 'cache_events_unmatched', 'events', sum(pfc_unmatched),
           cast(null as bigint)
    from stats group by day, collector_host
)

select
    day, grain, subject, measure, '' as detail, unit,
    cast(numerator as double) as numerator, cast(denominator as double) as denominator
from measures
