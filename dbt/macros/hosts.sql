{#- A host name reduced for matching a client host to a batch node: lower case, domain dropped
    ('wn01.example.org' -> 'wn01'); IPv4 and IPv6 addresses are kept whole. -#}
{% macro short_host(expr) -%}
case
    when {{ expr }} is null then null
    when {{ regex_matches(expr, "'^[0-9.]+$'") }} or {{ expr }} like '%:%' then lower({{ expr }})
    else {{ dbt.split_part('lower(' ~ expr ~ ')', "'.'", 1) }}
end
{%- endmacro %}
