-- Site changes as recorded (tierlens change add / load), typed. Scope columns stay as given:
-- all three NULL means the whole site (of cluster, or of every cluster when cluster is NULL).
select
    {{ typed_columns('raw', 'raw_site_change', ['change_id', 'changed_at', 'description']) }},
    coalesce(lower(trim(category)), 'other')                as category,
    {{ blank_to_null(['cluster']) }},
    {{ typed_columns('raw', 'raw_site_change', ['scope_nodes']) }},
    lower(nullif(trim(scope_storage_type), ''))             as scope_storage_type,
    {{ blank_to_null(['scope_ab_arm', 'changed_by']) }},
    {{ typed_columns('raw', 'raw_site_change', ['recorded_at']) }}
from {{ source('raw', 'raw_site_change') }}
