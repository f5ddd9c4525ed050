-- Finished jobs (end_time set, wall_seconds > 0) with what tierlens knows about where they ran:
--   * the job tag: the tag of the same step, else the tag of the whole job (step_id '');
--   * storage_type: tag, else node inventory, else 'unknown';
--   * ab_arm: tag, else the node's fixed arm, else 'none';
--   * job_class: the job's own, else 'production' when account or partition contains 'prod',
--     else 'analysis'.
with jobs as (
    select
        *,
        -- the job whose whole-job tag a step falls back to; NULL for a whole-job row. An equality
        -- key, so the join below is a hash join (a `step_id <> ''` in its ON clause made DuckDB
        -- compare every job with every tag).
        case when step_id <> '' then job_id end as parent_job_id
    from {{ ref('stg_job') }}
    where end_time is not null
      and wall_seconds > 0
),

tags as (
    select * from {{ ref('stg_job_tag') }}
),

nodes as (
    select * from {{ ref('stg_node') }}
),

joined as (
    select
        jobs.*,
        coalesce(step_tag.storage_type, job_tag.storage_type)   as tag_storage_type,
        coalesce(step_tag.device_models, job_tag.device_models) as tag_device_models,
        coalesce(step_tag.ab_arm, job_tag.ab_arm)               as tag_ab_arm,
        coalesce(step_tag.cache_route, job_tag.cache_route)     as tag_cache_route,
        coalesce(step_tag.scratch_path, job_tag.scratch_path)   as tag_scratch_path,
        case
            when step_tag.job_id is not null then 'step'
            when job_tag.job_id is not null then 'job'
        end                                                     as tag_level,
        nodes.node is not null                                  as node_in_inventory,
        nodes.storage_type                                      as node_storage_type,
        nodes.device_models                                     as node_device_models,
        nodes.ab_arm                                            as node_ab_arm
    from jobs
    left join tags as step_tag
        on  step_tag.batch_system = jobs.batch_system
        and step_tag.cluster = jobs.cluster
        and step_tag.job_id = jobs.job_id
        and step_tag.step_id = jobs.step_id
    left join tags as job_tag
        on  job_tag.batch_system = jobs.batch_system
        and job_tag.cluster = jobs.cluster
        and job_tag.job_id = jobs.parent_job_id
        and job_tag.step_id = ''
    left join nodes
        on  nodes.cluster = jobs.cluster
        and nodes.node = jobs.node
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
        coalesce(
            job_class,
            case
                when lower(coalesce(account, '')) like '%prod%'
                  or lower(coalesce({{ adapter.quote("partition") }}, '')) like '%prod%' then 'production'
                else 'analysis'
            end
        )                                                        as job_class,
        job_class is null                                        as job_class_derived,
        {{ adapter.quote("partition") }},
        node,
        node_list,
        coalesce(tag_storage_type, node_storage_type, 'unknown') as storage_type,
        case
            when tag_storage_type is not null then 'tag'
            when node_storage_type is not null then 'node'
            else 'unknown'
        end                                                      as storage_type_source,
        coalesce({{ first_element('tag_device_models') }}, {{ first_element('node_device_models') }})   as device_model,
        coalesce(tag_ab_arm, node_ab_arm, 'none')                as ab_arm,
        tag_cache_route                                          as cache_route,
        tag_scratch_path                                         as scratch_path,
        tag_level,
        node_in_inventory,
        submit_time,
        start_time,
        end_time,
        allocated_cores,
        cpu_user_seconds,
        cpu_system_seconds,
        wall_seconds,
        state,
        exit_code,
        bytes_read,
        bytes_written
    from joined
)

select * from final
