{#-
  data_completeness is incremental by day, but its window is not "the newest day it holds minus a
  lookback": its 'source' rows are dated by the clock (the day a batch was loaded), which can lie
  far after the data's days (a month loaded after the fact). A row can still change while it is
  provisional (the data loaded has not reached its final_from), so a plain run rebuilds
      every day on or after the earliest day it holds a provisional row for, and
      every day on or after the horizon's day minus the longest days-to-final (a day with no row
      yet that new data could open),
  whichever is earlier. Every other day is closed: nothing that could change it can still arrive
  (the same lateness vars as every incremental model), so it is never recomputed.
-#}

{#- Days from a row's day to the day its figures are final, per grain (SQL over u.grain). -#}
{% macro completeness_days_to_final_sql(grain_expr) -%}
    case {{ grain_expr }} when 'cluster' then {{ 1 + job_lookback_days() | int }}
        when 'server' then {{ 1 + (var('max_wall_days', 7) | int) + (job_lookback_days() | int) }} else 1 end
{%- endmacro %}

{% macro completeness_longest_days_to_final() -%}
    {{ return(1 + (var('max_wall_days', 7) | int) + (job_lookback_days() | int)) }}
{%- endmacro %}

{#- SQL: one row, newest = the newest data loaded (latest job end or file access), never later
    than now; NULL without data. -#}
{% macro completeness_horizon_sql() -%}
    select least(max(newest), {{ current_instant() }}) as newest
    from (
        select max(end_time) as newest from {{ ref('stg_job') }}
        union all
        select max(coalesce(end_time, start_time)) as newest from {{ ref('stg_file_access') }}
    ) as per_source
{%- endmacro %}

{#- The first day (datetime.date) a plain run of data_completeness rebuilds, or none (all days);
    relation: the built data_completeness (default: the model being built). -#}
{% macro completeness_first_day(relation=none) -%}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- set query -%}
        select cast(least(
            (select min(day) from {{ relation or window_model() }} where provisional),
            (select cast({{ utc('newest') }} as date) - {{ completeness_longest_days_to_final() }}
             from ({{ completeness_horizon_sql() }}) as horizon)
        ) as {{ dbt.type_string() }})
    {%- endset -%}
    {%- set result = run_query(query) -%}
    {%- set value = result.columns[0].values()[0] if result and result.rows | length > 0 else none -%}
    {%- if value is none -%}{{ return(none) }}{%- endif -%}
    {{ return(modules.datetime.date.fromisoformat(value[:10])) }}
{%- endmacro %}

{#- SQL: expr lies in [first - before days, stop + after days); first/stop are datetime.date or
    none (no bound). instant: expr is a timestamp compared with UTC midnights (DuckDB prunes row
    groups on such a constant), else a date. -#}
{% macro day_range_sql(expr, first, stop, instant=false, before=0, after=0) -%}
    {%- set bound = day_start_instant if instant else date_literal -%}
    {%- set parts = [] -%}
    {%- if first is not none -%}
        {%- do parts.append(expr ~ ' >= ' ~ bound(first - modules.datetime.timedelta(days=before | int))) -%}
    {%- endif -%}
    {%- if stop is not none -%}
        {%- do parts.append(expr ~ ' < ' ~ bound(stop + modules.datetime.timedelta(days=after | int))) -%}
    {%- endif -%}
    {{- '(' ~ (parts | join(' and ')) ~ ')' if parts else 'true' -}}
{%- endmacro %}
