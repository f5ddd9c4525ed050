-- Buying-guide rows of the simulator (tierlens simulate efficiency --candidates), typed.
select
    {{ typed_columns('simulator', 'sim_hardware_options', [
        'run_id', 'config_name', 'storage_type', 'evidence', 'jobs_per_node', 'cache', 'currency', 'price_per_node',
        'capacity_gb_per_node', 'price_per_gb', 'efficiency', 'efficiency_low', 'efficiency_high', 'node_throughput',
        'node_throughput_low', 'node_throughput_high', 'price_per_throughput', 'price_per_throughput_low',
        'price_per_throughput_high', 'price_per_core_hour', 'price_per_core_hour_low', 'price_per_core_hour_high',
        'scratch_gb_written_per_node_day', 'ssd_lifetime_years', 'rank', 'cores_per_job', 'node_config', 'node_cores',
        'node_price', 'whole_node_price', 'power_watts', 'power_price_per_node_hour', 'interval_driver',
        'staged_gb_per_node_hour', 'write_warning', 'published_structural_error', 'structural_error_source',
        'under_write_read_p99_ms'], renames={'rank': 'price_rank'}) }}
from {{ source('simulator', 'sim_hardware_options') }}
