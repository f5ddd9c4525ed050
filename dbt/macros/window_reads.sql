{#- SQL: a select of `columns` from the rows of `relation` in this run's window (in_window) and
    those without a day, as two selects joined by UNION ALL, each with `where` (optional) added.
    DuckDB skips row groups by a condition on one column (zone maps), but not by `day >= X or day
    is null`: with the OR it reads every row group of the table, all of history, and filters them
    afterwards (at 20 days of a 10,000-core site, int_file_access_by_job read its 6 M rows, every
    column, for the 340,000 of its last two days). In full mode, every row. -#}
{% macro window_and_undated(relation, day_column, lookback_days, columns='*', where=none) -%}
    {%- set extra = (' and (' ~ where ~ ')') if where else '' -%}
    {%- if window_first_day(lookback_days) is none -%}
    select {{ columns }} from {{ relation }}{% if where %} where {{ where }}{% endif %}
    {%- else -%}
    select {{ columns }} from {{ relation }} where {{ in_window(day_column, lookback_days) }}{{ extra }}
    union all
    select {{ columns }} from {{ relation }} where {{ day_column }} is null{{ extra }}
    {%- endif -%}
{%- endmacro %}


{#- SQL (DuckDB): the keys (server_host, unique_id) of `relation` as one list, unnested, for the
    build side of a semi join picking the window's rows of those keys. DuckDB cannot estimate
    how many keys a union of joins gives (it guessed 78 M for 28,000), so with the keys as they
    are it built its hash table on the window's 2.7 M rows, every column of them, instead of on
    the keys; a list is one row to its estimate. -#}
{% macro access_keys_as_list(relation) -%}
    select unnest(list(struct_pack(server_host := server_host, unique_id := unique_id)), recursive := true)
    from {{ relation }}
{%- endmacro %}
