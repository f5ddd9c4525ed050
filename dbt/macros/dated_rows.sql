{#- SQL: a select of `columns` from the rows of `relation` whose `day_column` meets `day_condition`
    (SQL on that column, e.g. in_window(...) or day_after_window(...)) and the rows without a day,
    as two selects joined by UNION ALL, each with `where` (optional) added.
    DuckDB skips row groups by a condition on one column (their zone maps) but not by an OR of it
    with `day is null`: with the OR a read of a few days scans every row group of the table, all
    of history, and filters afterwards, so its cost grows with the months kept. A condition of
    'true' (full mode) is one select of every row. -#}
{% macro dated_rows(relation, day_column, day_condition, columns='*', where=none) -%}
    {%- set extra = (' and (' ~ where ~ ')') if where else '' -%}
    {%- if day_condition | trim == 'true' -%}
    select {{ columns }} from {{ relation }}{% if where %} where {{ where }}{% endif %}
    {%- else -%}
    select {{ columns }} from {{ relation }} where {{ day_condition }}{{ extra }}
    union all
    select {{ columns }} from {{ relation }} where {{ day_column }} is null{{ extra }}
    {%- endif -%}
{%- endmacro %}
