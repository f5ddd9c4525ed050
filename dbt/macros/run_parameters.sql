{#-
  The parameters of one run (dbt/README.md, "Invocation contract"): backfill_start, backfill_end
  (dates, end exclusive) and test_scope ('core' or 'all'). A dbt var of that name when one is given
  (`dbt build --vars ...`, by hand), else the environment variable TIERLENS_<NAME>, which tierlens
  sets for each run.

  Why the environment: dbt keeps its parse of the project between runs, and discards all of it when
  a run's --vars differ from the saved parse's (about 12 s of parsing for this project, each chunk of
  a back-fill and each hourly run after a back-fill), or re-parses every file whose parse read an
  environment variable that changed. These parameters change what a run rebuilds and tests, never
  what the project is, so they are read only while executing: the saved parse stays valid.
  The YAML of the Python models is the one exception (their config is fixed at parse time): dbt
  re-parses those three files when the variables change.
-#}
{% macro run_parameter(name) -%}
    {%- set given = var(name, none) -%}
    {%- if given is none and execute -%}
        {%- set given = env_var('TIERLENS_' ~ (name | upper), '') or none -%}
    {%- endif -%}
    {{ return(given) }}
{%- endmacro %}
