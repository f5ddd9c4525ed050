-- The file accesses int_file_access_by_job (re)matches to jobs in this run, one row per access,
-- with why (rematch_reason). A rebuild by day (first build, --full-refresh, back-fill, Spark, a
-- warehouse without int_job_match_state) matches every access of the window: 'window'. A plain
-- hourly run on DuckDB with a previous build (access_match_by_key, dbt/README.md) matches only the
-- window's accesses whose match can have changed since that build:
--   'access_changed'   the access's reconciled row is new or changed (int_file_access_reconciled
--                      rebuilt its own, shorter window: compared with the rows held in
--                      int_file_access_by_job), or it has no day;
--   'job_changed'      a new or changed job row can claim it, or could in its previous version:
--                      the job rows matched against now (int_access_match_jobs), compared with
--                      those of the last build (int_job_match_state). exact: the job's identity;
--                      inferred: on the job's hosts within its start..end; and every access held
--                      as matched to such a job (a new job can take an access from an older one);
--   'evidence_changed' its pid evidence can change: an unidentified access from the host and pid
--                      of an identified access of the two sets above (in its current or previous
--                      form), overlapping it.
-- An access in several sets has the first reason of that order. An access in none has the same
-- candidates and the same evidence as at the last build, so its row stays.
-- Ephemeral, over int_file_access_by_job's window (window_of, macros/incremental.sql): a CTE of
-- that model's query, which reads its rows held from the last build (window_model), not a ref()
-- of it (a cycle). A rebuild by day reads the window's accesses whole instead of this list (the
-- list would only cost a join), so this model is then a description of what it matches.
-- The state it reads (the job rows of the last build), and what a rebuild by key compares:
-- depends_on: {{ source('state', 'int_job_match_state') }}
-- depends_on: {{ ref('int_access_match_identities') }} {{ ref('int_access_match_jobs') }}
{{ config(materialized='ephemeral', window_of='int_file_access_by_job') }}
{%- set lookback = job_match_lookback_days() %}
{%- set by_key = access_match_by_key() %}
{%- if not by_key %}
select server_host, unique_id, 'window' as rematch_reason
from ({{ dated_rows(ref('int_file_access_reconciled'), 'day', in_window('day', lookback), 'server_host, unique_id') }}) as window_rows
{%- else %}
{%- set held = window_model() %}
{%- set reconciled_column_list = adapter.get_columns_in_relation(ref('int_file_access_reconciled'))
                                 | map(attribute='quoted') | list %}
{%- set reconciled_columns = reconciled_column_list | join(', ') %}
{%- set state_first = day_start_instant(window_first_day(lookback)) %}
with
-- The accesses of the window, with what a match compares, read once.
scope as materialized (
    select
        server_host,
        unique_id,
        day,
        start_time,
        coalesce(end_time, start_time)             as end_time,
        client_pid,
        job_identity,
        -- false, not NULL, without a job_identity
        coalesce(job_identity in (select i.job_identity from {{ ref('int_access_match_identities') }} as i where i.identity is not null), false)
                                                   as identified,
        {{ short_host('client_host') }}            as host_key
    from ({{ dated_rows(ref('int_file_access_reconciled'), 'day', in_window('day', lookback)) }}) as window_rows
),

-- Reconciled rows new or changed since the last build, and rows held there that the reconciled
-- model no longer has in its window (their day moved): the difference both ways round, by a join
-- on the (unique) key comparing every column; an EXCEPT each way hashed all columns twice over.
reconciled_now as (
    {{ dated_rows(ref('int_file_access_reconciled'), 'day', in_window('day', access_lookback_days()), reconciled_columns) }}
),

reconciled_held as (
    {{ dated_rows(held, 'day', in_window('day', access_lookback_days()), reconciled_columns) }}
),

changed_accesses as (
    select
        coalesce(now_rows.server_host, held_rows.server_host) as server_host,
        coalesce(now_rows.unique_id, held_rows.unique_id)     as unique_id
    from reconciled_now as now_rows
    full outer join reconciled_held as held_rows
        on now_rows.server_host = held_rows.server_host and now_rows.unique_id = held_rows.unique_id
    where now_rows.server_host is null or held_rows.server_host is null
    {%- for column in reconciled_column_list %}
       or now_rows.{{ column }} is distinct from held_rows.{{ column }}
    {%- endfor %}
    union
    select server_host, unique_id from scope where day is null
),

