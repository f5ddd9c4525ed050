{#-
  Core-scope tests check what the run rebuilt (dbt/README.md, "Which tests run when").

  The hourly transform leaves the column checks out and passes run parameter test_scope=core. In such a
  `dbt build` on DuckDB, each incremental model notes, just before it is rebuilt, the first day of
  its window (the same window_first_day its build then uses) and the dbt invocation, as a comment
  on its table (remember_rebuilt_window, a pre-hook of every model in dbt_project.yml). Its tests
  then read the note (rebuilt_window_first_day) and check (core_scope_where_subquery):

    - a uniqueness test whose key holds the model's day or event-time column, and a test of one
      row at a time (expression_is_true): only the rows of the window and those without a day. Two
      rows of such a key lie on one day, and a run writes no row outside its window;
    - a uniqueness test of any other key (a job, an access, a file): every row whose key has a row
      in the window, against its partners from a job's run and its lateness before the window on
      (partner_days_before_window). A job whose end moved into the window from an older day, an
      access whose open moved, a rebuild by key (row_key / rebuild_key) that missed an older
      version: its rows sit on two days, one of them outside the window, but no further back than
      the record can arrive late. A partner older than that (a job id the batch system reused
      years later) is the daily all-tests run's to find: reading every row of history for it
      each hour made the hourly tests grow with the years kept;
    - anything else, and any model without a note from this invocation (its first build, a table
      rebuilt whole every run, a view, a run on Spark): the whole table.

  Every other run (test_scope unset: the daily all-tests run, back-fills, full refreshes,
  `--all-tests`, a plain `dbt build`) tests whole tables as before.
-#}

{% macro test_scope_is_core() -%}
    {{ return(execute and target.type == 'duckdb' and ((run_parameter('test_scope') or 'all') | string) == 'core') }}
{%- endmacro %}


{#- The note on the model's table: '' unless this is a core-scope run on DuckDB rebuilding an
    incremental model by its day window (not its first build, not a full refresh). -#}
{% macro remember_rebuilt_window() -%}
    {#- not the Python models: dbt-duckdb writes their result on another cursor, which a hook's
        open transaction would not see; their tables (one row per change or comparison) are small -#}
    {#- nor a model rebuilt by file: a file's row lies on its newest day, wherever the rebuilt file's
        older row lay, so its tests read the whole (small) table -#}
    {%- if not test_scope_is_core() or model.get('language') == 'python' or config.get('materialized') != 'incremental'
           or config.get('incremental_strategy') != 'replace_days' or config.get('lookback_days') is none
           or config.get('rebuild_by') == 'file' -%}
        {{ return('') }}
    {%- endif -%}
    {%- if incremental_mode() != 'incremental' -%}{{ return('') }}{%- endif -%}
    {%- set first = window_first_day(config.get('lookback_days')) -%}
    {%- if first is none -%}{{ return('') }}{%- endif -%}
    {%- set note = tojson({'rebuilt_from': first.isoformat(), 'invocation_id': invocation_id}) -%}
    comment on table {{ this }} is '{{ note }}'
{%- endmacro %}


{#- The first day (a datetime.date) this invocation rebuilt of the table, or none when it did not
    note one (then every row may have changed). -#}
{% macro rebuilt_window_first_day(relation) -%}
    {%- if not test_scope_is_core() -%}{{ return(none) }}{%- endif -%}
    {%- set result = run_query(
        "select comment from duckdb_tables() where database_name = '" ~ relation.database
        ~ "' and schema_name = '" ~ relation.schema ~ "' and table_name = '" ~ relation.identifier ~ "'") -%}
    {%- if not result or result.rows | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set comment = result.columns[0].values()[0] -%}
    {%- if not comment or not (comment | string).startswith('{') -%}{{ return(none) }}{%- endif -%}
    {%- set note = fromjson(comment) -%}
    {%- if note is none or note.get('invocation_id') != invocation_id or not note.get('rebuilt_from') -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(modules.datetime.date.fromisoformat(note['rebuilt_from'])) }}
{%- endmacro %}


{#- The graph node of the model built into this relation, or none. -#}
{% macro model_node_of(relation) -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
            and (node.alias or node.name) == relation.identifier and node.schema == relation.schema -%}
        {{ return(node) }}
    {%- endfor -%}
    {{ return(none) }}
{%- endmacro %}


{#- The relation a core-scope test of `relation` reads (see the top), or none for the whole table.
    `test` is the test node (dbt's `model` in a test's context). -#}
{% macro core_scope_where_subquery(relation, test) -%}
    {%- if not test_scope_is_core() -%}{{ return(none) }}{%- endif -%}
    {%- set metadata = (test or {}).get('test_metadata') or {} -%}
    {%- set name = metadata.get('name') -%}
    {%- set kwargs = metadata.get('kwargs') or {} -%}
    {%- set unique_tests = ['unique', 'unique_combination_of_columns'] -%}
    {#- tests of one row at a time: a failing row lies where the run wrote it -#}
    {%- set row_tests = ['expression_is_true', 'not_null', 'accepted_range', 'accepted_values'] -%}
    {%- if name not in unique_tests and name not in row_tests -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set node = model_node_of(relation) -%}
    {%- if node is none -%}{{ return(none) }}{%- endif -%}
    {#- a model rebuilt by day (replace_days): its unique_key is its day column -#}
    {%- if node.config.get('incremental_strategy') != 'replace_days' -%}{{ return(none) }}{%- endif -%}
    {%- set day = node.config.get('unique_key') -%}
    {%- if not day or day is not string -%}{{ return(none) }}{%- endif -%}
    {%- set first = rebuilt_window_first_day(relation) -%}
    {%- if first is none -%}{{ return(none) }}{%- endif -%}
    {%- set parts = [] -%}
    {%- for condition in rebuilt_conditions(first, day) -%}
        {%- do parts.append('select * from ' ~ relation ~ ' where ' ~ condition) -%}
    {%- endfor -%}
    {%- set rebuilt_rows = '(' ~ parts | join(' union all ') ~ ')' -%}
    {%- if name in unique_tests -%}
        {%- set key = [kwargs.get('column_name')] if name == 'unique' else kwargs.get('combination_of_columns') -%}
        {%- if not key -%}{{ return(none) }}{%- endif -%}
        {%- set dated = [day, node.config.get('event_time')] | select | list -%}
        {%- if dated | select('in', key) | list | length == 0 -%}
            {#- the window's keys, counted over the whole table (NULLs match, as the test groups them) -#}
            {%- set match = [] -%}
            {%- for column in key -%}
                {%- do match.append('rebuilt.' ~ column ~ ' is not distinct from tested.' ~ column) -%}
            {%- endfor -%}
            {#- a semi join with the window's distinct keys: on a year of jobs 5x faster than the
                whole table's count, where EXISTS or IN (a row of keys) was slower or little faster -#}
            {%- set since = first - modules.datetime.timedelta(days=partner_days_before_window()) -%}
            {%- set near = [] -%}
            {%- for condition in rebuilt_conditions(since, day) -%}
                {%- do near.append('select * from ' ~ relation ~ ' where ' ~ condition) -%}
            {%- endfor -%}
            {{ return('(select tested.* from (' ~ near | join(' union all ') ~ ') as tested semi join (select distinct '
                      ~ key | join(', ') ~ ' from ' ~ rebuilt_rows ~ ') as rebuilt on ' ~ match | join(' and ')
                      ~ ') dbt_subquery') }}
        {%- endif -%}
    {%- endif -%}
    {{ return(rebuilt_rows ~ ' dbt_subquery') }}
{%- endmacro %}


{#- Days before a window's first day that a core-scope uniqueness test still reads for partners of
    the window's keys: the lookback of the job models (a job's run plus its record's lateness)
    and one UTC day for a run that crosses midnight. -#}
{% macro partner_days_before_window() -%}
    {{ return((job_match_lookback_days() | int) + 1) }}
{%- endmacro %}


{#- For singular tests: the first day (a datetime.date) this core-scope run rebuilt of the named
    models, the earliest of them; none (test everything) when one of them has no note. -#}
{% macro rebuilt_from() -%}
    {%- set days = [] -%}
    {%- for name in varargs -%}
        {%- set first = rebuilt_window_first_day(ref(name)) -%}
        {%- if first is none -%}{{ return(none) }}{%- endif -%}
        {%- do days.append(first) -%}
    {%- endfor -%}
    {{ return(days | min if days else none) }}
{%- endmacro %}


{#- The conditions [column >= first day, column is null] on a day column (a DATE, or an instant
    compared with the day's UTC midnight). Two, not their OR: DuckDB skips older row groups for
    each alone, for the OR it reads the column whole. -#}
{% macro rebuilt_conditions(first, column, is_date=true) -%}
    {%- set bound = date_literal(first) if is_date else day_start_instant(first) -%}
    {{ return([column ~ ' >= ' ~ bound, column ~ ' is null']) }}
{%- endmacro %}
