{#-
  The raw sources read from the Parquet lake instead of the DuckDB warehouse's raw tables.
  Runs as on-run-start when var lake_path (or $TIERLENS_LAKE) names a lake; does nothing else.
  Each table of the sources 'raw' and 'simulator' whose columns all have a data_type in _sources.yml becomes
  main.<table> over <lake>/<table>, read recursively whatever its partition folders (day=,
  site=): the models never use partition columns, so the layout can change without them.
  The columns are cast to the documented types, so an engine reads the same typed rows and an
  empty table (a folder without files) still has its columns.
-#}
{% macro register_lake_sources() %}
    {%- set lake = var('lake_path', env_var('TIERLENS_LAKE', '')) | string | trim -%}
    {%- if not execute or lake == '' -%}{{ return('') }}{%- endif -%}
    {%- if '\'' in lake or '\\' in lake -%}
        {{ exceptions.raise_compiler_error("lake path must not contain quotes or backslashes: " ~ lake) }}
    {%- endif -%}
    {%- set lake = lake.rstrip('/') -%}
    {%- do adapter.execute('create schema if not exists main') -%}
    {%- for node in graph.sources.values() if node.source_name in ('raw', 'simulator') -%}
        {%- set columns = node.columns.values() | list -%}
        {%- if columns and columns | selectattr('data_type', 'none') | list | length == 0 -%}
            {%- do adapter.dispatch('register_lake_table', 'tierlens')(node.name, columns, lake ~ '/' ~ node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}

{# The engine's name for a type documented in DuckDB's words in _sources.yml. #}
{% macro lake_type(data_type) -%}{{ return(adapter.dispatch('lake_type', 'tierlens')(data_type)) }}{%- endmacro %}
{% macro default__lake_type(data_type) -%}{{ data_type }}{%- endmacro %}
{% macro spark__lake_type(data_type) -%}
    {%- set t = data_type | lower -%}
    {{- {'varchar': 'string', 'timestamptz': 'timestamp', 'varchar[]': 'array<string>'}.get(t, t) -}}
{%- endmacro %}

{# DuckDB: a view over the table's Parquet files; with no file yet, an empty typed view. #}
{% macro default__register_lake_table(name, columns, path) %}
    {%- set files = run_query("select count(*) from glob('" ~ path ~ "/**/*.parquet')").columns[0].values()[0] -%}
    {%- set sql -%}
        create or replace view main.{{ name }} as
        select
        {%- for c in columns %}
            cast({{ '"' ~ c.name ~ '"' if files > 0 else 'null' }} as {{ lake_type(c.data_type) }}) as "{{ c.name }}"{{ ',' if not loop.last }}
        {%- endfor %}
        {%- if files > 0 %}
        from read_parquet('{{ path }}/**/*.parquet', hive_partitioning = false, union_by_name = true)
        {%- else %}
        where false
        {%- endif %}
    {%- endset -%}
    {%- do run_query(sql) -%}
{% endmacro %}

{# Spark: an external table with the documented schema over the folder (dropping it later
   leaves the files alone). recursiveFileLookup reads every partition folder's files.
   Statements without a result go through adapter.execute: run_query fetches one, which the
   thrift method has none of for DDL. #}
{% macro spark__register_lake_table(name, columns, path) %}
    {%- do adapter.execute('drop table if exists main.' ~ name) -%}
    {%- set sql -%}
        create table main.{{ name }} (
        {%- for c in columns %}
            `{{ c.name }}` {{ lake_type(c.data_type) }}{{ ',' if not loop.last }}
        {%- endfor %}
        )
        using parquet
        options (path '{{ path }}', recursiveFileLookup 'true')
    {%- endset -%}
    {%- do adapter.execute(sql) -%}
{% endmacro %}
