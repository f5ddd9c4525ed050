{#-
  file_reads, incremental by file (dbt/README.md, "Incremental models").

  file_reads adds up int_file_reads_day_partials by file. A plain run re-adds only the files whose
  sums can have changed since its last build and replaces their rows (replace_days with
  rebuild_by 'file', incremental_by_day):

    - the files with a partial row on or after the first day the partials can have rebuilt since
      then, or a partial row without a day (the partials rebuild those every run);
    - the files it holds whose last_access_day is on or after that day, or NULL: a partial row the
      rebuild removed lay on such a day, so the file's held row counted it (a file left with no
      partial row then loses its row, as a rebuild of the whole table would drop it).

  That first day is the partials' window counted back from the newest last_access_day file_reads
  holds (the partials' newest day when it was last built, since a file's last_access_day is its
  newest partial day): every rebuild of the partials since then started on or after it, however
  many runs built the partials without file_reads. A back-fill uses its first day.

  On Spark file_reads stays a table rebuilt whole: insert_overwrite replaces partitions, and a
  file's row has no day of its own to partition by that its next version would share.
-#}
{#- The first partial day (a datetime.date) whose files this run re-adds, or none for every file
    (the model's first build, a full refresh, a table without last_access_day values yet). -#}
{% macro file_reads_first_day(lookback_days) -%}
    {%- if not execute or target.type == 'spark' or not is_incremental() -%}{{ return(none) }}{%- endif -%}
    {#- a table built by an older tierlens (rebuilt whole, without the column): its first run here
        adds the column (on_schema_change) and replaces every row -#}
    {%- set held = adapter.get_columns_in_relation(this) | map(attribute='name') | map('lower') | list -%}
    {%- if config.get('unique_key') not in held -%}{{ return(none) }}{%- endif -%}
    {{ return(window_first_day(lookback_days)) }}
{%- endmacro %}


{#- replace_days by file: the held rows of the re-added files go (those with a rebuilt row, and
    those the selection took for their last_access_day), and the rebuilt rows come in. Without a
    first day every row is replaced. -#}
{% macro replace_rebuilt_files(target_relation, temp_relation, day_column, columns) -%}
    {%- set first = file_reads_first_day(config.get('lookback_days')) -%}
    delete from {{ target_relation }}
    {%- if first is not none %}
    where {{ day_column }} is null
       or {{ day_column }} >= {{ date_literal(first) }}
       or exists (
           select 1 from {{ temp_relation }} as rebuilt
           where rebuilt.file_lfn = {{ target_relation }}.file_lfn)
    {%- endif %};

    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ temp_relation }}
{%- endmacro %}
