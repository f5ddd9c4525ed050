-- Site changes as recorded (tierlens change add / load), typed. Scope columns stay as given:
-- all three NULL means the whole site (of cluster, or of every cluster when cluster is NULL).
with source as (
    select * from {{ source('raw', 'raw_site_change') }}
),

renamed as (
    select
        cast(change_id as {{ dbt.type_string() }})                       as change_id,
        cast(changed_at as {{ type_instant() }})                         as changed_at,
        cast(description as {{ dbt.type_string() }})                     as description,
        coalesce(lower(trim(category)), 'other')                         as category,
        nullif(trim(cluster), '')                                        as cluster,
        cast(scope_nodes as {{ type_string_array() }})                   as scope_nodes,
        lower(nullif(trim(scope_storage_type), ''))                      as scope_storage_type,
        nullif(trim(scope_ab_arm), '')                                   as scope_ab_arm,
        nullif(trim(changed_by), '')                                     as changed_by,
        cast(recorded_at as {{ type_instant() }})                        as recorded_at
    from source
)

select * from renamed
