-- Where each finished job's wall time went, in the terms the efficiency model is calibrated on:
-- CPU, I/O wait, bytes on the node's scratch, bytes fetched over XRootD by route (origin, cache
-- hit, cache miss) and kind (stage-in, direct), and how many jobs shared the node meanwhile.
-- One row per job or step of job_efficiency that ran on a known node; the remote bytes are
-- int_job_remote_bytes'.
-- Scratch bytes read = bytes the batch system saw read minus the bytes fetched remotely, since
-- sacct's rchar (and the synthetic site) count both; floored at 0 for sources that count only
-- block I/O (HTCondor), where it is then a lower bound.
--
-- Incremental by day (the job's UTC end day), with job_efficiency's lookback: a job whose record
-- arrives late changes the sharing of jobs on its node that ended up to max_wall_days before it.
-- A plain run on DuckDB with rows already built rebuilds only the jobs of that window whose row
-- can change (job_io_by_job in macros/job_io_by_job.sql), found by comparing what it would write
-- now, node sharing aside, with the rows it holds (both ways round, so a job that changed is
-- seen in its old and new form, and a job gone from job_efficiency by its old form only):
--   * those jobs themselves (new, changed in job_efficiency or in their remote bytes, or gone);
--   * every job of the window overlapping one of those forms on the same cluster and node, where
--     the job's run changed (new, gone, or another node, start, end or core count), since its
--     node sharing counts that run.
-- Every other job has the same figures and the same jobs beside it on its node as at the last
-- build, so its row stays. The sweep then reads only the jobs of the rebuilt jobs' nodes that
-- overlap their span there: a job outside it adds nothing to the sharing of any rebuilt job.
-- A gone job yields a row with only its key (no day), which replace_days reads as "delete".
-- A back-fill's chunk counts, besides its jobs and the max_wall_days before them, the jobs that
-- ran beside its last jobs but end after it (from staging: a later chunk builds them), so a
-- job's sharing is the same whatever the chunk size.
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('day', lookback, event_time='end_time', grain=['batch_system', 'cluster', 'job_id', 'step_id'], rebuild_by='job')) }}
{%- set by_job = job_io_by_job() %}
{#- a back-fill's chunk: the jobs running across its end, not built yet (macros/incremental.sql) -#}
{%- set across_end = jobs_across_window_end(ref('stg_job')) %}
{%- set remote_columns = ['remote_bytes', 'stage_in_bytes', 'direct_read_bytes', 'origin_bytes', 'cache_hit_bytes',
                          'cache_miss_bytes', 'stage_origin_bytes', 'stage_cache_hit_bytes', 'stage_cache_miss_bytes',
                          'direct_origin_bytes', 'direct_cache_hit_bytes', 'direct_cache_miss_bytes'] %}
{#- every column of a row but the node sharing and the day, in the table's order -#}
{%- set profile_columns = job_key_names() + [
        'job_class', 'account', 'node', 'storage_type', 'ab_arm', 'cache_route', 'state', 'start_time',
        'end_time', 'allocated_cores', 'cpu_seconds', 'wall_seconds', 'efficiency', 'io_wait_seconds',
        'scratch_read_bytes', 'scratch_write_bytes', 'accesses'] + remote_columns %}
{%- set compared_columns = profile_columns[job_key_names() | length:] + ['day'] %}
with context_jobs as (
    select * from {{ ref('job_efficiency') }}
    where node is not null and {{ in_window('day', lookback, wall_days) }}
),

jobs as (
    select * from context_jobs
    where {{ in_window('day', lookback) }}
),

-- Only the remote bytes of jobs that can end in the window (their accesses lie within the run).
remote as (
    {{ dated_rows(ref('int_job_remote_bytes'), 'last_access_day', day_after_window('last_access_day', lookback, wall_days)) }}
),

-- Each job's row but its node sharing.
profiled as (
    select
        {{ job_key('jobs') }},
        jobs.job_class,
        jobs.account,
        jobs.node,
        jobs.storage_type,
        jobs.ab_arm,
        jobs.cache_route,
        jobs.state,
        jobs.start_time,
        jobs.end_time,
        jobs.allocated_cores,
        jobs.cpu_seconds,
        jobs.wall_seconds,
        jobs.efficiency,
        greatest(jobs.wall_seconds - jobs.cpu_seconds / jobs.allocated_cores, 0)   as io_wait_seconds,
        greatest(coalesce(jobs.bytes_read, 0) - coalesce(remote.remote_bytes, 0), 0) as scratch_read_bytes,
        coalesce(jobs.bytes_written, 0)                                            as scratch_write_bytes,
        coalesce(remote.accesses, 0)                                               as accesses,
{%- for column in remote_columns %}
        coalesce(remote.{{ column }}, 0)                                           as {{ column }},
{%- endfor %}
        jobs.day
    from jobs
    left join remote
        on {{ job_key_join('remote', 'jobs') }}
),
{%- if by_job %}

-- What the last build wrote for the window, node sharing aside.
held as (
    select {{ profile_columns | join(', ') }}, day
    from {{ this }}
    where {{ in_window('day', lookback) }}
),

-- The jobs whose row differs from the one held, or that are new or gone, with both their forms:
-- a join on the key comparing the other columns as one row value (NULLs equal), which took half
-- the time of EXCEPT both ways on all of them.
changed as (
    select
{%- for column in job_key_names() %}
        coalesce(fresh.{{ column }}, held.{{ column }})                         as {{ column }},
{%- endfor %}
        fresh.node,
        fresh.start_time,
        fresh.end_time,
        fresh.allocated_cores,
        held.node                                                              as held_node,
        held.start_time                                                        as held_start_time,
        held.end_time                                                          as held_end_time,
        held.allocated_cores                                                   as held_allocated_cores,
        fresh.job_id is null                                                   as gone
    from profiled as fresh
    full join held
        on {{ job_key_join('fresh', 'held') }}
    where fresh.job_id is null
       or held.job_id is null
       or ({% for column in compared_columns %}fresh.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
          is distinct from ({% for column in compared_columns %}held.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
),

-- The changed jobs whose run changed: new, gone, or on another node, from another start, to
-- another end or on another number of cores. Only these count in other jobs' node sharing.
run_changed as (
    select * from changed
    where node is null
       or held_node is null
       or node <> held_node
       or start_time is distinct from held_start_time
       or end_time is distinct from held_end_time
       or allocated_cores is distinct from held_allocated_cores
),

-- Where those jobs ran, as held and now: the jobs overlapping them share a node with them.
changed_runs as (
    select cluster, node, start_time, end_time from run_changed
    where node is not null and start_time < end_time
    union all
    select cluster, held_node, held_start_time, held_end_time from run_changed
    where held_node is not null and held_start_time < held_end_time
),

-- Those jobs, and the window's jobs that shared a node with one of their forms.
rebuilt_keys as (
    select {{ job_key() }} from changed
    union
    select {{ job_key('a') }}
    from profiled as a
    inner join changed_runs as c
        on {{ ran_beside('a', 'c') }}
),

rebuilt as (
    select profiled.*
    from profiled
    semi join rebuilt_keys
        on {{ job_key_join('rebuilt_keys', 'profiled') }}
),

-- Per node, the span of the rebuilt jobs' runs: only jobs overlapping it share with them.
rebuilt_spans as (
    select cluster, node, min(start_time) as span_start, max(end_time) as span_end
    from rebuilt
    where start_time < end_time
    group by cluster, node
),

sharing_jobs as (
    select * from rebuilt
),

sweep_jobs as (
    select context_jobs.*
    from context_jobs
    inner join rebuilt_spans as span
        on  span.cluster = context_jobs.cluster
        and span.node = context_jobs.node
        and context_jobs.start_time < span.span_end
        and context_jobs.end_time > span.span_start
),
{%- else %}

sharing_jobs as (
    select * from profiled
),

sweep_jobs as (
    select cluster, node, start_time, end_time, allocated_cores from context_jobs
    {%- if across_end is not none %}
    union all
    -- a back-fill's chunk: the jobs that ran beside its last jobs but end in a later chunk
    select cluster, node, start_time, end_time, allocated_cores from ({{ across_end }}) as across_end
    where coalesce(wall_seconds, 0) > 0
    {%- endif %}
),
{%- endif %}

-- Jobs sharing the node: the seconds (and core-seconds) of other jobs' runs on the same node
-- within each job's start..end, summed per job. The job itself is included, so an alone job has
-- concurrent_jobs = 1.
{%- if target.type == 'spark' %}
-- Spark: overlap of every pair of jobs on the same node.
node_sharing as (
    select
        {{ job_key('a') }},
        sum({{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_seconds,
        sum(b.allocated_cores * {{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_core_seconds
    from sharing_jobs as a
    inner join sweep_jobs as b
        on {{ ran_beside('a', 'b') }}
    group by {{ job_key('a') }}
)
{%- else %}
-- DuckDB: the pairs are many (a node running a hundred one-core jobs at once: 29 M pairs for
-- 280,000 jobs at a 10,000-core site, most of an hourly run's job_io_profile), so instead a
-- sweep per node. The jobs running on the node change only at a job's start or end; between two
-- such instants they are constant, and the running integral of them (microseconds x jobs, and
-- x cores: exact integers) at each instant makes a job's sum the integral's rise from its start
-- to its end, read by an ASOF join. Equal to the pairwise sum; a job whose end is not after its
-- start shares nothing and has no figure.
node_events as (
    select cluster, node, epoch_us(start_time) as at_us, 1 as jobs_delta, coalesce(allocated_cores, 0) as cores_delta
    from sweep_jobs
    where start_time < end_time
    union all
    select cluster, node, epoch_us(end_time), -1, -coalesce(allocated_cores, 0)
    from sweep_jobs
    where start_time < end_time
),

node_levels as (
    select
        cluster,
        node,
        at_us,
        -- BIGINT, not the HUGEINT sum() gives: a window over HUGEINT took 3x as long
        cast(sum(cast(sum(jobs_delta) as bigint)) over (partition by cluster, node order by at_us) as bigint)
                                                                               as running_jobs,
        cast(sum(cast(sum(cores_delta) as bigint)) over (partition by cluster, node order by at_us) as bigint)
                                                                               as running_cores
    from node_events
    group by cluster, node, at_us
),

node_integral as (
    select
        cluster,
        node,
        at_us,
        running_jobs,
        running_cores,
        coalesce(sum(running_jobs * (next_us - at_us)) over preceding, 0)  as job_us_before,
        coalesce(sum(running_cores * (next_us - at_us)) over preceding, 0) as core_us_before
    from (
        select *, lead(at_us) over (partition by cluster, node order by at_us) as next_us
        from node_levels
    ) as levels
    window preceding as (partition by cluster, node order by at_us rows between unbounded preceding and 1 preceding)
),

node_sharing as (
    select
        {{ job_key('a') }},
        cast((e.job_us_before + e.running_jobs * (epoch_us(a.end_time) - e.at_us))
             - (s.job_us_before + s.running_jobs * (epoch_us(a.start_time) - s.at_us)) as double) / 1e6
                                                                               as overlap_seconds,
        cast((e.core_us_before + e.running_cores * (epoch_us(a.end_time) - e.at_us))
             - (s.core_us_before + s.running_cores * (epoch_us(a.start_time) - s.at_us)) as double) / 1e6
                                                                               as overlap_core_seconds
    from sharing_jobs as a
    asof join node_integral as s
        on s.cluster = a.cluster and s.node = a.node and epoch_us(a.start_time) >= s.at_us
    asof join node_integral as e
        on e.cluster = a.cluster and e.node = a.node and epoch_us(a.end_time) >= e.at_us
    where a.start_time < a.end_time
)
{%- endif %}

select
{%- for column in profile_columns %}
    job_row.{{ column }},
{%- endfor %}
    node_sharing.overlap_seconds / job_row.wall_seconds                        as concurrent_jobs,
    node_sharing.overlap_core_seconds / job_row.wall_seconds                   as concurrent_cores,
    job_row.day
from sharing_jobs as job_row
left join node_sharing
    on {{ job_key_join('node_sharing', 'job_row') }}
{%- if by_job %}

-- A gone job: its key alone, no day (replace_days deletes its row and inserts nothing for it).
union all by name
select {{ job_key() }}
from changed
where gone
{%- endif %}
