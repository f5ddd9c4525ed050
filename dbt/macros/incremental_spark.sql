{#-
  incremental_by_day on Spark (dbt-spark, plain Parquet tables in the Hive metastore the spark
  target keeps beside its tables, profiles.yml).

  dbt-spark offers only append and insert_overwrite on Parquet, so 'replace_days' is spelled with
  insert_overwrite: the table is partitioned by its day column (one folder per UTC day, and one
  for rows without a day), and a run
    1. drops the partitions of the days its window covers, and the no-day partition
       (spark_drop_window_days below: a day the rebuild no longer produces must go, which a
       dynamic overwrite alone would leave in place);
    2. writes the rebuilt rows of the window's days (and those without a day) with a dynamic
       partition overwrite (dbt-spark sets spark.sql.sources.partitionOverwriteMode=DYNAMIC for
       insert_overwrite with partition_by), so every partition outside the window stays as it is.
  Parquet tables have no transactions: if step 2 fails the window's days are missing until the
  next run, which rebuilds them because its window starts from the newest day the model still
  holds. A back-fill that fails is run again.

  Spark writes a partition column last: on Spark these tables hold the day column after the
  others (readers select columns by name).

  Models whose row's day moves as its inputs arrive (row_moved: a row_key, or rebuild_by 'file')
  stay tables on Spark: a moved row's earlier version can lie in a partition outside the window,
  and removing it means rewriting that partition from itself minus the rebuilt keys. They are job
  or file grain and read the matched accesses (or the file partials) of the whole history on every
  run. event_time and grain are declared for the graph only: insert_overwrite reads neither.
-#}
{% macro spark_incremental_by_day(day_column, lookback_days, event_time, grain, row_moved=false) -%}
    {%- if row_moved -%}
        {{ return({'materialized': 'table', 'event_time': event_time, 'grain': grain}) }}
    {%- endif -%}
    {{ return({
        'materialized': 'incremental',
        'incremental_strategy': 'insert_overwrite',
        'partition_by': [day_column],
        'unique_key': day_column,
        'lookback_days': lookback_days,
        'event_time': event_time,
        'grain': grain,
        'on_schema_change': 'fail',
    }) }}
{%- endmacro %}


{#- dbt-spark's insert_overwrite statement (the name dbt-spark's incremental materialization calls;
    the project's macro takes precedence over the adapter's). For incremental_by_day models it
    first drops the window's partitions, then writes only the window's rows (a model may read, and
    return, rows of context days before its window: those must not overwrite their days). Any
    other model gets the plain statement. -#}
{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) -%}
    {%- set columns = adapter.get_columns_in_relation(target_relation) | map(attribute='quoted') | join(', ') -%}
    {%- set lookback = config.get('lookback_days') -%}
    {%- if lookback is none -%}
        insert overwrite table {{ target_relation }}
        {{ partition_cols(label="partition") }}
        select {{ columns }} from {{ source_relation }}
    {%- else -%}
        {%- set day_column = config.get('unique_key') -%}
        {%- do spark_drop_window_days(target_relation, day_column, lookback) -%}
        insert overwrite table {{ target_relation }}
        partition ({{ day_column }})
        select {{ columns }} from {{ source_relation }}
        where {{ day_column }} is null or {{ in_window(day_column, lookback) }}
    {%- endif -%}
{%- endmacro %}


{#- Drops the partitions of the run's window (days first_day <= day < end_day, either bound open)
    and the partition of rows without a day, in one statement; Hive names the latter
    __HIVE_DEFAULT_PARTITION__ and `partition (col = null)` addresses it. -#}
{% macro spark_drop_window_days(relation, day_column, lookback_days) -%}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set first = window_first_day(lookback_days) -%}
    {%- set stop = window_end_day() -%}
    {%- set specs = [] -%}
    {%- for row in run_query('show partitions ' ~ relation).rows -%}
        {%- set value = row[0].split('=', 1)[1] -%}
        {%- if value == '__HIVE_DEFAULT_PARTITION__' -%}
            {%- do specs.append('partition (' ~ day_column ~ ' = null)') -%}
        {%- elif (first is none or value >= first.isoformat()) and (stop is none or value < stop.isoformat()) -%}
            {%- do specs.append('partition (' ~ day_column ~ " = '" ~ value ~ "')") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if specs -%}
        {#- adapter.execute: no result to fetch (the thrift method has none for DDL) -#}
        {%- do adapter.execute('alter table ' ~ relation ~ ' drop if exists ' ~ specs | join(', ')) -%}
    {%- endif -%}
    {{ log('incremental_by_day: ' ~ relation ~ ' dropped ' ~ specs | length ~ ' partitions before rewriting its window') }}
{%- endmacro %}
