{#- The tierlens job identity inside a client's XRD_MONINFO value, or NULL.
    The Slurm plugin appends its identity to a value the user already set ('mine,slurm.c.42');
    the HTCondor transform leaves a user's own value alone. So the identity is the last
    comma-separated token, and only when it has the '<batch_system>.' form the plugins write. -#}
{% macro tierlens_identity(expr) -%}
    nullif(regexp_extract(trim({{ expr }}), '(?:^|,)\s*((?:slurm|htcondor|synthetic)\.[^,]+)$', 1), '')
{%- endmacro %}
