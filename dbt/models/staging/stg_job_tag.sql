-- One row per tagged job (or step) as the scheduler plugin recorded it, typed.
with source as (
    select * from {{ source('raw', 'raw_job_tag') }}
)

select
    {{ typed_columns('raw', 'raw_job_tag', ['batch_system', 'cluster', 'job_id']) }},
    coalesce(cast(step_id as {{ dbt.type_string() }}), '') as step_id,
    {{ typed_columns('raw', 'raw_job_tag', ['node']) }},
    lower(trim(storage_type))                               as storage_type,
    {{ typed_columns('raw', 'raw_job_tag', ['device_models']) }},
    {{ blank_to_null(['scratch_path', 'ab_arm', 'cache_route']) }},
    {{ typed_columns('raw', 'raw_job_tag', ['tagged_at']) }},
    {{ blank_to_null(['tagger']) }}
from source
