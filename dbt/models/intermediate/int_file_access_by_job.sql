-- Every file access, with the job it belongs to where that is known.
--   exact:     the access carries a job_identity (XRD_MONINFO) whose tierlens identity (the last
--              comma-separated token, see macros/identity.sql) equals a job's job_identity.
--   inferred:  the access carries no tierlens identity (none, or only a user's own value); a job ran on the access's client host while
--              the file was open. Two kinds (match_method):
--                host_pid:  another access from the same client host and pid, overlapping in
--                           time, is exactly matched to that job (same process, same job);
--                host_time: the job ran on the client host over the access's open..close.
--              With several candidate jobs, host_pid wins, then the longest overlap, then the
--              latest-started job; match_candidates says how many there were.
--              Hosts compare as short lower-case names (domain dropped, IPs whole); a job's hosts
--              are its node and node_list split on commas (a Slurm range such as wn[01-03] is not
--              expanded, so only its first node matches).
--   unmatched: no identity and no candidate job, or an identity no loaded job has (an identity
--              that names an unknown job is never re-assigned by inference); job keys are NULL.
-- job_identity names a job, not a step ('<batch_system>.<cluster>.<job_id>'): where a job has
-- several step rows the access goes to the whole-job row (step_id ''), else to its first step,
-- so an access is never counted twice.
--
-- Incremental by the UTC day of the access's start_time (column day). A job's accesses arrive
-- before its accounting record: a record arriving up to var job_lateness_days after the job ends
-- changes the matches of accesses up to var max_wall_days before that, so the window is their
-- sum. The window's accesses are matched against every job that can overlap them (ended on or
-- after the window's first day, or still running: int_access_match_jobs) and every access of the
-- window's days and of max_wall_days before (pid evidence from an exactly matched access of the
-- same job).
--
-- Which of the window's accesses a run matches is int_access_rematch's (with why): all of them,
-- or on a plain hourly run on DuckDB only those whose match can have changed since the last build
-- (access_match_by_key, dbt/README.md); replace_days then replaces those keys' rows. The rebuilt
-- ones are matched here exactly as in a full build. Such a run records the jobs of the rows it
-- replaces and inserts in int_job_match_changes (a rebuild by day marks every job), so
-- int_job_remote_bytes rebuilds those jobs only.
-- The state access_match_by_key reads (the job rows of the last build) and the one it writes (the
-- changed jobs):
-- depends_on: {{ source('state', 'int_job_match_state') }} {{ source('state', 'int_job_match_changes') }}
-- depends_on: {{ ref('int_access_rematch') }}
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('day', lookback, event_time='start_time', grain=['server_host', 'unique_id'],
                               rebuild_by='key', rebuild_key=['server_host', 'unique_id'], records_job_changes=true)) }}
{{ config(pre_hook="{{ job_match_changes_before_match() }}") }}
{%- set by_key = access_match_by_key() %}
with
window_accesses as (
    {{ dated_rows(ref('int_file_access_reconciled'), 'day', in_window('day', lookback)) }}
),

-- The window's accesses and those of the days before it whose open..close reaches into it;
-- those without an open apart, so DuckDB skips older row groups (dated_rows).
{%- set in_context -%}
    {{ instant_after_window('start_time', lookback, wall_days) }}
    and {{ instant_after_window('coalesce(end_time, start_time)', lookback) }}
    and {{ instant_before_window_end('start_time') }}
{%- endset %}
context_accesses as (
    select * from {{ ref('int_file_access_reconciled') }}
    where start_time is not null and {{ in_context }}
    union all
    select * from {{ ref('int_file_access_reconciled') }}
    where start_time is null
),

-- The job an identity names (of several job rows with one identity, the first by key).
job_by_identity as (
    select job_identity, {{ job_key() }}
    from (
        select
            job_rows.*,
            row_number() over (
                partition by job_identity
                order by batch_system, cluster, job_id
            ) as identity_rank
        from {{ ref('int_access_match_jobs') }} as job_rows
        where job_identity is not null
    ) as ranked
    where identity_rank = 1
),
{%- if by_key %}

-- The window's rows of the accesses to rematch, their keys handed to the join as one list so that
-- DuckDB, which cannot estimate how many there are, builds its hash table on them and not on the
-- window's rows.
accesses as (
    select window_accesses.*
    from window_accesses
    semi join ({{ access_keys_as_list(ref('int_access_rematch')) }}) as k
        on k.server_host = window_accesses.server_host and k.unique_id = window_accesses.unique_id
),

-- Pid evidence for the rebuilt accesses comes only from accesses of the same pid; a rebuilt
-- access without a pid gives only its own exact match (in the context, as in a full build).
-- Not an OR of pid and key (a correlated EXISTS over 16 days of context): a rebuilt access
-- with a pid has a pid of the list, and a rebuilt key's row outside the window gives no evidence.
evidence_context as (
    select context_accesses.*
    from context_accesses
    where client_pid in (select client_pid from accesses where client_pid is not null)
    union all
    select accesses.*
    from accesses
    where client_pid is null and (start_time is null or ({{ in_context }}))
),
{%- else %}

