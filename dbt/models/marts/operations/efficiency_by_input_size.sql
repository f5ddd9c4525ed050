-- IFCA's table: CPU efficiency against the input volume of a job (bytes read per job, in bins),
-- per storage type, A/B arm and job class; over the whole period ('all') and in the window
-- before and after each recorded change (the windows of marts.change_effects: jobs ending in
-- [t - var change_window_days, t) before, jobs starting at or after t and ending before
-- t + window after). Window rows hold every job of the change's cluster(s); in_change_scope
-- says whether it ran where the change applied.
-- The 'all' rows add up the per-day partial sums of int_input_size_day_partials (days x groups
-- rows); the window rows still read the jobs of the changes' windows from job_efficiency, as a
-- window's edges are instants (changed_at), not days. They read only the UTC end days the
-- windows touch: the days are listed first (one small query on the site changes) and given to
-- job_efficiency as constant day ranges, which DuckDB prunes row groups on, so the window rows
-- cost the jobs of the changes' windows, not of all history.
{%- set window_days = var('change_window_days', 7) %}
{%- set ranges = change_window_day_ranges(ref('stg_site_change'), window_days) %}
with all_days as (
    select
        'all'                                                 as period,
        cast(null as varchar)                                 as change_id,
        'all'                                                 as change_window,
        cast(null as boolean)                                 as in_change_scope,
        storage_type,
        ab_arm,
        job_class,
        bytes_read_bin,
        {{ bytes_read_bin_order('bytes_read_bin') }}          as bytes_read_bin_order,
        cast(sum(jobs) as bigint)                             as jobs,
        sum(cpu_seconds) / 3600.0                             as cpu_hours,
        sum(core_wall_seconds) / 3600.0                       as core_wall_hours,
        sum(cpu_seconds) / sum(core_wall_seconds)             as efficiency,
        sum(efficiency_sum) / sum(jobs)                       as mean_job_efficiency,
        sum(input_bytes) / 1e9 / nullif(sum(jobs_with_input_bytes), 0) as mean_gb_read
    from {{ ref('int_input_size_day_partials') }}
    group by storage_type, ab_arm, job_class, bytes_read_bin
),

jobs as (
    select
        *,
        coalesce(bytes_read, bytes_read_remote) as input_bytes,
        {{ bytes_read_bin('coalesce(bytes_read, bytes_read_remote)') }} as bytes_read_bin
    from {{ ref('job_efficiency') }}
    where core_wall_seconds > 0
      and (
        {%- for first, last in ranges %}
        {% if not loop.first %}or {% endif %}day between {{ date_literal(first) }} and {{ date_literal(last) }}
        {%- else %}
        false
        {%- endfor %}
      )
),

changes as (
    select
        *,
        changed_at - to_microseconds(cast({{ var('change_window_days', 7) }} * 86400e6 as bigint)) as window_start,
        changed_at + to_microseconds(cast({{ var('change_window_days', 7) }} * 86400e6 as bigint)) as window_end
    from {{ ref('stg_site_change') }}
),

in_windows as (
    select
        case when jobs.end_time < changes.changed_at then 'before ' else 'after ' end || changes.change_id as period,
        changes.change_id,
        case when jobs.end_time < changes.changed_at then 'before' else 'after' end as change_window,
        case
            when changes.scope_nodes is not null then list_contains(changes.scope_nodes, jobs.node)
            when changes.scope_storage_type is not null then jobs.storage_type = changes.scope_storage_type
            when changes.scope_ab_arm is not null then jobs.ab_arm = changes.scope_ab_arm
            else true
        end as in_change_scope,
        jobs.*
    from jobs
    inner join changes
        on  (changes.cluster is null or changes.cluster = jobs.cluster)
        and (
            (jobs.end_time >= changes.window_start and jobs.end_time < changes.changed_at)
            or (jobs.start_time >= changes.changed_at and jobs.end_time < changes.window_end)
        )
),

windows as (
    select
        period,
        change_id,
        change_window,
        in_change_scope,
        storage_type,
        ab_arm,
        job_class,
        bytes_read_bin,
        {{ bytes_read_bin_order('bytes_read_bin') }}          as bytes_read_bin_order,
        count(*)                                              as jobs,
        sum(cpu_seconds) / 3600.0                             as cpu_hours,
        sum(core_wall_seconds) / 3600.0                       as core_wall_hours,
        sum(cpu_seconds) / sum(core_wall_seconds)             as efficiency,
        avg(efficiency)                                       as mean_job_efficiency,
        sum(input_bytes) / 1e9 / nullif(count(input_bytes), 0) as mean_gb_read
    from in_windows
    group by period, change_id, change_window, in_change_scope, storage_type, ab_arm, job_class, bytes_read_bin
)

select * from all_days
union all
select * from windows
