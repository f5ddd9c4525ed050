-- Where each finished job's wall time went, in the terms the efficiency model is calibrated on:
-- CPU, I/O wait, bytes on the node's scratch, bytes fetched over XRootD by route (origin, cache
-- hit, cache miss), and how many jobs shared the node meanwhile. One row per job or step.
-- Scratch bytes read = bytes the batch system saw read minus the bytes fetched remotely, since
-- sacct's rchar (and the synthetic site) count both; floored at 0 for sources that count only
-- block I/O (HTCondor), where it is then a lower bound.
with jobs as (
    select * from {{ ref('int_job_tagged') }}
    where wall_seconds > 0 and node is not null
),

-- Each access's bytes by route (origin, cache hit, cache miss) and by kind of read: plain reads
-- are whole-file copies to scratch (stage-in), vector reads are ROOT reading the file in place
-- (direct). They cost very differently at a disk server (a stream against a seek every few
-- kilobytes), so the model keeps them apart. A cache's hit bytes are shared between the two
-- kinds in proportion to the access's bytes of each.
access_bytes as (
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        cast(coalesce(read_bytes_at_close, 0) as double)                       as total_bytes,
        case when coalesce(read_bytes, 0) + coalesce(readv_bytes, 0) > 0
             then cast(coalesce(read_bytes, 0) as double)
                  / (coalesce(read_bytes, 0) + coalesce(readv_bytes, 0))
             else 1.0 end                                                      as stage_share,
        case when server_role = 'cache' then 0.0
             else cast(coalesce(read_bytes_at_close, 0) as double) end         as origin_part,
        case when server_role <> 'cache' then 0.0
             when coalesce(cache_hit_bytes, 0) < coalesce(read_bytes_at_close, 0)
             then cast(coalesce(cache_hit_bytes, 0) as double)
             else cast(coalesce(read_bytes_at_close, 0) as double) end         as hit_part
    from {{ ref('int_file_access_by_job') }}
    where job_id is not null
),

remote as (
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        count(*)                                                               as accesses,
        sum(total_bytes)                                                       as remote_bytes,
        sum(total_bytes * stage_share)                                         as stage_in_bytes,
        sum(total_bytes * (1 - stage_share))                                   as direct_read_bytes,
        sum(origin_part)                                                       as origin_bytes,
        sum(hit_part)                                                          as cache_hit_bytes,
        sum(total_bytes - origin_part - hit_part)                              as cache_miss_bytes,
        sum(origin_part * stage_share)                                         as stage_origin_bytes,
        sum(hit_part * stage_share)                                            as stage_cache_hit_bytes,
        sum((total_bytes - origin_part - hit_part) * stage_share)              as stage_cache_miss_bytes,
        sum(origin_part * (1 - stage_share))                                   as direct_origin_bytes,
        sum(hit_part * (1 - stage_share))                                      as direct_cache_hit_bytes,
        sum((total_bytes - origin_part - hit_part) * (1 - stage_share))        as direct_cache_miss_bytes
    from access_bytes
    group by batch_system, cluster, job_id, step_id
),

-- Jobs sharing the node: overlap of every pair of jobs on the same node, summed per job. The
-- job itself is included, so an alone job has concurrent_jobs = 1.
node_sharing as (
    select
        a.batch_system,
        a.cluster,
        a.job_id,
        a.step_id,
        sum({{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_seconds,
        sum(b.allocated_cores * {{ seconds_between(
            'case when a.start_time > b.start_time then a.start_time else b.start_time end',
            'case when a.end_time < b.end_time then a.end_time else b.end_time end') }})  as overlap_core_seconds
    from jobs as a
    inner join jobs as b
        on  a.node = b.node
        and a.cluster = b.cluster
        and b.start_time < a.end_time
        and b.end_time > a.start_time
    group by a.batch_system, a.cluster, a.job_id, a.step_id
),

joined as (
    select
        jobs.batch_system,
        jobs.cluster,
        jobs.job_id,
        jobs.step_id,
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
        coalesce(jobs.cpu_user_seconds, 0) + coalesce(jobs.cpu_system_seconds, 0)     as cpu_seconds,
        jobs.wall_seconds,
        coalesce(jobs.bytes_read, 0)                                                   as bytes_read,
        coalesce(jobs.bytes_written, 0)                                                as bytes_written,
        coalesce(remote.accesses, 0)                                                   as accesses,
        coalesce(remote.remote_bytes, 0)                                               as remote_bytes,
        coalesce(remote.stage_in_bytes, 0)                                             as stage_in_bytes,
        coalesce(remote.direct_read_bytes, 0)                                          as direct_read_bytes,
        coalesce(remote.origin_bytes, 0)                                               as origin_bytes,
        coalesce(remote.cache_hit_bytes, 0)                                            as cache_hit_bytes,
        coalesce(remote.cache_miss_bytes, 0)                                           as cache_miss_bytes,
        coalesce(remote.stage_origin_bytes, 0)                                         as stage_origin_bytes,
        coalesce(remote.stage_cache_hit_bytes, 0)                                      as stage_cache_hit_bytes,
        coalesce(remote.stage_cache_miss_bytes, 0)                                     as stage_cache_miss_bytes,
        coalesce(remote.direct_origin_bytes, 0)                                        as direct_origin_bytes,
        coalesce(remote.direct_cache_hit_bytes, 0)                                     as direct_cache_hit_bytes,
        coalesce(remote.direct_cache_miss_bytes, 0)                                    as direct_cache_miss_bytes,
        node_sharing.overlap_seconds,
        node_sharing.overlap_core_seconds
    from jobs
    left join remote
        on  remote.batch_system = jobs.batch_system
        and remote.cluster = jobs.cluster
        and remote.job_id = jobs.job_id
        and remote.step_id = jobs.step_id
    left join node_sharing
        on  node_sharing.batch_system = jobs.batch_system
        and node_sharing.cluster = jobs.cluster
        and node_sharing.job_id = jobs.job_id
        and node_sharing.step_id = jobs.step_id
),

final as (
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        job_class,
        account,
        node,
        storage_type,
        ab_arm,
        cache_route,
        state,
        start_time,
        end_time,
        allocated_cores,
        cpu_seconds,
        wall_seconds,
        cpu_seconds / (wall_seconds * allocated_cores)                                 as efficiency,
        case when wall_seconds - cpu_seconds / allocated_cores > 0
             then wall_seconds - cpu_seconds / allocated_cores else 0 end              as io_wait_seconds,
        case when bytes_read - remote_bytes > 0
             then bytes_read - remote_bytes else 0 end                                 as scratch_read_bytes,
        bytes_written                                                                  as scratch_write_bytes,
        accesses,
        remote_bytes,
        stage_in_bytes,
        direct_read_bytes,
        origin_bytes,
        cache_hit_bytes,
        cache_miss_bytes,
        stage_origin_bytes,
        stage_cache_hit_bytes,
        stage_cache_miss_bytes,
        direct_origin_bytes,
        direct_cache_hit_bytes,
        direct_cache_miss_bytes,
        overlap_seconds / wall_seconds                                                 as concurrent_jobs,
        overlap_core_seconds / wall_seconds                                            as concurrent_cores
    from joined
)

select * from final
