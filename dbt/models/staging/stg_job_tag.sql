-- One row per tagged job (or step) as the scheduler plugin recorded it, typed.
with source as (
    select * from {{ source('raw', 'raw_job_tag') }}
),

renamed as (
    select
        cast(batch_system as {{ dbt.type_string() }})                    as batch_system,
        cast(cluster as {{ dbt.type_string() }})                         as cluster,
        cast(job_id as {{ dbt.type_string() }})                          as job_id,
        coalesce(cast(step_id as {{ dbt.type_string() }}), '')           as step_id,
        cast(node as {{ dbt.type_string() }})                            as node,
        lower(trim(storage_type))                        as storage_type,
        cast(device_models as {{ type_string_array() }})                 as device_models,
        nullif(trim(scratch_path), '')                   as scratch_path,
        nullif(trim(ab_arm), '')                         as ab_arm,
        nullif(trim(cache_route), '')                    as cache_route,
        cast(tagged_at as {{ type_instant() }})                   as tagged_at,
        nullif(trim(tagger), '')                         as tagger
    from source
)

select * from renamed
