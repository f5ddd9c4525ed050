-- Collector counters per worker x server x flush interval, typed; missing counts are 0.
{%- set counts = ['datagrams', 'kernel_drops', 'sequence_gaps', 'disallowed', 'quarantined', 'pfc_unmatched',
                  'rows_written', 'unknown_records'] %}
select
    {{ typed_columns('raw', 'raw_collector_stats', ['collector_host', 'worker', 'interval_start', 'interval_end']) }},
    coalesce(cast(server_host as {{ dbt.type_string() }}), '') as server_host,
{%- for count in counts %}
    cast(coalesce({{ count }}, 0) as bigint)                 as {{ count }},
{%- endfor %}
    coalesce(cast(unknown_kinds as {{ dbt.type_string() }}), '') as unknown_kinds
from {{ source('raw', 'raw_collector_stats') }}
