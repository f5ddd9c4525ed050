-- One row per job (or step) as loaded, typed; blank strings in optional text fields become NULL.
with source as (
    select * from {{ source('raw', 'raw_job') }}
),

renamed as (
    select
        cast(batch_system as {{ dbt.type_string() }})                    as batch_system,
        cast(cluster as {{ dbt.type_string() }})                         as cluster,
        cast(job_id as {{ dbt.type_string() }})                          as job_id,
        coalesce(cast(step_id as {{ dbt.type_string() }}), '')           as step_id,
        nullif(trim(job_identity), '')                   as job_identity,
        nullif(trim(user_name), '')                      as user_name,
        nullif(trim(account), '')                        as account,
        nullif(trim(vo), '')                             as vo,
        nullif(lower(trim(job_class)), '')               as job_class,
        nullif(trim({{ adapter.quote("partition") }}), '')                    as {{ adapter.quote("partition") }},
        nullif(trim(node), '')                           as node,
        nullif(trim(node_list), '')                      as node_list,
        cast(submit_time as {{ type_instant() }})                 as submit_time,
        cast(start_time as {{ type_instant() }})                  as start_time,
        cast(end_time as {{ type_instant() }})                    as end_time,
        cast(allocated_cores as integer)                 as allocated_cores,
        cast(cpu_user_seconds as double)                 as cpu_user_seconds,
        cast(cpu_system_seconds as double)               as cpu_system_seconds,
        cast(wall_seconds as double)                     as wall_seconds,
        upper(nullif(trim(state), ''))                   as state,
        cast(exit_code as integer)                       as exit_code,
        cast(bytes_read as bigint)                       as bytes_read,
        cast(bytes_written as bigint)                    as bytes_written
    from source
)

select * from renamed
