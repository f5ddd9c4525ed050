-- The storage price catalog: the seed storage_catalog (what a site edits in the repository)
-- overridden and extended by rows loaded into raw_storage_catalog (raw wins on config_name).
-- The two are put together first and typed once.
{%- set columns = ['config_name', 'storage_type', 'device_model', 'devices_per_node', 'unit_price',
                   'currency', 'capacity_bytes', 'endurance_tbw', 'catalog_source', 'seq_read_mb_per_s',
                   'seq_write_mb_per_s', 'rand_read_iops_4k', 'raid_level'] %}
with warehouse_rows as (
    select *, 'warehouse' as catalog_source
    from {{ source('raw', 'raw_storage_catalog') }}
),

seed_rows as (
    select *, 'seed' as catalog_source
    from {{ ref('storage_catalog') }}
    where config_name not in (select config_name from warehouse_rows)
),

unioned as (
    select {{ columns | join(', ') }} from warehouse_rows
    union all
    select {{ columns | join(', ') }} from seed_rows
)

select
    cast(config_name as {{ dbt.type_string() }})                     as config_name,
    lower(trim(storage_type))                                        as storage_type,
    nullif(trim(device_model), '')                                   as device_model,
    cast(devices_per_node as integer)                                as devices_per_node,
    cast(unit_price as double)                                       as unit_price,
    upper(nullif(trim(currency), ''))                                as currency,
    cast(capacity_bytes as bigint)                                   as capacity_bytes,
    cast(endurance_tbw as double)                                    as endurance_tbw,
    catalog_source,
    cast(seq_read_mb_per_s as double)                                as seq_read_mb_per_s,
    cast(seq_write_mb_per_s as double)                               as seq_write_mb_per_s,
    cast(rand_read_iops_4k as double)                                as rand_read_iops_4k,
    coalesce(lower(nullif(trim(raid_level), '')), 'none')            as raid_level
from unioned
