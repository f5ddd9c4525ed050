-- One row per job (or step) as loaded, typed; blank strings in optional text fields become NULL.
with source as (
    select * from {{ source('raw', 'raw_job') }}
)

select
    {{ typed_columns('raw', 'raw_job', ['batch_system', 'cluster', 'job_id']) }},
    coalesce(cast(step_id as {{ dbt.type_string() }}), '') as step_id,
    {{ blank_to_null(['job_identity', 'user_name', 'account', 'vo']) }},
    nullif(lower(trim(job_class)), '')                      as job_class,
    {{ blank_to_null(['partition', 'node', 'node_list']) }},
    {{ typed_columns('raw', 'raw_job', ['submit_time', 'start_time', 'end_time', 'allocated_cores',
                                        'cpu_user_seconds', 'cpu_system_seconds', 'wall_seconds']) }},
    upper(nullif(trim(state), ''))                          as state,
    {{ typed_columns('raw', 'raw_job', ['exit_code', 'bytes_read', 'bytes_written']) }}
from source
