-- What would a configuration we have not bought give us? The newest efficiency run's grid:
-- storage type x jobs per node x cache, with predicted CPU efficiency, its 95 % interval and
-- the throughput of a full node.
select
    job_class,
    storage_type,
    jobs_per_node,
    cache,
    cache_policy,
    cache_bytes,
    jobs                        as workload_jobs,
    predicted_efficiency,
    efficiency_low,
    efficiency_high,
    predicted_mean_wall_seconds,
    jobs_per_node_hour,
    extrapolated,
    model_version,
    run_id,
    run_created_at
from {{ ref('int_latest_efficiency_predictions') }}
where scenario = 'what-if'
