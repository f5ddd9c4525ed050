-- depends_on: {{ ref('int_efficiency_day_partials') }}
-- Nothing is lost or duplicated between layers:
--   every finished job that ran (end_time set, wall > 0) of stg_job is one row of job_efficiency;
--   every file access of stg_file_access is one row of int_file_access_by_job;
--   every cache access is counted once in cache_hourly;
--   every catalog configuration is one row of storage_price_performance;
--   exact-matched accesses counted on finished jobs never exceed the exact matches;
--   every failed job that ended (ran or not) is counted once in efficiency_by_group's days.
-- File accesses are compared over the span raw still holds: retention deletes raw accesses that
-- ended before a cut-off while the models keep them, so both sides start at the oldest access
-- left (cache_hourly at the first whole hour after it), and the files counted on jobs are those of
-- the jobs that started after the oldest close left.
--
-- In a core-scope run (var test_scope: core, macros/test_scope.sql) each check compares only the
-- days on and after the first day the run rebuilt of the incremental models it reads, and rows
-- without a day: the days before hold the same rows on both sides as when the last run's tests
-- passed (a view over raw that changed there holds a record later than every lookback, which only
-- a back-fill brings in: the daily all-tests run reports it). A model the run built whole (its
-- first build) leaves its checks whole.
{#- name, relation, rows counted (model, filter), figure compared (model, aggregate, filter) #}
{%- set access_time = 'coalesce(end_time, start_time)' %}
{%- set oldest_kept = '(select min(' ~ access_time ~ ') from ' ~ ref('stg_file_access') ~ ')' %}
{%- set kept = access_time ~ ' is null or ' ~ access_time ~ ' >= ' ~ oldest_kept %}
{%- set first_whole_hour = "(select date_trunc('hour', min(" ~ access_time ~ ")) + interval 1 hour from "
                           ~ ref('stg_file_access') ~ ")" %}
{#- jobs whose accesses raw still holds: retention deletes the accesses that closed before its cut-off,
    so every access closing after the oldest close left is held, and a job's accesses lie within its
    run (a day's margin for clocks). The jobs before keep their files_accessed in job_efficiency while
    their exact matches are gone from int_file_access_by_job. An access never closed is never pruned. -#}
{%- set accesses_held = 'start_time >= (select min(end_time) from ' ~ ref('stg_file_access') ~ ') + interval 1 day' %}
{#- the first day each check compares in a core-scope run, none for every row -#}
{%- set jobs_from = rebuilt_from('job_efficiency') %}
{%- set accesses_from = rebuilt_from('int_file_access_by_job') %}
{%- set cache_from = rebuilt_from('cache_hourly') %}
{%- set failed_from = rebuilt_from('int_job_tagged', 'int_efficiency_day_partials') %}
{#- a job ending on or after jobs_from opened its accesses at most max_wall_days before it -#}
{%- set job_accesses_from = none if jobs_from is none
                            else jobs_from - modules.datetime.timedelta(days=var('max_wall_days', 7) | int) %}
{#- name, relation, rows counted (model, filter), figure compared (model, aggregate, filter), and
    for a core-scope run: (first day, counted side's day column, its filter, compared side's day
    column, its filter). The days compared start long after any retention cut-off (a month or
    more before the newest access; a window is days), so the span filters are not needed there. -#}
{%- set checks = [
    ('job_efficiency', '=', 'stg_job', 'end_time is not null and wall_seconds > 0', 'job_efficiency', 'count(*)', 'true',
     (jobs_from, 'end_time', 'end_time is not null and wall_seconds > 0', 'day', 'true')),
    ('int_file_access_by_job', '=', 'stg_file_access', kept, 'int_file_access_by_job', 'count(*)', kept,
     (accesses_from, 'start_time', 'true', 'day', 'true')),
    ('cache_hourly', '=', 'stg_file_access',
     "server_role = 'cache' and (" ~ access_time ~ ' is null or ' ~ access_time ~ ' >= ' ~ first_whole_hour ~ ')',
     'cache_hourly', 'sum(accesses)', 'hour is null or hour >= ' ~ first_whole_hour,
     (cache_from, access_time, "server_role = 'cache'", 'hour', 'true')),
    ('storage_price_performance', '=', 'stg_storage_catalog', 'true', 'storage_price_performance', 'count(*)', 'true',
     none),
    ('files_accessed', '<=', 'int_file_access_by_job', "match_quality = 'exact'", 'job_efficiency', 'sum(files_accessed)', accesses_held,
     none if jobs_from is none else (job_accesses_from, 'day', "match_quality = 'exact'", 'day', 'true', jobs_from)),
    ('failed_jobs', '=', 'int_job_tagged', 'failed', 'efficiency_by_group', 'sum(failed_jobs)', "period_grain = 'day'",
     (failed_from, 'day', 'failed', 'period_start', "period_grain = 'day'")),
] %}
with counts as (
{%- for name, relation, counted, counted_filter, compared, aggregate, compared_filter, window in checks %}
    select
        '{{ name }}' as check_name,
        '{{ relation }}' as relation,
    {%- if window is none or window[0] is none %}
        (select count(*) from {{ ref(counted) }} where {{ counted_filter }}) as expected,
        (select coalesce({{ aggregate }}, 0) from {{ ref(compared) }} where {{ compared_filter }}) as actual
    {%- else %}
        {#- the days on and after the first, plus the rows without a day: two queries, each of
            which DuckDB answers from the newest row groups (their OR it cannot) -#}
        {%- set compared_from = window[5] if window | length > 5 else window[0] %}
        {%- set sides = [] %}
        {%- for first, column, where, model, figure in [(window[0], window[1], window[2], counted, 'count(*)'),
                                                     (compared_from, window[3], window[4], compared, aggregate)] %}
            {%- set parts = [] %}
            {#- an access's time is its close, else its open: the coalesce split so that each
                part is one condition on a column -#}
            {%- set conditions = rebuilt_conditions(first, column, column in ('day', 'period_start'))
                                 if column != access_time else
                                 ['end_time >= ' ~ day_start_instant(first),
                                  'end_time is null and start_time >= ' ~ day_start_instant(first),
                                  'end_time is null and start_time is null'] %}
            {%- for condition in conditions %}
                {%- do parts.append('(select coalesce(' ~ figure ~ ', 0) from ' ~ ref(model) ~ ' where (' ~ where
                                    ~ ') and ' ~ condition ~ ')') %}
            {%- endfor %}
            {%- do sides.append(parts | join(' + ')) %}
        {%- endfor %}
        {{ sides[0] }} as expected,
        {{ sides[1] }} as actual
    {%- endif %}
    {{- '\n    union all' if not loop.last }}
{%- endfor %}
)

select check_name, expected, actual
from counts
where (relation = '=' and expected <> actual)
   or (relation = '<=' and actual > expected)
