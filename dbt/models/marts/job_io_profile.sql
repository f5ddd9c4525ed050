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
{%- set lookback = job_match_lookback_days() %}
{%- set wall_days = var('max_wall_days', 7) | int %}
{{ config(**incremental_by_day('day', lookback)) }}
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
    select * from {{ ref('int_job_remote_bytes') }}
    where last_access_day is null or {{ day_after_window('last_access_day', lookback, wall_days) }}
),

-- Jobs sharing the node: overlap of every pair of jobs on the same node, summed per job. The
-- job itself is included, so an alone job has concurrent_jobs = 1.
node_sharing as (
    select
        {{ job_key('a') }},
        sum({{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_seconds,
        sum(b.allocated_cores * {{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_core_seconds
    from jobs as a
    inner join context_jobs as b
        on  a.node = b.node
        and a.cluster = b.cluster
        and b.start_time < a.end_time
        and b.end_time > a.start_time
    group by {{ job_key('a') }}
)

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
{%- for column in ['remote_bytes', 'stage_in_bytes', 'direct_read_bytes', 'origin_bytes', 'cache_hit_bytes',
                   'cache_miss_bytes', 'stage_origin_bytes', 'stage_cache_hit_bytes', 'stage_cache_miss_bytes',
                   'direct_origin_bytes', 'direct_cache_hit_bytes', 'direct_cache_miss_bytes'] %}
    coalesce(remote.{{ column }}, 0)                                           as {{ column }},
{%- endfor %}
    node_sharing.overlap_seconds / jobs.wall_seconds                           as concurrent_jobs,
    node_sharing.overlap_core_seconds / jobs.wall_seconds                      as concurrent_cores,
    jobs.day
from jobs
left join remote
    on {{ job_key_join('remote', 'jobs') }}
left join node_sharing
    on {{ job_key_join('node_sharing', 'jobs') }}
