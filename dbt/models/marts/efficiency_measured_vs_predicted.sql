-- Does the efficiency model describe our site? For each configuration the site ran (storage type
-- x A/B arm, per job class): the efficiency measured from accounting (job_efficiency, completed
-- jobs), the newest model's prediction, its 95 % interval, and its prediction when this
-- configuration was left out of the fit (the honest test).
-- The measurement adds up the per-day sums of int_completed_efficiency_day_partials (days x
-- groups rows), not every completed job of history.
with completed as (
    select * from {{ ref('int_completed_efficiency_day_partials') }}
),

measured as (
    select
        job_class,
        storage_type,
        coalesce(ab_arm, '')                                           as ab_arm,
        cast(sum(completed_jobs) as bigint)                            as measured_jobs,
        sum(cpu_seconds) / sum(core_wall_seconds)                      as measured_efficiency
    from completed
    where job_class is not null
    group by job_class, storage_type, coalesce(ab_arm, '')
    union all
    -- a run calibrated on every class ('all')
    select
        'all',
        storage_type,
        coalesce(ab_arm, ''),
        cast(sum(completed_jobs) as bigint),
        sum(cpu_seconds) / sum(core_wall_seconds)
    from completed
    group by storage_type, coalesce(ab_arm, '')
),

predicted as (
    select * from {{ ref('int_latest_efficiency_predictions') }}
    where scenario = 'measured'
)

select
    predicted.job_class,
    predicted.storage_type,
    nullif(predicted.ab_arm, '')                                           as ab_arm,
    measured.measured_jobs,
    measured.measured_efficiency,
    predicted.predicted_efficiency,
    predicted.efficiency_low,
    predicted.efficiency_high,
    predicted.loo_predicted_efficiency,
    predicted.predicted_efficiency - measured.measured_efficiency         as prediction_error,
    predicted.loo_predicted_efficiency - measured.measured_efficiency     as loo_prediction_error,
    measured.measured_efficiency between predicted.efficiency_low
        and predicted.efficiency_high                                      as measured_within_interval,
    predicted.mean_concurrent_jobs,
    predicted.model_version,
    predicted.run_id,
    predicted.run_created_at
from predicted
inner join measured
    on  measured.job_class = predicted.job_class
    and measured.storage_type = predicted.storage_type
    and measured.ab_arm = coalesce(predicted.ab_arm, '')
