-- Finished jobs (end_time set) with what tierlens knows about where they ran:
--   * the job tag: the tag of the same step, else the tag of the whole job (step_id '');
--   * storage_type: tag, else node inventory, else 'unknown';
--   * ab_arm: tag, else the node's fixed arm, else 'none';
--   * job_class: the job's own, else 'production' when account or partition contains 'prod',
--     else 'analysis'.
-- ran is false for a job with no wall time: a launch failure (Slurm FAILED with no start and
-- elapsed 0) ends without running. It has no efficiency, so it stays out of job_efficiency and
-- of every efficiency denominator, but it is kept here to be counted among the failed jobs.
-- failed: the final state is one of var failed_states.
-- Incremental by day (UTC day of end_time), lookback var job_lateness_days: a job's accounting
-- record arrives when it ends. Tags are read by job, not by day (a tag precedes its job's
-- record), and the node inventory whole; a change to the node inventory reaches jobs already
-- built only on a --full-refresh (dbt/README.md).
{%- set failed_states = var('failed_states') %}
{%- set lookback = job_lookback_days() %}
{{ config(**incremental_by_day('day', lookback, event_time='end_time', grain=['batch_system', 'cluster', 'job_id', 'step_id'])) }}
with jobs as (
    select
        *,
        -- the step of the whole-job tag a step falls back to (''); NULL for a whole-job row, whose
        -- own tag is its step tag. An equality key, so the join below is a hash join (a
        -- `step_id <> ''` in its ON clause made DuckDB compare every job with every tag).
        case when step_id <> '' then '' end as whole_job_step_id
    from {{ ref('stg_job') }}
    where end_time is not null
      and {{ instant_after_window('end_time', lookback) }}
      and {{ instant_before_window_end('end_time') }}
),

-- Only the tags of the window's jobs: the tag table holds all history (a tag comes before its
-- job's record, by as long as the job ran), and both joins below would otherwise build their hash
-- tables over every tag ever recorded.
tags as (
    select * from {{ ref('stg_job_tag') }}
    where job_id in (select jobs.job_id from jobs)
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
        on {{ job_key_join('step_tag', 'jobs') }}
    left join tags as job_tag
        on  {{ job_key_join('job_tag', 'jobs', with_step=false) }}
        and job_tag.step_id = jobs.whole_job_step_id
    left join nodes
        on  nodes.cluster = jobs.cluster
        and nodes.node = jobs.node
),

final as (
    select
        {{ job_key() }},
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
        bytes_written,
        coalesce(wall_seconds, 0) > 0                                        as ran,
        coalesce(state in ({% for s in failed_states %}{{ sql_literal(s) }}{{ ', ' if not loop.last }}{% endfor %}), false)
                                                                             as failed,
        coalesce(cpu_user_seconds, 0) + coalesce(cpu_system_seconds, 0)     as cpu_seconds,
        wall_seconds * allocated_cores                                       as core_wall_seconds,
        cast({{ utc('end_time') }} as date)                                  as day,
        cast(date_trunc('week', {{ utc('end_time') }}) as date)              as week
    from joined
)

select * from final
