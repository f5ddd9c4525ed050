-- Efficiency-model runs, typed.
with source as (
    select * from {{ source('simulator', 'sim_efficiency_runs') }}
),

renamed as (
    select
        cast(run_id as {{ dbt.type_string() }})              as run_id,
        created_at,
        cast(model_version as {{ dbt.type_string() }})       as model_version,
        cast(job_class as {{ dbt.type_string() }})           as job_class,
        cast(inputs as {{ dbt.type_string() }})              as inputs,
        cast(jobs as bigint)                 as calibration_jobs,
        cast(rms_error as double)            as rms_error,
        cast(structural_error as double)     as structural_error
    from source
)

select * from renamed
