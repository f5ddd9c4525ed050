{#-
  A job row's key: batch_system, cluster, job_id and step_id (the natural key of records.JOB).
  Job-grain models select, group and join on it through these macros, so the key is spelled in
  one place and a join between two job-grain relations is one line:
      left join remote on {{ job_key_join('remote', 'jobs') }}
  with_step=false keys on the job alone (every step of a job together).
-#}
{% macro job_key_names(with_step=true) -%}
    {{ return(['batch_system', 'cluster', 'job_id'] + (['step_id'] if with_step else [])) }}
{%- endmacro %}

{# The key columns as a select or group-by list, optionally qualified by a relation alias. #}
{% macro job_key(alias=none, with_step=true) -%}
    {%- for name in job_key_names(with_step) -%}
        {{ alias ~ '.' if alias }}{{ name }}{{ ', ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}

{# Equality of two relations' job keys, for an ON clause. #}
{% macro job_key_join(left, right, with_step=true) -%}
    {%- for name in job_key_names(with_step) -%}
        {{ left }}.{{ name }} = {{ right }}.{{ name }}{{ ' and ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}

{#- One row per job of a job-grain relation: its whole-job row (step_id ''), else its first step
    by step_id, among the rows meeting the condition `where` (SQL, optional). For figures per job
    rather than per step, where an access or a job must not be counted twice. A subquery ranked
    with row_number, not QUALIFY (Spark SQL has none). -#}
{% macro one_row_per_job(relation, where=none) -%}
    (
        select *
        from (
            select
                source_rows.*,
                row_number() over (
                    partition by {{ job_key(with_step=false) }}
                    order by case when step_id = '' then 0 else 1 end, step_id
                ) as job_row_rank
            from {{ relation }} as source_rows
            {%- if where %}
            where {{ where }}
            {%- endif %}
        ) as ranked
        where job_row_rank = 1
    )
{%- endmacro %}


{#- SQL: job run `b` overlapped job run `a` on the same cluster and node (each with cluster, node,
    start_time, end_time): the jobs whose runs share a node's time. -#}
{% macro ran_beside(a, b) -%}
    {{ a }}.cluster = {{ b }}.cluster
        and {{ a }}.node = {{ b }}.node
        and {{ b }}.start_time < {{ a }}.end_time
        and {{ b }}.end_time > {{ a }}.start_time
{%- endmacro %}
