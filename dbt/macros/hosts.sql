{#- A host name reduced for matching a client host to a batch node: lower case, domain dropped
    ('wn01.example.org' -> 'wn01'); IPv4 and IPv6 addresses are kept whole. -#}
{% macro short_host(expr) -%}
case
    when {{ expr }} is null then null
    when regexp_matches({{ expr }}, '^[0-9.]+$') or contains({{ expr }}, ':') then lower({{ expr }})
    else split_part(lower({{ expr }}), '.', 1)
end
{%- endmacro %}
