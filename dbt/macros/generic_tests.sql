{#
  Generic tests written here so the project needs no packages (no `dbt deps`, no internet).
  Semantics follow dbt_utils' tests of the same names.
#}

{# Rows where column_name lies outside [min_value, max_value] (bounds optional; NULLs pass). #}
{% test accepted_range(model, column_name, min_value=none, max_value=none, inclusive=true) %}
select *
from {{ model }}
where {{ column_name }} is not null
  and not (
    {%- if min_value is not none %}
      {{ column_name }} {{ '>=' if inclusive else '>' }} {{ min_value }}
    {%- else %}
      true
    {%- endif %}
    and
    {%- if max_value is not none %}
      {{ column_name }} {{ '<=' if inclusive else '<' }} {{ max_value }}
    {%- else %}
      true
    {%- endif %}
  )
{% endtest %}

{# Groups of rows sharing the same values of all combination_of_columns (NULLs compare equal). #}
{% test unique_combination_of_columns(model, combination_of_columns) %}
select {{ combination_of_columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ combination_of_columns | join(', ') }}
having count(*) > 1
{% endtest %}

{# The distinct keys (combination_of_columns) of the model's rows that have no row with the same
   key in `to` (rows with a NULL in the key are not checked). The keys of `to` are read only where
   they match one of the model's (an inner join with the model's keys): with a `where` on the model,
   its cost follows those rows, not every row of `to`, as dbt's relationships test on one
   concatenated column would. #}
{% test key_exists_in(model, combination_of_columns, to) %}
{%- set match, child_keys = [], [] -%}
{%- for column in combination_of_columns -%}
    {%- do match.append('parent.' ~ column ~ ' = child.' ~ column) -%}
    {%- do child_keys.append('child.' ~ column) -%}
{%- endfor %}
with child as (
    select distinct {{ combination_of_columns | join(', ') }}
    from {{ model }}
    where {{ combination_of_columns | join(' is not null and ') }} is not null
),

found as (
    select distinct {{ child_keys | join(', ') }}
    from {{ to }} as parent
    inner join child on {{ match | join(' and ') }}
)

select {{ child_keys | join(', ') }}
from child
left join found as parent on {{ match | join(' and ') }}
where parent.{{ combination_of_columns[0] }} is null
{% endtest %}

{# Rows for which the SQL boolean expression is not true. #}
{% test expression_is_true(model, expression) %}
select *
from {{ model }}
where not coalesce(({{ expression }}), false)
{% endtest %}

{#-
  A test's `where:` config (dbt's get_where_subquery, overridden here). Besides plain SQL it takes
      where: "rebuilt_days(day, 10)"
  for a test on a large incremental table that an hourly run need not re-check over all of
  history: a plain run tests only the rows whose day column (a DATE, or a timestamp read as its
  UTC day) lies on or after the relation's newest day minus that many days, and rows without a
  day; a back-fill tests its days; a --full-refresh (or a table not built yet) tests every row.
  The days are chosen to cover what a plain run rebuilds after a gap of up to a day (the model's
  lookback + 1); a duplicate is caught when both its rows lie in them. Decided when the test
  runs, not when the project is parsed, so it follows --full-refresh.
-#}
{% macro default__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- set recent = modules.re.match('^ *rebuilt_days[(] *([a-z_]+) *, *([0-9]+) *[)] *$', where or '') -%}
    {%- if recent -%}
        {%- set where = rebuilt_days_filter(relation, recent.group(1), recent.group(2) | int) -%}
    {%- endif -%}
    {%- if where -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') }}
    {%- endif -%}
    {#- without a where of its own: in a core-scope run, what the run rebuilt (macros/test_scope.sql) -#}
    {%- set rebuilt = core_scope_where_subquery(relation, model) -%}
    {%- if rebuilt -%}{{ return(rebuilt) }}{%- endif -%}
    {{ return(relation) }}
{%- endmacro %}


{#- SQL condition for rebuilt_days(column, days) above; '' to test every row. -#}
{% macro rebuilt_days_filter(relation, column, days) -%}
    {%- if not execute or flags.FULL_REFRESH -%}{{ return('') }}{%- endif -%}
    {%- set types = adapter.get_columns_in_relation(relation) | selectattr('name', 'equalto', column)
                    | map(attribute='dtype') | list -%}
    {%- set is_date = types and (types[0] | lower) == 'date' -%}
    {%- set bound = date_literal if is_date else day_start_instant -%}
    {%- if run_parameter('backfill_start') is not none -%}
        {%- set start = modules.datetime.date.fromisoformat(run_parameter('backfill_start') | string) -%}
        {%- set stop = modules.datetime.date.fromisoformat((run_parameter('backfill_end') or run_parameter('backfill_start')) | string) -%}
        {{ return(column ~ ' is null or (' ~ column ~ ' >= ' ~ bound(start) ~ ' and ' ~ column ~ ' < '
                  ~ bound(stop) ~ ')') }}
    {%- endif -%}
    {#- the newest day from the column's max, converted once: converting every row first made this
        query read all history for each test (seconds per test on a year of file accesses) -#}
    {%- set newest_day = 'max(' ~ column ~ ')' if is_date else 'cast(' ~ utc('max(' ~ column ~ ')') ~ ' as date)' -%}
    {%- set result = run_query('select cast(' ~ newest_day ~ ' as ' ~ dbt.type_string() ~ ') from ' ~ relation) -%}
    {%- set newest = result.columns[0].values()[0] if result and result.rows | length > 0 else none -%}
    {%- if newest is none -%}{{ return('') }}{%- endif -%}
    {%- set first = modules.datetime.date.fromisoformat(newest[:10]) - modules.datetime.timedelta(days=days) -%}
    {{ return(column ~ ' is null or ' ~ column ~ ' >= ' ~ bound(first)) }}
{%- endmacro %}
