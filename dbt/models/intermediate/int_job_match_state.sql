-- The job rows int_file_access_by_job matched the accesses of its window against at its last
-- build, as they stood then: one row per job (its whole-job row, else its first step) that ended
-- on or after that window's first day, or still runs. Built after int_file_access_by_job in every
-- run (never before it: it must say what that build saw), so the next hourly run finds the jobs
-- that arrived or changed since, and rebuilds only the accesses they can claim (dbt/README.md,
-- access_match_by_key). Rebuilt whole each run: a few days of jobs.
-- depends_on: {{ ref('int_file_access_by_job') }}
{%- set newest = relation_newest_day(ref('int_file_access_by_job'), 'day') %}
{%- set first = none if newest is none else newest - modules.datetime.timedelta(days=job_match_lookback_days() | int) %}
select job_identity, {{ job_key() }}, node, node_list, start_time, end_time
from {{ one_row_per_job(ref('stg_job'),
                        where="end_time is null" ~ ("" if first is none else " or end_time >= " ~ day_start_instant(first))
                              ~ (" or true" if first is none else "")) }} as first_rows
