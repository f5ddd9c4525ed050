-- Efficiency predictions per run and configuration, typed.
select
    {{ typed_columns('simulator', 'sim_efficiency_predictions', [
        'run_id', 'model_version', 'job_class', 'scenario', 'storage_type', 'ab_arm', 'jobs_per_node', 'cache',
        'cache_policy', 'cache_bytes', 'jobs', 'mean_concurrent_jobs', 'predicted_efficiency', 'efficiency_low',
        'efficiency_high', 'loo_predicted_efficiency', 'predicted_mean_wall_seconds', 'jobs_per_node_hour',
        'extrapolated']) }}
from {{ source('simulator', 'sim_efficiency_predictions') }}
