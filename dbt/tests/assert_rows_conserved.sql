-- Nothing is lost or duplicated between layers:
--   every finished job that ran (end_time set, wall > 0) of stg_job is one row of job_efficiency;
--   every file access of stg_file_access is one row of int_file_access_by_job;
--   every cache access is counted once in cache_hourly;
--   every catalog configuration is one row of storage_price_performance;
--   exact-matched accesses counted on finished jobs never exceed the exact matches;
--   every failed job that ended (ran or not) is counted once in efficiency_by_group's days.
-- File accesses are compared over the span raw still holds: retention deletes raw accesses that
-- ended before a cut-off while the models keep them, so both sides start at the oldest access
-- left (cache_hourly at the first whole hour after it).
{#- name, relation, rows counted (model, filter), figure compared (model, aggregate, filter) #}
{%- set access_time = 'coalesce(end_time, start_time)' %}
{%- set oldest_kept = '(select min(' ~ access_time ~ ') from ' ~ ref('stg_file_access') ~ ')' %}
{%- set kept = access_time ~ ' is null or ' ~ access_time ~ ' >= ' ~ oldest_kept %}
{%- set first_whole_hour = "(select date_trunc('hour', min(" ~ access_time ~ ")) + interval 1 hour from "
                           ~ ref('stg_file_access') ~ ")" %}
{%- set checks = [
    ('job_efficiency', '=', 'stg_job', 'end_time is not null and wall_seconds > 0', 'job_efficiency', 'count(*)', 'true'),
    ('int_file_access_by_job', '=', 'stg_file_access', kept, 'int_file_access_by_job', 'count(*)', kept),
    ('cache_hourly', '=', 'stg_file_access',
     "server_role = 'cache' and (" ~ access_time ~ ' is null or ' ~ access_time ~ ' >= ' ~ first_whole_hour ~ ')',
     'cache_hourly', 'sum(accesses)', 'hour is null or hour >= ' ~ first_whole_hour),
    ('storage_price_performance', '=', 'stg_storage_catalog', 'true', 'storage_price_performance', 'count(*)', 'true'),
    ('files_accessed', '<=', 'int_file_access_by_job', "match_quality = 'exact'", 'job_efficiency', 'sum(files_accessed)', 'true'),
    ('failed_jobs', '=', 'int_job_tagged', 'failed', 'efficiency_by_group', 'sum(failed_jobs)', "period_grain = 'day'"),
] %}
with counts as (
{%- for name, relation, counted, counted_filter, compared, aggregate, compared_filter in checks %}
    select
        '{{ name }}' as check_name,
        '{{ relation }}' as relation,
        (select count(*) from {{ ref(counted) }} where {{ counted_filter }}) as expected,
        (select coalesce({{ aggregate }}, 0) from {{ ref(compared) }} where {{ compared_filter }}) as actual
    {{- '\n    union all' if not loop.last }}
{%- endfor %}
)

select check_name, expected, actual
from counts
where (relation = '=' and expected <> actual)
   or (relation = '<=' and actual > expected)
