{#- The tierlens job identity inside a client's XRD_MONINFO value, or NULL.
    The Slurm plugin appends its identity to a value the user already set ('mine,slurm.c.42');
    the HTCondor transform leaves a user's own value alone. So the identity is the last
    comma-separated token, and only when it has the '<batch_system>.' form the plugins write.
    The pattern has no backslash escapes (Spark and DuckDB read them differently in a literal):
    blanks are spelled out as a class, where \t \n \r reach both regex engines as the characters. -#}
{% macro tierlens_identity(expr) -%}
    nullif(regexp_extract(trim({{ expr }}), '(?:^|,)[ \t\n\r]*((?:slurm|htcondor|synthetic)[.][^,]+)$', 1), '')
{%- endmacro %}
