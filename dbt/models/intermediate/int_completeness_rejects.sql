-- data_completeness's 'source' measure rejected_records: per UTC day of loading, source and
-- record kind, the records rejected for each reason against the records the source's batches
-- brought. Ephemeral: a readable part of the mart's one query, over the mart's window
-- (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
with batches as (
    select cast({{ utc('loaded_at') }} as date) as day, source, record_kind, sum(rows_in) as rows_in
    from {{ source('raw', 'raw_batches') }}
    where {{ day_range_sql('cast(' ~ utc('loaded_at') ~ ' as date)', first, stop) }}
    group by 1, 2, 3
),

rejects as (
    select cast({{ utc('rejected_at') }} as date) as day, source, record_kind, reason, count(*) as rejected
    from {{ source('raw', 'raw_rejects') }}
    where {{ day_range_sql('cast(' ~ utc('rejected_at') ~ ' as date)', first, stop) }}
    group by 1, 2, 3, 4
)

select
    r.day, 'source' as grain, r.source as subject, 'rejected_records' as measure,
    r.record_kind || ': ' || r.reason as detail, 'records' as unit,
    cast(r.rejected as double) as numerator, cast(b.rows_in as double) as denominator
from rejects r
left join batches b on b.day = r.day and b.source = r.source and b.record_kind = r.record_kind
