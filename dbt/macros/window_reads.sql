{#- SQL (DuckDB): the keys (server_host, unique_id) of `relation` as one list, unnested, for the
    build side of a semi join picking the window's rows of those keys. DuckDB cannot estimate
    how many keys a union of joins gives (it guessed 78 M for 28,000), so with the keys as they
    are it built its hash table on the window's 2.7 M rows, every column of them, instead of on
    the keys; a list is one row to its estimate. -#}
{% macro access_keys_as_list(relation) -%}
    select unnest(list(struct_pack(server_host := server_host, unique_id := unique_id)), recursive := true)
    from {{ relation }}
{%- endmacro %}
