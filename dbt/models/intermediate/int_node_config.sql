-- One row per node tierlens has seen (inventory, job tags or jobs) with its storage configuration:
-- the inventory's when the node is in raw_node, else what the node's latest job tag reported.
-- device_model is the first device model (device_models[1]), what the price catalog matches on.
with inventory as (
    select * from {{ ref('stg_node') }}
),

-- row_number in a subquery, not QUALIFY: Spark SQL has no QUALIFY.
latest_tag as (
    select cluster, node, storage_type, device_models
    from (
        select
            cluster, node, storage_type, device_models,
            row_number() over (
                partition by cluster, node
                order by tagged_at desc nulls last, job_id desc, step_id desc
            ) as tag_rank
        from {{ ref('stg_job_tag') }}
    ) as ranked
    where tag_rank = 1
),

job_nodes as (
    select distinct cluster, node
    from {{ ref('stg_job') }}
    where node is not null
),

all_nodes as (
    select cluster, node from inventory
    union
    select cluster, node from latest_tag
    union
    select cluster, node from job_nodes
),

final as (
    select
        all_nodes.cluster,
        all_nodes.node,
        coalesce(inventory.storage_type, latest_tag.storage_type, 'unknown') as storage_type,
        case
            when inventory.node is not null then inventory.device_models
            else latest_tag.device_models
        end                                                      as device_models,
        case
            when inventory.node is not null then {{ first_element('inventory.device_models') }}
            else {{ first_element('latest_tag.device_models') }}
        end                                                      as device_model,
        inventory.device_count,
        inventory.job_slots,
        inventory.nic_gbps,
        inventory.ab_arm,
        case
            when inventory.node is not null then 'inventory'
            when latest_tag.node is not null then 'job_tag'
            else 'jobs_only'
        end                                                      as config_source
    from all_nodes
    left join inventory
        on inventory.cluster = all_nodes.cluster and inventory.node = all_nodes.node
    left join latest_tag
        on latest_tag.cluster = all_nodes.cluster and latest_tag.node = all_nodes.node
)

select * from final
