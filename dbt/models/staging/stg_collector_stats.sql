-- Collector counters per worker x server x flush interval, typed; missing counts are 0.
with source as (
    select * from {{ source('raw', 'raw_collector_stats') }}
),

renamed as (
    select
        cast(collector_host as {{ dbt.type_string() }})                  as collector_host,
        cast(worker as integer)                                          as worker,
        cast(interval_start as {{ type_instant() }})                     as interval_start,
        cast(interval_end as {{ type_instant() }})                       as interval_end,
        coalesce(cast(server_host as {{ dbt.type_string() }}), '')       as server_host,
        cast(coalesce(datagrams, 0) as bigint)                           as datagrams,
        cast(coalesce(kernel_drops, 0) as bigint)                        as kernel_drops,
        cast(coalesce(sequence_gaps, 0) as bigint)                       as sequence_gaps,
        cast(coalesce(disallowed, 0) as bigint)                          as disallowed,
        cast(coalesce(quarantined, 0) as bigint)                         as quarantined,
        cast(coalesce(pfc_unmatched, 0) as bigint)                       as pfc_unmatched,
        cast(coalesce(rows_written, 0) as bigint)                        as rows_written
    from source
)

select * from renamed
