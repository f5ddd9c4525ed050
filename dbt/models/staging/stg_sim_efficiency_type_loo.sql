-- Leave-one-type-out validation of the device layer, typed.
with source as (
    select * from {{ source('simulator', 'sim_efficiency_type_loo') }}
),

renamed as (
    select
        cast(run_id as {{ dbt.type_string() }}) as run_id,
        cast(storage_type as {{ dbt.type_string() }}) as storage_type,
        cast(evidence as {{ dbt.type_string() }}) as evidence,
        cast(jobs as bigint) as jobs,
        cast(measured_efficiency as double) as measured_efficiency,
        cast(predicted_efficiency as double) as predicted_efficiency,
        cast(error as double) as error
    from source
)

select * from renamed
