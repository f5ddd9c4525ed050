-- The jobs the accesses of int_file_access_by_job's window can belong to: one row per job (its
-- whole-job row, else its first step, so an access is never counted twice) that ended on or after
-- the window's first day, or still runs. What a match compares: identity, hosts (node,
-- node_list) and run (start_time..end_time).
-- Ephemeral, over int_file_access_by_job's window (window_of, macros/incremental.sql): a CTE of
-- that model's query, where both the choice of accesses to rematch (int_access_rematch: these
-- rows against those of the last build) and the match itself read it.
{{ config(materialized='ephemeral', window_of='int_file_access_by_job') }}
select job_identity, {{ job_key() }}, node, node_list, start_time, end_time
from {{ one_row_per_job(ref('stg_job'),
                        where="end_time is null or " ~ instant_after_window('end_time', job_match_lookback_days())) }} as first_rows