-- The job rows the last build matched against, as far as they fall in this run's window.
state_rows as (
    select job_identity, {{ job_key() }}, node, node_list, start_time, end_time
    from {{ job_match_state() }}
    where end_time is null or end_time >= {{ state_first }}
),

-- Job rows new or changed since then, in their new and their previous form.
changed_jobs as (
    select * from (select * from {{ ref('int_access_match_jobs') }} except select * from state_rows) as arrived
    union all
    select * from (select * from state_rows except select * from {{ ref('int_access_match_jobs') }}) as previous
),

changed_job_hosts as (
    select distinct
        {{ job_key(with_step=false) }},
        start_time,
        end_time,
        {{ short_host('trim(h)') }} as host_key
    from (
        select
            {{ job_key(with_step=false) }},
            start_time,
            end_time,
            {{ explode_list(split_and_append("coalesce(node_list, node, '')", "','", "coalesce(node, '')")) }} as h
        from changed_jobs
        where start_time is not null
    ) as exploded
    where trim(h) <> ''
),

-- What such a job can claim (by identity, by host and time) or held before.
claimed_accesses as (
    select s.server_host, s.unique_id
    from scope as s
    inner join (
        select distinct i.job_identity
        from {{ ref('int_access_match_identities') }} as i
        inner join (select distinct job_identity from changed_jobs where job_identity is not null) as c
            on i.identity = c.job_identity
    ) as j
        on s.job_identity = j.job_identity
    union
    select s.server_host, s.unique_id
    from scope as s
    inner join changed_job_hosts as j
        on j.host_key = s.host_key
        and j.start_time <= s.end_time
        and (j.end_time is null or j.end_time >= s.start_time)
    where not s.identified and s.start_time is not null
    union
    select held.server_host, held.unique_id
    from (
        select server_host, unique_id, {{ job_key(with_step=false) }} from {{ held }}
        where {{ in_window('day', lookback) }} and job_id is not null
        union all
        select server_host, unique_id, {{ job_key(with_step=false) }} from {{ held }}
        where day is null and job_id is not null
    ) as held
    inner join (select distinct {{ job_key(with_step=false) }} from changed_jobs) as j
        on {{ job_key_join('held', 'j', with_step=false) }}
),

-- The held rows of the changed accesses that were matched exactly: only those gave pid evidence
-- at the last build (an identity naming no loaded job gives none). Selected by match_quality,
-- not by parsing the identity: DuckDB pushes a filter on the identity below the join into the
-- scan, parsing every held row of the window (9 s of the model's 27 s at a 10,000-core site).
held_changed as materialized (
    select held.client_host, held.client_pid, held.start_time, held.end_time
    from ({{ dated_rows(held, 'day', in_window('day', lookback), 'server_host, unique_id, client_host, client_pid, start_time, end_time',
                                "client_pid is not null and match_quality = 'exact'") }}) as held
    semi join ({{ access_keys_as_list('changed_accesses') }}) as k
        on k.server_host = held.server_host and k.unique_id = held.unique_id
),

-- Identified accesses whose row or job changed, now and as held before: they give or take
-- pid evidence to the unidentified accesses of their host and pid that they overlap.
moved_exact as (
    select s.host_key, s.client_pid, s.start_time, s.end_time
    from scope as s
    inner join (select * from changed_accesses union select * from claimed_accesses) as k
        on k.server_host = s.server_host and k.unique_id = s.unique_id
    where s.identified and s.client_pid is not null
    union all
    select
        {{ short_host('held.client_host') }}, held.client_pid, held.start_time,
        coalesce(held.end_time, held.start_time)
    from held_changed as held
),

evidence_accesses as (
    select s.server_host, s.unique_id
    from scope as s
    inner join moved_exact as e
        on e.host_key = s.host_key and e.client_pid = s.client_pid
        and e.start_time <= s.end_time and e.end_time >= s.start_time
    where not s.identified
),

-- One row per access: its first reason. A grouping of the keys, as the union of the three sets
-- was (DuckDB drops the reason when the reader does not select it).
reasons as (
    select server_host, unique_id, 1 as reason_rank from changed_accesses
    union all
    select server_host, unique_id, 2 from claimed_accesses
    union all
    select server_host, unique_id, 3 from evidence_accesses
)

select
    server_host,
    unique_id,
    case min(reason_rank) when 1 then 'access_changed' when 2 then 'job_changed' else 'evidence_changed' end
        as rematch_reason
from reasons
group by server_host, unique_id
{%- endif %}
