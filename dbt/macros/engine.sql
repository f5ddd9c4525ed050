{#-
  Where DuckDB and Spark SQL differ, the models call these macros; each dispatches on the
  adapter (adapter.dispatch looks for <engine>__<name>, then default__<name>). default__ is the
  DuckDB form, spark__ the Spark SQL 3.5 form. Anything both engines accept stays plain SQL in
  the models, and dbt's own cross-database macros (dbt.type_string, dbt.split_part, ...) are used
  where they exist. Spark runs with spark.sql.session.timeZone=UTC (profiles.yml), so a Spark
  TIMESTAMP and a DuckDB TIMESTAMPTZ name the same instant.
-#}

{# The column type of a point in time: DuckDB TIMESTAMPTZ, Spark TIMESTAMP (an instant too). #}
{% macro type_instant() -%}{{ return(adapter.dispatch('type_instant', 'tierlens')()) }}{%- endmacro %}
{% macro default__type_instant() -%}timestamptz{%- endmacro %}
{% macro spark__type_instant() -%}timestamp{%- endmacro %}

{# A list of strings. #}
{% macro type_string_array() -%}{{ return(adapter.dispatch('type_string_array', 'tierlens')()) }}{%- endmacro %}
{% macro default__type_string_array() -%}varchar[]{%- endmacro %}
{% macro spark__type_string_array() -%}array<string>{%- endmacro %}

{# The first element of a list, NULL for an empty or NULL list (DuckDB lists count from 1). #}
{% macro first_element(expr) -%}{{ return(adapter.dispatch('first_element', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__first_element(expr) -%}({{ expr }})[1]{%- endmacro %}
{% macro spark__first_element(expr) -%}element_at({{ expr }}, 1){%- endmacro %}

{# The UTC wall-clock time of an instant, as a value date/hour truncation works on in UTC. #}
{% macro utc(expr) -%}{{ return(adapter.dispatch('utc', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__utc(expr) -%}timezone('UTC', {{ expr }}){%- endmacro %}
{# The session time zone is UTC: a Spark timestamp already truncates in UTC. #}
{% macro spark__utc(expr) -%}{{ expr }}{%- endmacro %}

{# The inverse of utc(): a UTC wall-clock time back to an instant (the marts' column type). #}
{% macro from_utc(expr) -%}{{ return(adapter.dispatch('from_utc', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__from_utc(expr) -%}({{ expr }} at time zone 'UTC'){%- endmacro %}
{% macro spark__from_utc(expr) -%}{{ expr }}{%- endmacro %}

{# Microseconds since 1970-01-01 UTC of an instant, as BIGINT. #}
{% macro epoch_micros(expr) -%}{{ return(adapter.dispatch('epoch_micros', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__epoch_micros(expr) -%}epoch_us({{ expr }}){%- endmacro %}
{% macro spark__epoch_micros(expr) -%}unix_micros({{ expr }}){%- endmacro %}

{# Seconds between two instants, as DOUBLE (microsecond precision: integers subtracted first). #}
{% macro seconds_between(start_expr, end_expr) -%}
    (({{ epoch_micros(end_expr) }} - {{ epoch_micros(start_expr) }}) / 1e6)
{%- endmacro %}

{# One row per UTC hour start in [first_hour, stop): use as a select-list item. #}
{% macro explode_hours(first_hour, stop) -%}{{ return(adapter.dispatch('explode_hours', 'tierlens')(first_hour, stop)) }}{%- endmacro %}
{% macro default__explode_hours(first_hour, stop) -%}
    unnest(range({{ first_hour }}, {{ stop }}, interval 1 hour))
{%- endmacro %}
{# sequence() includes its end; the filter makes the stop exclusive like DuckDB's range(). #}
{% macro spark__explode_hours(first_hour, stop) -%}
    explode(filter(sequence({{ first_hour }}, {{ stop }}, interval 1 hour), h -> h < {{ stop }}))
{%- endmacro %}

{# One row per element of a list: use as a select-list item. #}
{% macro explode_list(expr) -%}{{ return(adapter.dispatch('explode_list', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__explode_list(expr) -%}unnest({{ expr }}){%- endmacro %}
{% macro spark__explode_list(expr) -%}explode({{ expr }}){%- endmacro %}

{# The parts of a string split on a separator, with one more value appended. #}
{% macro split_and_append(expr, separator, extra) -%}{{ return(adapter.dispatch('split_and_append', 'tierlens')(expr, separator, extra)) }}{%- endmacro %}
{% macro default__split_and_append(expr, separator, extra) -%}
    list_concat(string_split({{ expr }}, {{ separator }}), [{{ extra }}])
{%- endmacro %}
{# Spark's split() takes a regular expression: the separator is quoted into one. #}
{% macro spark__split_and_append(expr, separator, extra) -%}
    concat(split({{ expr }}, concat('\\Q', {{ separator }}, '\\E')), array({{ extra }}))
{%- endmacro %}

{# True when a string matches a regular expression anywhere (RE2 in DuckDB, Java in Spark). #}
{% macro regex_matches(expr, pattern) -%}{{ return(adapter.dispatch('regex_matches', 'tierlens')(expr, pattern)) }}{%- endmacro %}
{% macro default__regex_matches(expr, pattern) -%}regexp_matches({{ expr }}, {{ pattern }}){%- endmacro %}
{% macro spark__regex_matches(expr, pattern) -%}({{ expr }} rlike {{ pattern }}){%- endmacro %}

{# The start of the fixed-width window (whole minutes, aligned to 1970-01-01 UTC) holding a
   UTC wall-clock time. DuckDB's time_bucket aligns to 2000-01-03, the same boundaries for any
   width that divides a day. #}
{% macro minute_bucket(minutes, expr) -%}{{ return(adapter.dispatch('minute_bucket', 'tierlens')(minutes, expr)) }}{%- endmacro %}
{% macro default__minute_bucket(minutes, expr) -%}
    time_bucket(interval ({{ minutes }}) minute, {{ expr }})
{%- endmacro %}
{% macro spark__minute_bucket(minutes, expr) -%}
    timestamp_seconds(floor(unix_seconds({{ expr }}) / ({{ minutes }} * 60)) * ({{ minutes }} * 60))
{%- endmacro %}

{# The continuous (linearly interpolated) quantile of a column; exact in both engines. #}
{% macro quantile_cont(expr, fraction) -%}{{ return(adapter.dispatch('quantile_cont', 'tierlens')(expr, fraction)) }}{%- endmacro %}
{% macro default__quantile_cont(expr, fraction) -%}quantile_cont({{ expr }}, {{ fraction }}){%- endmacro %}
{% macro spark__quantile_cont(expr, fraction) -%}percentile({{ expr }}, {{ fraction }}){%- endmacro %}

{# Distinct (a, b) pairs; both columns are never NULL where it is used. #}
{% macro count_distinct_pair(a, b) -%}{{ return(adapter.dispatch('count_distinct_pair', 'tierlens')(a, b)) }}{%- endmacro %}
{% macro default__count_distinct_pair(a, b) -%}count(distinct [{{ a }}, {{ b }}]){%- endmacro %}
{% macro spark__count_distinct_pair(a, b) -%}count(distinct {{ a }}, {{ b }}){%- endmacro %}

{# Any one value of a column in a group (all values are equal where it is used). #}
{% macro any_value(expr) -%}{{ return(adapter.dispatch('any_value', 'tierlens')(expr)) }}{%- endmacro %}
{% macro default__any_value(expr) -%}any_value({{ expr }}){%- endmacro %}
{% macro spark__any_value(expr) -%}first({{ expr }}){%- endmacro %}
