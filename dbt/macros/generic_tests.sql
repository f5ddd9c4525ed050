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

{# Rows for which the SQL boolean expression is not true. #}
{% test expression_is_true(model, expression) %}
select *
from {{ model }}
where not coalesce(({{ expression }}), false)
{% endtest %}
