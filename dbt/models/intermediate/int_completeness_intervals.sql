-- data_completeness's 'source' measure intervals_loaded_nothing: scheduled ingest intervals that
-- loaded nothing, by why (outcome, the row's detail), against the intervals the source ran that
-- UTC day (day of the interval's start). Ephemeral: a readable part of the mart's one query, over
-- the mart's window (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
with intervals as (
    select * from (
        select cast({{ utc('interval_start') }} as date) as day, source, outcome
        from {{ ref('stg_source_interval') }}
    ) as dated
    where {{ day_range_sql('day', first, stop) }}
)

select
    i.day, 'source' as grain, i.source as subject, 'intervals_loaded_nothing' as measure,
    i.outcome as detail, 'intervals' as unit,
    cast(count(*) as double) as numerator, cast(max(t.intervals) as double) as denominator
from intervals i
inner join (select day, source, count(*) as intervals from intervals group by day, source) t
    on t.day = i.day and t.source = i.source
where i.outcome <> 'loaded'
group by i.day, i.source, i.outcome
