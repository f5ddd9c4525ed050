-- Worker-node inventory, typed.
with source as (
    select * from {{ source('raw', 'raw_node') }}
),

renamed as (
    select
        cast(cluster as {{ dbt.type_string() }})                         as cluster,
        cast(node as {{ dbt.type_string() }})                            as node,
        lower(trim(storage_type))                        as storage_type,
        cast(device_models as {{ type_string_array() }})                 as device_models,
        cast(device_count as integer)                    as device_count,
        cast(job_slots as integer)                       as job_slots,
        cast(nic_gbps as double)                         as nic_gbps,
        nullif(trim(ab_arm), '')                         as ab_arm
    from source
)

select * from renamed
