-- Hardware you could buy: the newest buying guide of each job class (tierlens simulate efficiency
-- --candidates), one row per catalog configuration x jobs per node x cache, cheapest delivered
-- core-hour of the whole node (node, storage, power) first. The 95 % interval of the predicted efficiency is carried into every price;
-- evidence says what the prediction rests on (measured jobs, a device probe, a datasheet), and
-- structural_error the error that evidence carries: for derived rows the larger of the
-- leave-one-type-out RMS on this site (generator_structural_error) and the one on Glasgow's
-- published figures (published_structural_error); for measured rows the run's
-- leave-one-configuration-out error. write_warning flags a device whose
-- steady-state writes cannot take what a full node of this site's jobs stages in, with the figures;
-- under_write_read_p99_ms shows, as evidence, how long the probe saw reads wait beside writes.
with runs as (
    select
        run_id,
        job_class,
        created_at,
        structural_error,
        row_number() over (partition by job_class order by created_at desc, run_id) as recency
    from {{ ref('stg_sim_efficiency_runs') }}
),

latest as (
    select * from runs where recency = 1
),

type_errors as (
    select
        run_id,
        evidence,
        sqrt(avg(error * error)) as structural_error
    from {{ ref('stg_sim_efficiency_type_loo') }}
    group by run_id, evidence
)

select
    latest.job_class,
    options.config_name,
    options.storage_type,
    options.evidence,
    options.jobs_per_node,
    options.cache,
    options.currency,
    options.price_per_node,
    options.capacity_gb_per_node,
    options.price_per_gb,
    options.efficiency,
    options.efficiency_low,
    options.efficiency_high,
    options.node_throughput,
    options.node_throughput_low,
    options.node_throughput_high,
    options.price_per_throughput,
    options.price_per_throughput_low,
    options.price_per_throughput_high,
    options.price_per_core_hour,
    options.price_per_core_hour_low,
    options.price_per_core_hour_high,
    options.scratch_gb_written_per_node_day,
    options.ssd_lifetime_years,
    options.price_rank,
    options.cores_per_job,
    options.node_config,
    options.node_cores,
    options.node_price,
    options.whole_node_price,
    options.power_watts,
    options.power_price_per_node_hour,
    options.interval_driver,
    options.staged_gb_per_node_hour,
    options.write_warning,
    options.under_write_read_p99_ms,
    case when options.evidence = 'measured' then latest.structural_error
         when options.structural_error_source = 'published figures' then options.published_structural_error
         else type_errors.structural_error end as structural_error,
    case when options.evidence <> 'measured' then type_errors.structural_error end as generator_structural_error,
    options.published_structural_error,
    options.structural_error_source,
    options.run_id,
    latest.created_at                           as run_created_at
from {{ ref('stg_sim_hardware_options') }} as options
inner join latest
    on latest.run_id = options.run_id
left join type_errors
    on type_errors.run_id = options.run_id and type_errors.evidence = options.evidence
