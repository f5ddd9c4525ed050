-- data_completeness's 'cluster' measure tags_without_job: plugin spool records (job tags) whose
-- job accounting never delivered (a tag of a job or step not in stg_job), by the UTC day the tag
-- was written (a tag without a time: its job's start). Ephemeral: a readable part of the mart's
-- one query, over the mart's window (window_of).
-- Built where data_completeness is: on DuckDB only (dbt_project.yml, marts/operations).
{{ config(materialized='ephemeral', window_of='data_completeness', enabled=target.type != 'spark') }}
-- The mart's window reads the newest data loaded (completeness_horizon_sql) in a plain run:
-- depends_on: {{ ref('stg_job') }} {{ ref('stg_file_access') }}
{%- set first, stop = window_first_day(0), window_end_day() %}
with window_tags as (
    -- tags written in the window, and those without a time (dated by their job's start)
    select * from {{ ref('stg_job_tag') }}
    where {{ day_range_sql('tagged_at', first, stop, instant=true) }} or tagged_at is null
),

tags as (
    select
        cast({{ utc('coalesce(t.tagged_at, j.start_time)') }} as date) as day,
        t.cluster,
        j.job_id is null                                                as orphan
    from window_tags t
    left join (select {{ job_key(with_step=false) }}, min(start_time) as start_time
               from {{ ref('stg_job') }} as all_jobs
               where exists (select 1 from window_tags w where {{ job_key_join('w', 'all_jobs', with_step=false) }})
               group by {{ job_key(with_step=false) }}) j
        on {{ job_key_join('j', 't', with_step=false) }}
)

select
    day, 'cluster' as grain, cluster as subject, 'tags_without_job' as measure, '' as detail, 'tags' as unit,
    cast(count(*) filter (where orphan) as double) as numerator, cast(count(*) as double) as denominator
from tags
where day is not null and {{ day_range_sql('day', first, stop) }}
group by day, cluster
