{#-
  Incremental models, rebuilt by UTC event day (dbt/README.md, "Invocation contract").

  A model that grows with time declares its event-day column, its lookback (days before the
  newest day of data that a late record can still change), its event time and its grain:
      {{ config(**incremental_by_day('day', lookback_days, event_time='end_time', grain=[...])) }}
  Its SQL filters its inputs with window_first_day() / in_window() so that an hourly run reads only
  the window and the context the window's rows need. The strategy 'replace_days' then deletes the
  target's rows of the window's days (and rows without a day) and inserts the new ones: a late
  record reaches the right day, and a row that a rebuilt day no longer produces disappears.

  Three modes, decided per run:
    full         `dbt build --full-refresh`, or the model's first build: every day.
    incremental  plain `dbt build`: days from (the newest day the model holds - lookback) on
                 (model_newest_day below).
    backfill     vars backfill_start / backfill_end (dates, end exclusive): exactly those days.
-#}

{#- The contract every incremental model declares (one call, its whole incremental config):
      day_column     the UTC event day the strategy replaces by (dbt's unique_key);
      lookback_days  days before the newest day it holds that a late record can still change;
      event_time     the column (an instant, or the day itself) whose UTC day is day_column;
      grain          the columns that identify a row (its uniqueness test's key).
    Options, each a rule of how its rows move or are found, never a model's name:
      row_key (a list of columns): for models whose event day moves as more of a row's inputs
          arrive (a job's last access day). A row rebuilt on a later day then also replaces its
          earlier version, which lies outside the window when a back-fill walks history chunk by
          chunk. row_moves_days (with row_key): at most how many days before the window that
          earlier version can lie. Given, the replacement reads only the target's rows from then on
          (DuckDB skips older row groups); omitted, it compares the keys of every row of history.
      rebuild_by: what a plain DuckDB run with state replaces, when it can (else the days):
          'day'          the window's days (the default; every other mode falls back to it);
          'key'          the rebuilt rows' rebuild_key (access_match_by_key), recording the jobs it
                         touches in the state table when records_job_changes;
          'job_changes'  every row of the jobs recorded in the state table (job_changes_by_key);
          'job'          the window's rows of the rebuilt jobs (job_io_by_job);
          'file'         every row of the re-added files (file_reads_first_day): a row whose day is
                         its newest input's, so on Spark a table rebuilt whole, like row_key.
      first_day_rule: 'provisional' for a window that starts at the earliest day the model holds a
          provisional row for, not at its newest day minus the lookback (completeness_window.sql).
      on_schema_change: dbt's; 'fail' unless a model adds columns to tables an older release built.
    The strategy (replace_days here, insert_overwrite on Spark: incremental_spark.sql) reads these
    from the config. -#}
{% macro incremental_by_day(day_column, lookback_days, event_time=none, grain=none, row_key=none, row_moves_days=none,
                            rebuild_by='day', rebuild_key=none, records_job_changes=false, first_day_rule=none,
                            on_schema_change='fail') -%}
    {%- if event_time is none or not grain -%}
        {{ exceptions.raise_compiler_error("incremental_by_day: model " ~ this ~ " must declare its event_time and grain") }}
    {%- endif -%}
    {%- if rebuild_by not in ('day', 'key', 'job_changes', 'job', 'file') -%}
        {{ exceptions.raise_compiler_error("incremental_by_day: model " ~ this ~ " has rebuild_by '" ~ rebuild_by
                                           ~ "', not one of day, key, job_changes, job, file") }}
    {%- endif -%}
    {%- if rebuild_by == 'key' and not rebuild_key -%}
        {{ exceptions.raise_compiler_error("incremental_by_day: model " ~ this ~ " rebuilds by key but declares no rebuild_key") }}
    {%- endif -%}
    {%- if target.type == 'spark' -%}
        {{ return(spark_incremental_by_day(day_column, lookback_days, event_time, grain,
                                           row_moved=row_key or rebuild_by == 'file')) }}
    {%- endif -%}
    {{ return({
        'materialized': 'incremental',
        'incremental_strategy': 'replace_days',
        'unique_key': day_column,
        'lookback_days': lookback_days,
        'event_time': event_time,
        'grain': grain,
        'row_key': row_key,
        'row_moves_days': row_moves_days,
        'rebuild_by': rebuild_by,
        'rebuild_key': rebuild_key,
        'records_job_changes': records_job_changes,
        'first_day_rule': first_day_rule,
        'on_schema_change': on_schema_change,
    }) }}
{%- endmacro %}


{#- Lookbacks, in days before the newest day of data. -#}
{% macro access_lookback_days() -%}{{ return(var('access_lateness_days', 1) | int) }}{%- endmacro %}
{% macro job_lookback_days() -%}{{ return(var('job_lateness_days', 2) | int) }}{%- endmacro %}
{#- A file access arrives when it closes, and stays open at most as long as its job: a model
    grouped by the access's open reaches back max_wall_days + access_lateness_days. -#}
{% macro access_open_lookback_days() -%}
    {{ return((var('max_wall_days', 7) | int) + (var('access_lateness_days', 1) | int)) }}
{%- endmacro %}
{#- A job's accesses come before its record: a record that arrives late (job_lateness_days after
    the newest day) changes the matches of accesses up to max_wall_days before its end. -#}
{% macro job_match_lookback_days() -%}
    {{ return((var('max_wall_days', 7) | int) + (var('job_lateness_days', 2) | int)) }}
{%- endmacro %}


{#- An ephemeral model is a CTE of the model reading it, but dbt compiles it as a model of its own:
    is_incremental() is false for it and `this` is itself, so the macros here would give it the
    window of a full build. An ephemeral part of an incremental model's query declares whose window
    it computes instead, by that model's name:
        {{ config(materialized='ephemeral', window_of='int_file_access_by_job') }}
    and the window macros below (incremental_mode, model_newest_day, window_first_day, hence
    in_window and the others built on them) read that model's table and config instead (window_model,
    window_config). The ephemeral parts are compiled before the owner's build writes anything (with
    the owner, or just before it as nodes of their own in its run), so both see the same rows of it. -#}

{#- The graph node of the model whose window this one computes (its config window_of), or none
    for a model computing its own. -#}
{% macro window_owner() -%}
    {%- set name = config.get('window_of') -%}
    {%- if not name or not execute -%}{{ return(none) }}{%- endif -%}
    {%- set node = graph.nodes.get('model.' ~ project_name ~ '.' ~ name) -%}
    {%- if node is none -%}
        {{ exceptions.raise_compiler_error(this.identifier ~ ": window_of '" ~ name ~ "' is not a model of this project") }}
    {%- endif -%}
    {{ return(node) }}
{%- endmacro %}

{#- The relation whose window this run rebuilds: `this`, or the window_of model's (which may not
    exist yet: adapter.get_relation gives none then). -#}
{% macro window_model() -%}
    {%- set owner = window_owner() -%}
    {%- if owner is none -%}{{ return(this) }}{%- endif -%}
    {{ return(api.Relation.create(database=owner.database, schema=owner.schema, identifier=owner.alias)) }}
{%- endmacro %}

{#- A key of the incremental config of the model whose window this run rebuilds. -#}
{% macro window_config(key) -%}
    {%- set owner = window_owner() -%}
    {%- if owner is none -%}{{ return(config.get(key)) }}{%- endif -%}
    {{ return(owner.config.get(key)) }}
{%- endmacro %}


{#- full / incremental / backfill for the model being built (or the window_of model). -#}
{% macro incremental_mode() -%}
    {%- if flags.FULL_REFRESH -%}{{ return('full') }}{%- endif -%}
    {%- if run_parameter('backfill_start') is not none -%}{{ return('backfill') }}{%- endif -%}
    {%- set owner = window_owner() -%}
    {%- if owner is none and is_incremental() -%}{{ return('incremental') }}{%- endif -%}
    {%- if owner is not none -%}
        {#- the owner's is_incremental(): an incremental model that exists as a table -#}
        {%- set held = window_model() -%}
        {%- set relation = adapter.get_relation(database=held.database, schema=held.schema, identifier=held.identifier) -%}
        {%- if relation is not none and relation.type == 'table' and owner.config.materialized == 'incremental' -%}
            {{ return('incremental') }}
        {%- endif -%}
    {%- endif -%}
    {{ return('full') }}
{%- endmacro %}


{#- The newest day the model already holds (its day column's maximum, never later than today):
    a date, or none when the model is empty. Every record loaded since the model's last build
    arrived when the newest day of data was at least this day, so it lies at most its lateness
    before it: the window from this day minus the lookback holds every day such a record can
    change, however many hours or days of loads the run catches up on. -#}
{% macro model_newest_day() -%}
    {{ return(relation_newest_day(window_model(), window_config('unique_key'))) }}
{%- endmacro %}


{#- The newest day (a date, never later than today) in a relation's day column, or none. -#}
{% macro relation_newest_day(relation, day_column) -%}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {#- least() skips NULL on both engines: an empty model must give NULL, not today -#}
    {%- set result = run_query('select cast(case when max(' ~ day_column ~ ') is not null then least(max('
                               ~ day_column ~ '), current_date) end as ' ~ dbt.type_string() ~ ') from ' ~ relation) -%}
    {%- set value = result.columns[0].values()[0] if result and result.rows | length > 0 else none -%}
    {%- if value is none -%}{{ return(none) }}{%- endif -%}
    {{ return(modules.datetime.date.fromisoformat(value[:10])) }}
{%- endmacro %}


{#- The first day (a datetime.date) this run rebuilds with the given lookback, or none for all
    days (full mode, or an incremental run with no data yet). -#}
{% macro window_first_day(lookback_days) -%}
    {%- set mode = incremental_mode() -%}
    {%- if mode == 'backfill' -%}
        {{ return(modules.datetime.date.fromisoformat(run_parameter('backfill_start') | string)) }}
    {%- elif mode == 'incremental' and window_config('first_day_rule') == 'provisional' -%}
        {{ return(completeness_first_day()) }}
    {%- elif mode == 'incremental' -%}
        {#- A lookback dbt could not find would read as 0 days: the delete and the rebuilt rows
            would then cover different days, silently. -#}
        {%- if lookback_days is none or lookback_days == '' -%}
            {{ exceptions.raise_compiler_error(this.identifier ~ ": no lookback_days in its config (incremental_by_day, or its YAML for a Python model)") }}
        {%- endif -%}
        {%- set newest = model_newest_day() -%}
        {%- if newest is none -%}{{ return(none) }}{%- endif -%}
        {{ return(newest - modules.datetime.timedelta(days=lookback_days | int)) }}
    {%- endif -%}
    {{ return(none) }}
{%- endmacro %}


{#- The day after the last day this run rebuilds: backfill_end in a backfill, else none. -#}
{% macro window_end_day() -%}
    {%- if incremental_mode() == 'backfill' and run_parameter('backfill_end') is not none -%}
        {{ return(modules.datetime.date.fromisoformat(run_parameter('backfill_end') | string)) }}
    {%- endif -%}
    {{ return(none) }}
{%- endmacro %}


{#- SQL: the day expression (a date) lies in this run's window, extended context_days before
    its first day and (a back-fill's window has an end) context_days_after past its end; 'true'
    in full mode. -#}
{% macro in_window(day_expr, lookback_days, context_days=0, context_days_after=0) -%}
    {%- set first = window_first_day(lookback_days) -%}
    {%- set stop = window_end_day() -%}
    {%- if first is none -%}true
    {%- else -%}({{ day_expr }} >= {{ date_literal(first - modules.datetime.timedelta(days=context_days | int)) }}
        {%- if stop is not none %} and {{ day_expr }} < {{ date_literal(stop + modules.datetime.timedelta(days=context_days_after | int)) }}{% endif %})
    {%- endif -%}
{%- endmacro %}


{#- SQL: an instant (timestamp) at or after the window's first day minus context_days, so a
    model reads the context its window's rows need; 'true' in full mode. Compares instants, not
    dates, so DuckDB's zone maps on the raw tables skip older row groups. -#}
{% macro instant_after_window(instant_expr, lookback_days, context_days=0) -%}
    {%- set first = window_first_day(lookback_days) -%}
    {%- if first is none -%}true
    {%- else -%}{{ instant_expr }} >= {{ day_start_instant(first - modules.datetime.timedelta(days=context_days | int)) }}
    {%- endif -%}
{%- endmacro %}


{#- SQL: the day expression (a date) lies on or after the window's first day minus context_days,
    with no upper bound even in a back-fill; 'true' in full mode. For context whose day may lie
    after the window's (a job's latest access can open after the day the job is filed under). -#}
{% macro day_after_window(day_expr, lookback_days, context_days=0) -%}
    {%- set first = window_first_day(lookback_days) -%}
    {%- if first is none -%}true
    {%- else -%}{{ day_expr }} >= {{ date_literal(first - modules.datetime.timedelta(days=context_days | int)) }}
    {%- endif -%}
{%- endmacro %}


{#- SQL: an instant before the window's end plus context_days (backfill only); 'true' otherwise. -#}
{% macro instant_before_window_end(instant_expr, context_days=0) -%}
    {%- set stop = window_end_day() -%}
    {%- if stop is none -%}true
    {%- else -%}{{ instant_expr }} < {{ day_start_instant(stop + modules.datetime.timedelta(days=context_days | int)) }}
    {%- endif -%}
{%- endmacro %}


{#- A back-fill's chunk writes only its days, but the jobs running across its end are part of them
    (node occupancy of its last hours, the node sharing of its last jobs): jobs that end after the
    chunk are not built yet (the walk goes oldest first) or lie outside its window, so they are
    read from staging, which holds every record whatever was built. A job running across the end
    ends at most max_wall_days after it. SQL: the finished jobs on a node that started before the
    window's end and end after it (stg_job: its relation, ref'd by the model), with the columns a
    run's shape needs; none outside a back-fill
    (the window has no end then, so the model's own input holds them). -#}
{% macro jobs_across_window_end(stg_job) -%}
    {%- set stop = window_end_day() -%}
    {%- if stop is none -%}{{ return(none) }}{%- endif -%}
    {%- set reach = stop + modules.datetime.timedelta(days=(var('max_wall_days', 7) | int) + 1) -%}
    {%- set sql -%}
    select
        batch_system,
        cluster,
        job_id,
        step_id,
        node,
        allocated_cores,
        wall_seconds,
        coalesce(cpu_user_seconds, 0) + coalesce(cpu_system_seconds, 0) as cpu_seconds,
        start_time,
        end_time
    from {{ stg_job }}
    where node is not null
      and start_time < {{ day_start_instant(stop) }}
      and end_time >= {{ day_start_instant(stop) }}
      and end_time < {{ day_start_instant(reach) }}
    {%- endset -%}
    {{ return(sql) }}
{%- endmacro %}


{% macro date_literal(day) -%}cast('{{ day.isoformat() }}' as date){%- endmacro %}

{% macro day_start_instant(day) -%}{{ return(adapter.dispatch('day_start_instant', 'tierlens')(day)) }}{%- endmacro %}
{#- the session time zone is UTC on both engines (profiles.yml), so midnight is UTC midnight -#}
{% macro default__day_start_instant(day) -%}cast('{{ day.isoformat() }} 00:00:00+00' as timestamptz){%- endmacro %}
{% macro spark__day_start_instant(day) -%}cast('{{ day.isoformat() }} 00:00:00' as timestamp){%- endmacro %}


{#- The incremental strategy 'replace_days', the one strategy of every incremental model on DuckDB:
    delete the window's days (and rows with no day) from the target, then insert the rebuilt rows
    of those days; or, as the model's rebuild_by declares (incremental_by_day), the rows of the
    rebuilt keys, jobs or files. One transaction (dbt's). -#}
{% macro get_incremental_replace_days_sql(arg_dict) -%}
    {%- set target_relation = arg_dict['target_relation'] -%}
    {%- set temp_relation = arg_dict['temp_relation'] -%}
    {%- set day_column = arg_dict['unique_key'] -%}
    {%- set columns = arg_dict['dest_columns'] | map(attribute='quoted') | join(', ') -%}
    {%- set window = in_window(day_column, config.get('lookback_days')) -%}
    {%- set row_key = config.get('row_key') %}
    {%- set rebuild_key = config.get('rebuild_key') %}
    {%- set rebuild_by = config.get('rebuild_by') or 'day' %}
    {%- if rebuild_by == 'file' %}
    {{ replace_rebuilt_files(target_relation, temp_relation, day_column, columns) }}
    {%- elif rebuild_by == 'job' and job_io_by_job() %}
    {{ replace_rebuilt_jobs(target_relation, temp_relation, day_column, columns) }}
    {%- elif rebuild_by == 'job_changes' and job_changes_by_key() %}
    {#- rebuilt by job (job_changes_by_key): every row of a changed job goes, whatever its day (a
        job that lost its last access has no rebuilt row), and the rebuilt rows come in -#}
    delete from {{ target_relation }}
    where exists (
        select 1 from {{ job_match_changes() }} as changed
        where {{ job_key_join('changed', target_relation) }});

    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ temp_relation }}
    {%- elif rebuild_by == 'key' and access_match_by_key() %}
    {#- rebuilt by key (access_match_by_key): the rebuilt rows replace their keys' rows, and the
        rows without a day, which every run rebuilds -#}
    {#- two statements, so that each condition on the day column is one DuckDB skips row groups
        with (the OR of the two is not: 0.67 s against 0.29 s on a year of the dev-size site) -#}
    {%- if config.get('records_job_changes') %}
    {{ job_match_changes_record(target_relation, temp_relation, day_column, rebuild_key) }}
    {%- endif %}
    delete from {{ target_relation }}
    where {{ day_column }} is null;

    delete from {{ target_relation }}
    where {{ in_window(target_relation ~ '.' ~ day_column, config.get('lookback_days')) }}
      and exists (
          select 1 from {{ temp_relation }} as rebuilt
          where {% for column in rebuild_key -%}
              rebuilt.{{ column }} = {{ target_relation }}.{{ column }}{{ ' and ' if not loop.last }}
          {%- endfor %});

    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ temp_relation }}
    {%- else %}
    {#- one statement per condition on the day column, as above: with an OR of them DuckDB reads
        the day of every row group of the table, all of history -#}
    delete from {{ target_relation }}
    where {{ day_column }} is null;

    delete from {{ target_relation }}
    where {{ window }};
    {%- if row_key %}

    {%- set moves = config.get('row_moves_days') %}
    delete from {{ target_relation }}
    where {% if moves is not none -%}
        {{ day_after_window(target_relation ~ '.' ~ day_column, config.get('lookback_days'), context_days=moves) }}
      and {% endif -%}
      exists (
        select 1 from {{ temp_relation }} as rebuilt
        where ({{ day_column }} is null or {{ in_window('rebuilt.' ~ day_column, config.get('lookback_days')) }})
        {%- for column in row_key %}
            and rebuilt.{{ column }} is not distinct from {{ target_relation }}.{{ column }}
        {%- endfor %}
    );
    {%- endif %}

    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ temp_relation }}
    where {{ day_column }} is null or {{ window }}
    {%- endif %}
    {%- if model.language == 'python' and target.type == 'duckdb' %};

    {#- dbt-duckdb writes a Python model's rebuilt rows to a real table, not a temporary one, and
        does not drop it: one table per run and model, each read by every later open of the file -#}
    drop table if exists {{ temp_relation }}
    {%- endif %}
{%- endmacro %}


{#- Working tables an earlier run left behind (a run that stopped midway, or a tierlens whose Python
    models left theirs): dbt's names for them end in __dbt_tmp and a timestamp. Each is a table every
    open of the warehouse reads the catalog entry of. DuckDB only: on Spark they are views. -#}
{% macro drop_leftover_working_tables() -%}
    {%- if execute and target.type == 'duckdb' -%}
    {%- set leftovers = run_query(
        "select schema_name, table_name from duckdb_tables() "
        "where database_name = current_database() and not temporary "
        "and regexp_matches(table_name, '__dbt_(tmp|backup)[0-9]*$')") -%}
    {%- for row in leftovers.rows %}
    drop table if exists "{{ row[0] }}"."{{ row[1] }}";
    {%- endfor -%}
    {%- endif -%}
{%- endmacro %}


{#- int_file_access_by_job rebuilds by key, not by day, when this is true: a plain incremental
    run on DuckDB of a model that already holds rows, with the job rows its last build matched
    against kept in int_job_match_state (built after it in every run). Its first build, a
    --full-refresh, a back-fill, a run on Spark, or one without that state (a warehouse built by an
    older tierlens, or a run that stopped between the two) rebuild the days of the window instead. -#}
{% macro access_match_by_key() -%}
    {%- if not execute or target.type == 'spark' or incremental_mode() != 'incremental' -%}{{ return(false) }}{%- endif -%}
    {%- if window_first_day(job_match_lookback_days()) is none -%}{{ return(false) }}{%- endif -%}
    {{ return(job_match_state() is not none) }}
{%- endmacro %}


{#- The relation int_job_match_state, or none when it has not been built. The source
    state.int_job_match_state, not a ref(): the model is built after int_file_access_by_job (it
    says what that build saw), which reads its previous contents. -#}
{% macro job_match_state() -%}
    {%- set state = source('state', 'int_job_match_state') -%}
    {{ return(adapter.get_relation(database=state.database, schema=state.schema, identifier=state.identifier)) }}
{%- endmacro %}


{% macro current_instant() -%}{{ return(adapter.dispatch('current_instant', 'tierlens')()) }}{%- endmacro %}
{% macro default__current_instant() -%}current_timestamp{%- endmacro %}
{% macro spark__current_instant() -%}current_timestamp(){%- endmacro %}


{#- The first UTC day (a datetime.date) of the last `days` days before the newest access open in
    `relation` (a file-access model with start_time), or none when it has none. A top-1 rather
    than max(): DuckDB stops after the newest row groups instead of reading the column whole. -#}
{% macro popularity_first_day(relation, days) -%}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- set result = run_query('select cast(cast(' ~ utc('start_time') ~ ' as date) as ' ~ dbt.type_string() ~ ') from '
                               ~ relation ~ ' where start_time is not null order by start_time desc limit 1') -%}
    {%- if not result or result.rows | length == 0 or result.columns[0].values()[0] is none -%}{{ return(none) }}{%- endif -%}
    {{ return(modules.datetime.date.fromisoformat(result.columns[0].values()[0][:10])
              - modules.datetime.timedelta(days=days | int)) }}
{%- endmacro %}


{#- The UTC days (first, last: datetime.date, inclusive, overlaps merged) that the windows of
    [changed_at - days, changed_at + days) of the site changes in `relation` touch, as a list of
    pairs, empty without changes: a model reads only those days of its job-grain input. -#}
{% macro change_window_day_ranges(relation, days) -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set seconds = (days | float) * 86400 -%}
    {%- set result = run_query(
        'select distinct cast(cast(' ~ utc('changed_at') ~ ' as date) as ' ~ dbt.type_string() ~ ') from '
        ~ relation ~ ' where changed_at is not null order by 1') -%}
    {%- set ranges = [] -%}
    {%- for row in result.rows -%}
        {%- set day = modules.datetime.date.fromisoformat(row[0][:10]) -%}
        {#- whole days either side cover a window of any length in days, fractional too -#}
        {%- set reach = modules.datetime.timedelta(days=((seconds / 86400) | round(0, 'ceil') | int) + 1) -%}
        {%- set first, last = day - reach, day + reach -%}
        {%- if ranges and first <= ranges[-1][1] + modules.datetime.timedelta(days=1) -%}
            {#- days come in order and every reach is the same, so the later range ends later -#}
            {%- set previous = ranges.pop() -%}
            {%- do ranges.append((previous[0], last)) -%}
        {%- else -%}
            {%- do ranges.append((first, last)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(ranges) }}
{%- endmacro %}


{#- The jobs whose matched accesses changed since int_job_remote_bytes' last build, so that a
    plain DuckDB run rebuilds those jobs only (job_changes_by_key). int_file_access_by_job writes
    them: rebuilt by key, the job keys of the rows it replaces and of the rows it inserts (a job
    that gained, lost or changed an access); rebuilt by day (first build, full refresh, back-fill,
    a run without int_job_match_state), one row with every_job true, since it then may have
    changed any job of its window. int_job_remote_bytes empties it after each build, whatever its
    mode: what it holds is what the next build must take up. The source state.int_job_match_changes,
    not a model: written by one model's run and read by a later one. -#}
{% macro job_match_changes() -%}
    {{ return(source('state', 'int_job_match_changes')) }}
{%- endmacro %}


{#- int_file_access_by_job's pre-hook: the table exists, and a rebuild by day marks every job as
    changed (also when the table is new: an older tierlens left no record of what changed). -#}
{% macro job_match_changes_before_match() -%}
    {%- if not execute or target.type == 'spark' -%}{{ return('') }}{%- endif -%}
    {%- set relation = job_match_changes() -%}
    {%- set existed = adapter.get_relation(database=relation.database, schema=relation.schema,
                                           identifier=relation.identifier) is not none -%}
    create table if not exists {{ relation }} (
        batch_system varchar, cluster varchar, job_id varchar, step_id varchar, every_job boolean
    );
    {%- if not existed or not access_match_by_key() %}
    insert into {{ relation }} values (null, null, null, null, true);
    {%- endif %}
{%- endmacro %}


{#- SQL for the by-key path of replace_days: the job keys of the rows about to be replaced (the
    rows without a day and those of the window whose key was rebuilt) and of the rebuilt rows. -#}
{% macro job_match_changes_record(target_relation, temp_relation, day_column, rebuild_key) -%}
    insert into {{ job_match_changes() }}
    select distinct {{ job_key() }}, false
    from (
        select {{ job_key() }} from {{ target_relation }}
        where {{ day_column }} is null and job_id is not null
        union all
        select {{ job_key() }} from {{ target_relation }}
        where {{ in_window(target_relation ~ '.' ~ day_column, config.get('lookback_days')) }}
          and job_id is not null
          and exists (
              select 1 from {{ temp_relation }} as rebuilt
              where {% for column in rebuild_key -%}
                  rebuilt.{{ column }} = {{ target_relation }}.{{ column }}{{ ' and ' if not loop.last }}
              {%- endfor %})
        union all
        select {{ job_key() }} from {{ temp_relation }}
        where job_id is not null
    ) as touched;
{%- endmacro %}


{#- True when int_job_remote_bytes rebuilds only the jobs in int_job_match_changes: a plain
    incremental run on DuckDB of a model that holds rows, with that table present and no rebuild
    by day of int_file_access_by_job since the last build. -#}
{% macro job_changes_by_key() -%}
    {%- if not execute or target.type == 'spark' or incremental_mode() != 'incremental' -%}{{ return(false) }}{%- endif -%}
    {%- if window_first_day(config.get('lookback_days')) is none -%}{{ return(false) }}{%- endif -%}
    {%- set relation = job_match_changes() -%}
    {%- if adapter.get_relation(database=relation.database, schema=relation.schema,
                                identifier=relation.identifier) is none -%}{{ return(false) }}{%- endif -%}
    {%- set result = run_query('select count(*) from ' ~ relation ~ ' where every_job') -%}
    {{ return(result.columns[0].values()[0] == 0) }}
{%- endmacro %}


{#- int_job_remote_bytes' post-hook: its build took up every change recorded. -#}
{% macro job_match_changes_taken_up() -%}
    {%- if not execute or target.type == 'spark' -%}{{ return('') }}{%- endif -%}
    {%- set relation = job_match_changes() -%}
    create table if not exists {{ relation }} (
        batch_system varchar, cluster varchar, job_id varchar, step_id varchar, every_job boolean
    );
    delete from {{ relation }}
{%- endmacro %}
