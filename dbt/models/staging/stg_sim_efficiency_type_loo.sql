-- Leave-one-type-out validation of the device layer, typed.
select
    {{ typed_columns('simulator', 'sim_efficiency_type_loo', [
        'run_id', 'storage_type', 'evidence', 'jobs', 'measured_efficiency', 'predicted_efficiency', 'error']) }}
from {{ source('simulator', 'sim_efficiency_type_loo') }}
