-- One row per file open-to-close on an XRootD server or cache, typed.
with source as (
    select * from {{ source('raw', 'raw_file_access') }}
),

renamed as (
    select
        cast(server_host as {{ dbt.type_string() }})                     as server_host,
        cast(unique_id as {{ dbt.type_string() }})                       as unique_id,
        lower(nullif(trim(server_role), ''))             as server_role,
        cast(file_lfn as {{ dbt.type_string() }})                        as file_lfn,
        cast(file_size_bytes as bigint)                  as file_size_bytes,
        cast(start_time as {{ type_instant() }})                  as start_time,
        cast(end_time as {{ type_instant() }})                    as end_time,
        cast(read_single_average_bytes as double)        as read_single_average_bytes,
        cast(read_vector_average_bytes as double)        as read_vector_average_bytes,
        cast(write_average_bytes as double)              as write_average_bytes,
        cast(read_bytes_at_close as bigint)              as read_bytes_at_close,
        cast(write_bytes_at_close as bigint)             as write_bytes_at_close,
        cast(read_bytes as bigint)                       as read_bytes,
        cast(readv_bytes as bigint)                      as readv_bytes,
        cast(write_bytes as bigint)                      as write_bytes,
        cast(read_ops as bigint)                         as read_ops,
        cast(readv_ops as bigint)                        as readv_ops,
        cast(write_ops as bigint)                        as write_ops,
        nullif(trim(client_host), '')                    as client_host,
        cast(client_pid as integer)                      as client_pid,
        nullif(trim(app_name), '')                       as app_name,
        nullif(trim(job_identity), '')                   as job_identity,
        cast(cache_hit_bytes as bigint)                  as cache_hit_bytes,
        cast(cache_miss_bytes as bigint)                 as cache_miss_bytes,
        cast(cache_bypass_bytes as bigint)               as cache_bypass_bytes,
        cast(close_seen as boolean)                      as close_seen,
        lower(nullif(trim(end_reason), ''))              as end_reason,
        cast(server_pid as integer)                      as server_pid,
        nullif(trim(server_addr), '')                    as server_addr,
        cast(cache_attach_time as {{ type_instant() }})  as cache_attach_time,
        cast(cache_detach_time as {{ type_instant() }})  as cache_detach_time,
        cast(cache_access_count as bigint)               as cache_access_count,
        -- '' (the cache contacted no origin) is kept apart from NULL (not reported)
        cast(cache_remotes as {{ dbt.type_string() }})   as cache_remotes,
        cast(cache_blocks as bigint)                     as cache_blocks,
        cast(cache_blocks_done as bigint)                as cache_blocks_done
    from source
)

select * from renamed