-- A rebuild by day matches every access of the window (int_access_rematch's 'window' rows, read
-- here whole rather than joined to that list), with every access of the context as evidence.
accesses as (
    select * from window_accesses
),

evidence_context as (
    select * from context_accesses
),
{%- endif %}

exact as (
    select
        accesses.server_host,
        accesses.unique_id,
        accesses.client_host,
        accesses.client_pid,
        accesses.start_time,
        coalesce(accesses.end_time, accesses.start_time) as end_time,
        {{ job_key('job_by_identity') }}
    from evidence_context as accesses
    inner join {{ ref('int_access_match_identities') }} as identities
        on identities.job_identity = accesses.job_identity
    inner join job_by_identity
        on job_by_identity.job_identity = identities.identity
),

-- The host a job ran on, as a short lower-case name (IP addresses kept whole), one row per node.
job_host_names as (
    select
        {{ job_key() }},
        start_time,
        end_time,
        {{ explode_list(split_and_append("coalesce(node_list, node, '')", "','", "coalesce(node, '')")) }} as h
    from {{ ref('int_access_match_jobs') }}
    where start_time is not null
),

job_hosts as (
    select distinct
        {{ job_key() }},
        start_time,
        end_time,
        {{ short_host('trim(h)') }} as host_key
    from job_host_names
    where trim(h) <> ''
),

unidentified as (
    select
        server_host,
        unique_id,
        client_pid,
        start_time,
        coalesce(end_time, start_time) as end_time,
        {{ short_host('client_host') }} as host_key
    from accesses
    where (job_identity is null
           or job_identity in (select i.job_identity from {{ ref('int_access_match_identities') }} as i where i.identity is null))
      and client_host is not null and start_time is not null
),

-- Each unidentified access with each job that ran on its client host while it was open.
candidate_pairs as (
    select
        u.server_host,
        u.unique_id,
        u.client_pid,
        u.host_key,
        u.start_time,
        u.end_time,
        {{ job_key('j') }},
        j.start_time as job_start,
        -- seconds of the access's open..close that fall inside the job's run
        {{ seconds_between('greatest(u.start_time, j.start_time)',
                           'least(u.end_time, coalesce(j.end_time, u.end_time))') }} as overlap_seconds
    from unidentified u
    inner join job_hosts j
        on j.host_key = u.host_key
        and j.start_time <= u.end_time
        and (j.end_time is null or j.end_time >= u.start_time)
),

-- pid evidence: an exactly matched access of the same job came from the same client pid and
-- host while this one was open. An inner join on all the equalities then a left join back, not
-- a correlated EXISTS in the select list: Spark SQL does not take that, and this form lets both
-- engines hash-join (a left join with the range conditions in ON made DuckDB 10x slower).
exact_hosts as (
    select
        {{ job_key(with_step=false) }}, client_pid, start_time, end_time,
        {{ short_host('client_host') }} as host_key
    from exact
    where client_pid is not null
),

pid_matches as (
    select distinct c.server_host, c.unique_id, {{ job_key('c', with_step=false) }}
    from candidate_pairs c
    inner join exact_hosts e
        on  {{ job_key_join('e', 'c', with_step=false) }}
        and e.client_pid = c.client_pid and e.host_key = c.host_key
    where e.start_time <= c.end_time and e.end_time >= c.start_time
),

candidates as (
    select
        c.server_host,
        c.unique_id,
        {{ job_key('c') }},
        c.job_start,
        c.overlap_seconds,
        p.job_id is not null as pid_evidence
    from candidate_pairs c
    left join pid_matches p
        on  p.server_host = c.server_host and p.unique_id = c.unique_id
        and {{ job_key_join('p', 'c', with_step=false) }}
),

inferred as (
    select server_host, unique_id, {{ job_key() }}, match_method, match_candidates
    from (
        select
            server_host,
            unique_id,
            {{ job_key() }},
            case when pid_evidence then 'host_pid' else 'host_time' end as match_method,
            count(*) over (partition by server_host, unique_id)          as match_candidates,
            row_number() over (
                partition by server_host, unique_id
                order by case when pid_evidence then 0 else 1 end, overlap_seconds desc, job_start desc,
                         batch_system, cluster, job_id
            ) as candidate_rank
        from candidates
    ) as ranked
    where candidate_rank = 1
),

-- Exact and inferred matches are disjoint: inference only looks at accesses without an identity.
matched as (
    select server_host, unique_id, {{ job_key() }},
           'exact' as match_quality, 'identity' as match_method, 1 as match_candidates
    from exact
    union all
    select server_host, unique_id, {{ job_key() }},
           'inferred', match_method, match_candidates
    from inferred
),

final as (
    select
        accesses.*,
        {{ job_key('matched') }},
        coalesce(matched.match_quality, 'unmatched')                 as match_quality,
        matched.match_method,
        coalesce(matched.match_candidates, 0)                        as match_candidates
    from accesses
    left join matched
        on matched.server_host = accesses.server_host and matched.unique_id = accesses.unique_id
)

select * from final
