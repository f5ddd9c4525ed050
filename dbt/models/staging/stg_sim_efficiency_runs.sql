-- Efficiency-model runs, typed.
select
    {{ typed_columns('simulator', 'sim_efficiency_runs', [
        'run_id', 'created_at', 'model_version', 'job_class', 'inputs', 'jobs', 'rms_error', 'structural_error'],
        renames={'jobs': 'calibration_jobs'}) }}
from {{ source('simulator', 'sim_efficiency_runs') }}
