{#-
  job_io_profile rebuilt by job (dbt/README.md, "job_io_profile by job"): a plain run on DuckDB
  rebuilds only the jobs of its window whose row can change, found by comparing the rows it would
  write (node sharing aside) with the rows it holds, and replace_days replaces those jobs' rows.
-#}

{#- True when job_io_profile rebuilds by job: a plain incremental run on DuckDB of a model that
    holds rows. It needs no record of what changed (the rows held are that record), so a failed
    run, or a rebuild by day of a model before it, leaves nothing to take up. Its first build, a
    --full-refresh, a back-fill and Spark rebuild the window's days. -#}
{% macro job_io_by_job() -%}
    {%- if not execute or target.type == 'spark' or incremental_mode() != 'incremental' -%}{{ return(false) }}{%- endif -%}
    {{ return(window_first_day(config.get('lookback_days')) is not none) }}
{%- endmacro %}


{#- replace_days by job: the window's rows of the rebuilt jobs go and their rebuilt rows come in,
    except a gone job's, which is its key alone with no day (the model's last union). -#}
{% macro replace_rebuilt_jobs(target_relation, temp_relation, day_column, columns) -%}
    delete from {{ target_relation }}
    where {{ in_window(target_relation ~ '.' ~ day_column, config.get('lookback_days')) }}
      and exists (
          select 1 from {{ temp_relation }} as rebuilt
          where {{ job_key_join('rebuilt', target_relation) }});

    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ temp_relation }}
    where {{ day_column }} is not null
{%- endmacro %}
