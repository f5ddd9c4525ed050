-- What each scheduled ingest of a source brought for its data interval, or why nothing: one row
-- per source and interval (a rerun replaces its row).
select
    {{ typed_columns('raw', 'raw_source_interval', ['source', 'interval_start', 'interval_end']) }},
    cast(coalesce(records, 0) as bigint)                     as records,
    cast(outcome as {{ dbt.type_string() }})                 as outcome,
    cast(reason as {{ dbt.type_string() }})                  as reason,
    {{ typed_columns('raw', 'raw_source_interval', ['recorded_at']) }}
from {{ source('raw', 'raw_source_interval') }}
