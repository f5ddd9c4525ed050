-- The predictions of the newest efficiency run of each job class: reports compare measurements
-- with what the current model says, not with every model ever run.
with runs as (
    select
        *,
        row_number() over (partition by job_class order by created_at desc, run_id) as recency
    from {{ ref('stg_sim_efficiency_runs') }}
),

latest as (
    select run_id, created_at, structural_error from runs where recency = 1
)

select
    predictions.*,
    latest.created_at                    as run_created_at,
    latest.structural_error
from {{ ref('stg_sim_efficiency_predictions') }} as predictions
inner join latest
    on latest.run_id = predictions.run_id
