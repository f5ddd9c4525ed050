{#-
  The bytes-read bin of a job: '<1 GB', '1-3 GB', ..., '>=100 GB', or 'unknown' when bytes read is
  NULL. Edges in GB from var bytes_read_bin_edges_gb (default [1, 3, 10, 30, 100]); a bin holds
  its lower edge. tierlens.analysis.change.bin_labels/assign_bins write the same labels, so
  marts.change_effects and marts.efficiency_by_input_size bin jobs alike.
-#}
{% macro bytes_read_bin(expr) -%}
    {%- set edges = var('bytes_read_bin_edges_gb', [1, 3, 10, 30, 100]) -%}
    {%- set ns = namespace(labels=[]) -%}
    case
        when {{ expr }} is null then 'unknown'
    {%- for e in edges %}
        when {{ expr }} < {{ e }} * 1e9 then '{{ ("<" ~ gb_label(e)) if loop.first else (gb_label(edges[loop.index0 - 1]) ~ "-" ~ gb_label(e)) }} GB'
    {%- endfor %}
        else '>={{ gb_label(edges[-1]) }} GB'
    end
{%- endmacro %}

{# Python's format(x, 'g') for the edges people use (integers and short decimals). #}
{% macro gb_label(x) -%}
    {%- if (x | float) == ((x | float) | int) -%}{{ (x | float) | int }}{%- else -%}{{ x | float }}{%- endif -%}
{%- endmacro %}

{# Sort key of a bin label, so tables list bins by size. #}
{% macro bytes_read_bin_order(expr) -%}
    {%- set edges = var('bytes_read_bin_edges_gb', [1, 3, 10, 30, 100]) -%}
    case {{ expr }}
        when 'unknown' then {{ edges | length + 1 }}
    {%- for e in edges %}
        when '{{ ("<" ~ gb_label(e)) if loop.first else (gb_label(edges[loop.index0 - 1]) ~ "-" ~ gb_label(e)) }} GB' then {{ loop.index0 }}
    {%- endfor %}
        else {{ edges | length }}
    end
{%- endmacro %}
