-- Worker-node inventory, typed.
with source as (
    select * from {{ source('raw', 'raw_node') }}
)

select
    {{ typed_columns('raw', 'raw_node', ['cluster', 'node']) }},
    lower(trim(storage_type))                               as storage_type,
    {{ typed_columns('raw', 'raw_node', ['device_models', 'device_count', 'job_slots', 'nic_gbps']) }},
    {{ blank_to_null(['ab_arm']) }}
from source
