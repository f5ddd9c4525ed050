-- One row per finished job (or step): CPU efficiency = (cpu user + cpu system) / (wall x cores).
-- Values above 1 are kept and flagged (efficiency_above_one), never clipped.
-- day and week place the job by its end_time in UTC (week = the Monday starting its ISO week).
with jobs as (
    select * from {{ ref('int_job_tagged') }}
),

accesses as (
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        count(*)                                      as files_accessed,
        cast(coalesce(sum(read_bytes_at_close), 0) as bigint) as bytes_read_remote
    from {{ ref('int_file_access_by_job') }}
    where match_quality = 'exact'
    group by batch_system, cluster, job_id, step_id
),

measured as (
    select
        jobs.*,
        coalesce(jobs.cpu_user_seconds, 0) + coalesce(jobs.cpu_system_seconds, 0) as cpu_seconds,
        jobs.wall_seconds * jobs.allocated_cores                                 as core_wall_seconds,
        coalesce(accesses.files_accessed, 0)                                     as files_accessed,
        coalesce(accesses.bytes_read_remote, 0)                                  as bytes_read_remote
    from jobs
    left join accesses
        on  accesses.batch_system = jobs.batch_system
        and accesses.cluster = jobs.cluster
        and accesses.job_id = jobs.job_id
        and accesses.step_id = jobs.step_id
),

final as (
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        job_identity,
        user_name,
        account,
        vo,
        job_class,
        {{ adapter.quote("partition") }},
        node,
        storage_type,
        ab_arm,
        cache_route,
        start_time,
        end_time,
        cast({{ utc('end_time') }} as date)                             as day,
        cast(date_trunc('week', {{ utc('end_time') }}) as date)         as week,
        allocated_cores,
        cpu_user_seconds,
        cpu_system_seconds,
        cpu_seconds,
        wall_seconds,
        core_wall_seconds,
        cpu_seconds / nullif(core_wall_seconds, 0)                      as efficiency,
        coalesce(cpu_seconds / nullif(core_wall_seconds, 0) > 1, false) as efficiency_above_one,
        state,
        exit_code,
        bytes_read,
        bytes_written,
        files_accessed,
        bytes_read_remote
    from measured
)

select * from final
