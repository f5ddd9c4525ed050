{#-
  Staging's typing, read from the sources' contract: `cast(col as <its data_type>) as col` for
  each named column of a source table, the type being the column's data_type in _sources.yml
  (generated from records.py and the simulator's DDL), in the engine's words (lake_type).
  renames maps a column to the name staging gives it. Before dbt executes (parsing, and
  sqlfluff's lint) the columns render plain, so the model still reads as SQL.
-#}
{% macro typed_columns(source_name, table_name, columns, renames={}) -%}
    {%- set types = {} -%}
    {%- if execute is defined and execute -%}
        {%- for node in graph.sources.values() if node.source_name == source_name and node.name == table_name -%}
            {%- for column in node.columns.values() -%}{%- do types.update({column.name: column.data_type}) -%}{%- endfor -%}
        {%- endfor -%}
        {%- for column in columns if column not in types -%}
            {{ exceptions.raise_compiler_error("typed_columns: " ~ source_name ~ "." ~ table_name ~ " has no documented type for " ~ column) }}
        {%- endfor -%}
    {%- endif -%}
    {%- for column in columns -%}
        {%- set name = adapter.quote(column) -%}
        {{ 'cast(' ~ name ~ ' as ' ~ lake_type(types[column]) ~ ')' if column in types else name }} as {{ adapter.quote(renames.get(column, column)) }}{{ ',\n    ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}

{# Optional text columns as given, but blank ('' or white space) becomes NULL. #}
{% macro blank_to_null(columns) -%}
    {%- for column in columns -%}
        nullif(trim({{ adapter.quote(column) }}), '') as {{ adapter.quote(column) }}{{ ',\n    ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}
