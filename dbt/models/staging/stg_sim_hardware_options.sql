-- Buying-guide rows of the simulator (tierlens simulate efficiency --candidates), typed.
with source as (
    select * from {{ source('simulator', 'sim_hardware_options') }}
),

renamed as (
    select
        cast(run_id as {{ dbt.type_string() }})                        as run_id,
        cast(config_name as {{ dbt.type_string() }})                   as config_name,
        cast(storage_type as {{ dbt.type_string() }})                  as storage_type,
        cast(evidence as {{ dbt.type_string() }})                      as evidence,
        cast(jobs_per_node as double)                            as jobs_per_node,
        cast(cache as {{ dbt.type_string() }})                         as cache,
        cast(currency as {{ dbt.type_string() }})                      as currency,
        cast(price_per_node as double)                           as price_per_node,
        cast(capacity_gb_per_node as double)                     as capacity_gb_per_node,
        cast(price_per_gb as double)                             as price_per_gb,
        cast(efficiency as double)                               as efficiency,
        cast(efficiency_low as double)                           as efficiency_low,
        cast(efficiency_high as double)                          as efficiency_high,
        cast(node_throughput as double)                          as node_throughput,
        cast(node_throughput_low as double)                      as node_throughput_low,
        cast(node_throughput_high as double)                     as node_throughput_high,
        cast(price_per_throughput as double)                     as price_per_throughput,
        cast(price_per_throughput_low as double)                 as price_per_throughput_low,
        cast(price_per_throughput_high as double)                as price_per_throughput_high,
        cast(price_per_core_hour as double)                      as price_per_core_hour,
        cast(price_per_core_hour_low as double)                  as price_per_core_hour_low,
        cast(price_per_core_hour_high as double)                 as price_per_core_hour_high,
        cast(scratch_gb_written_per_node_day as double)          as scratch_gb_written_per_node_day,
        cast(ssd_lifetime_years as double)                       as ssd_lifetime_years,
        cast(rank as integer)                                    as price_rank
    from source
)

select * from renamed
