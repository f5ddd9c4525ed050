-- Nothing is lost or duplicated between layers:
--   every finished job that ran (end_time set, wall > 0) of stg_job is one row of job_efficiency;
--   every file access of stg_file_access is one row of int_file_access_by_job;
--   every cache access is counted once in cache_hourly;
--   every catalog configuration is one row of storage_price_performance;
--   exact-matched accesses counted on finished jobs never exceed the exact matches;
--   every failed job that ended (ran or not) is counted once in efficiency_by_group's days.
{#- name, relation, rows counted (model, filter), figure compared (model, aggregate, filter) #}
{%- set checks = [
    ('job_efficiency', '=', 'stg_job', 'end_time is not null and wall_seconds > 0', 'job_efficiency', 'count(*)', 'true'),
    ('int_file_access_by_job', '=', 'stg_file_access', 'true', 'int_file_access_by_job', 'count(*)', 'true'),
    ('cache_hourly', '=', 'stg_file_access', "server_role = 'cache'", 'cache_hourly', 'sum(accesses)', 'true'),
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
