{#
  Models land in schemas named exactly as configured (staging, intermediate, marts, seeds),
  not dbt's default <target_schema>_<custom_schema>. Without a custom schema: the target's (main).
#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
