-- Each distinct job_identity value of the file accesses int_file_access_by_job reads this run
-- (its window's and their context's: opened at most max_wall_days before the window, or never
-- opened), with the tierlens identity it carries (macros/identity.sql; NULL for a value that is
-- only a user's own). The identity is parsed by a regular expression; a job's accesses share one
-- value, so parsing each value once and joining by the value costs a fraction of parsing every
-- access. Read from the table, not from the match's CTEs over the window: DuckDB materializes a
-- CTE read twice, every column (2.7 M rows at full size: it spilled).
-- Ephemeral, over int_file_access_by_job's window (window_of, macros/incremental.sql): a CTE of
-- that model's query, where both the choice of accesses to rematch (int_access_rematch) and the
-- match itself read it.
{{ config(materialized='ephemeral', window_of='int_file_access_by_job') }}
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
select job_identity, {{ tierlens_identity('job_identity') }} as identity
from (
    select job_identity from {{ ref('int_file_access_reconciled') }}
    where job_identity is not null
      and {{ instant_after_window('start_time', lookback, wall_days) }}
      and {{ instant_before_window_end('start_time') }}
    union
    select job_identity from {{ ref('int_file_access_reconciled') }}
    where job_identity is not null and start_time is null
) as raw_values
