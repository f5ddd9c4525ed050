-- Efficiency predictions per run and configuration, typed.
with source as (
    select * from {{ source('simulator', 'sim_efficiency_predictions') }}
),

renamed as (
    select
        cast(run_id as {{ dbt.type_string() }})                         as run_id,
        cast(model_version as {{ dbt.type_string() }})                  as model_version,
        cast(job_class as {{ dbt.type_string() }})                      as job_class,
        cast(scenario as {{ dbt.type_string() }})                       as scenario,
        cast(storage_type as {{ dbt.type_string() }})                   as storage_type,
        cast(ab_arm as {{ dbt.type_string() }})                         as ab_arm,
        cast(jobs_per_node as double)                   as jobs_per_node,
        cast(cache as {{ dbt.type_string() }})                          as cache,
        cast(cache_policy as {{ dbt.type_string() }})                   as cache_policy,
        cast(cache_bytes as bigint)                     as cache_bytes,
        cast(jobs as bigint)                            as jobs,
        cast(mean_concurrent_jobs as double)            as mean_concurrent_jobs,
        cast(predicted_efficiency as double)            as predicted_efficiency,
        cast(efficiency_low as double)                  as efficiency_low,
        cast(efficiency_high as double)                 as efficiency_high,
        cast(loo_predicted_efficiency as double)        as loo_predicted_efficiency,
        cast(predicted_mean_wall_seconds as double)     as predicted_mean_wall_seconds,
        cast(jobs_per_node_hour as double)              as jobs_per_node_hour,
        cast(extrapolated as boolean)                   as extrapolated
    from source
)

select * from renamed
