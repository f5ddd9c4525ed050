-- One row per file open-to-close on an XRootD server or cache, typed.
with source as (
    select * from {{ source('raw', 'raw_file_access') }}
)

select
    {{ typed_columns('raw', 'raw_file_access', ['server_host', 'unique_id']) }},
    lower(nullif(trim(server_role), ''))                    as server_role,
    {{ typed_columns('raw', 'raw_file_access', [
        'file_lfn', 'file_size_bytes', 'start_time', 'end_time', 'read_single_average_bytes',
        'read_vector_average_bytes', 'write_average_bytes', 'read_bytes_at_close', 'write_bytes_at_close',
        'read_bytes', 'readv_bytes', 'write_bytes', 'read_ops', 'readv_ops', 'write_ops']) }},
    {{ blank_to_null(['client_host']) }},
    {{ typed_columns('raw', 'raw_file_access', ['client_pid']) }},
    {{ blank_to_null(['app_name', 'job_identity']) }},
    {{ typed_columns('raw', 'raw_file_access', ['cache_hit_bytes', 'cache_miss_bytes', 'cache_bypass_bytes',
                                                'close_seen']) }},
    lower(nullif(trim(end_reason), ''))                     as end_reason,
    {{ typed_columns('raw', 'raw_file_access', ['server_pid']) }},
    {{ blank_to_null(['server_addr']) }},
    -- cache_remotes '' (the cache contacted no origin) is kept apart from NULL (not reported)
    {{ typed_columns('raw', 'raw_file_access', ['cache_attach_time', 'cache_detach_time', 'cache_access_count',
                                                'cache_remotes', 'cache_blocks', 'cache_blocks_done',
                                                'cache_todisk_bytes', 'cache_prefetch_bytes']) }}
from source
