-- One row per run of the incremental models (dbt/README.md, "Invocation contract"): what the
-- run was asked to rebuild. Appended by every run, so the latest row is the last run (tierlens
-- doctor) and the rows before it the history; a --full-refresh starts it again. newest_day is the
-- newest UTC day of data (job ends and file access opens), never later than today. Each
-- incremental model rebuilds the days from the newest day it already holds minus its lookback
-- (run_mode 'incremental'), every day ('full'), or vars backfill_start .. backfill_end
-- ('backfill').
{{ config(materialized='incremental', incremental_strategy='append') }}
{%- set mode = 'backfill' if run_parameter('backfill_start') is not none and not flags.FULL_REFRESH
               else ('incremental' if is_incremental() else 'full') %}
with newest as (
    select max(newest) as newest
    from (
        select max(end_time) as newest from {{ ref('stg_job') }}
        union all
        select max(start_time) as newest from {{ ref('stg_file_access') }}
    ) as per_source
)

select
    {{ sql_literal(mode) }}                                                    as run_mode,
    cast({{ utc('least(newest, ' ~ current_instant() ~ ')') }} as date)         as newest_day,
    {% if mode == 'backfill' -%}
    cast({{ sql_literal(run_parameter('backfill_start') | string) }} as date)            as backfill_start,
    cast({{ sql_literal((run_parameter('backfill_end') or run_parameter('backfill_start')) | string) }} as date) as backfill_end,
    {%- else -%}
    cast(null as date)                                                         as backfill_start,
    cast(null as date)                                                         as backfill_end,
    {%- endif %}
    {{ var('access_lateness_days', 1) | int }}                                 as access_lateness_days,
    {{ var('job_lateness_days', 2) | int }}                                    as job_lateness_days,
    {{ var('max_wall_days', 7) | int }}                                        as max_wall_days,
    {{ current_instant() }}                                                    as built_at
from newest
