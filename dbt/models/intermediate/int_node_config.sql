-- One row per node tierlens has seen (inventory, job tags or jobs) with its storage configuration:
-- the inventory's when the node is in raw_node, else what the node's latest job tag reported.
-- device_model is the first device model (device_models[1]), what the price catalog matches on.
with inventory as (
    select * from {{ ref('stg_node') }}
),

-- A node's latest tag (by tagged_at, then job_id and step_id, the highest; a tag without a time
-- only when the node has no other) is among its tags at its newest tagged_at: those are found by
-- an aggregate over every tag, and only they are ranked. Ranking every tag sorted all of them,
-- a cost that grew with the months of tags kept (0.77 s against 0.11 s over a year of tags at a
-- tenth of the bench site's size).
newest_tag_time as (
    select cluster, node, max(tagged_at) as tagged_at
    from {{ ref('stg_job_tag') }}
    group by cluster, node
),

-- row_number in a subquery, not QUALIFY: Spark SQL has no QUALIFY.
latest_tag as (
    select cluster, node, storage_type, device_models
    from (
        select
            tags.cluster, tags.node, tags.storage_type, tags.device_models,
            row_number() over (
                partition by tags.cluster, tags.node
                order by tags.tagged_at desc nulls last, tags.job_id desc, tags.step_id desc
            ) as tag_rank
        from {{ ref('stg_job_tag') }} as tags
        inner join newest_tag_time as newest
            on newest.cluster = tags.cluster and newest.node = tags.node
            and (tags.tagged_at = newest.tagged_at or (newest.tagged_at is null and tags.tagged_at is null))
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
