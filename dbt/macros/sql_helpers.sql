{# A SQL string literal for a Jinja value (single quotes doubled). #}
{% macro sql_literal(value) -%}
    '{{ value | string | replace("'", "''") }}'
{%- endmacro %}

{# A TIMESTAMPTZ expression as a naive UTC TIMESTAMP, so date/hour truncation is in UTC. #}
{% macro utc(expr) -%}
    timezone('UTC', {{ expr }})
{%- endmacro %}

{# Seconds between two timestamps, as DOUBLE (microsecond precision). #}
{% macro seconds_between(start_expr, end_expr) -%}
    (date_diff('microsecond', {{ start_expr }}, {{ end_expr }}) / 1e6)
{%- endmacro %}

{# Usable devices' worth of capacity for a storage configuration (RAID levels). #}
{% macro usable_devices(storage_type, devices) -%}
    case {{ storage_type }}
        when 'raid1' then least({{ devices }}, 1)
        when 'raid5' then greatest({{ devices }} - 1, 0)
        when 'raid6' then greatest({{ devices }} - 2, 0)
        when 'raid10' then floor({{ devices }} / 2)
        else {{ devices }}
    end
{%- endmacro %}
