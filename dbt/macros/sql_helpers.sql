{# A SQL string literal for a Jinja value: DuckDB doubles a single quote, Spark escapes it with a
   backslash (two adjacent Spark literals would be concatenated, not read as one quote). #}
{% macro sql_literal(value) -%}{{ return(adapter.dispatch('sql_literal', 'tierlens')(value)) }}{%- endmacro %}
{% macro default__sql_literal(value) -%}
    '{{ value | string | replace("'", "''") }}'
{%- endmacro %}
{% macro spark__sql_literal(value) -%}
    '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
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
