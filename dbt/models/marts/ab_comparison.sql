-- A/B trial: arm A vs arm B per UTC day, per ISO week and over all the data ('all'), the way
-- the SLAC study compared its two node groups (CPU hours, wall hours, CPU/wall), plus the
-- core-weighted efficiency. Arms are dbt vars arm_a (default 'A') and arm_b (default 'B').
-- A period appears when either arm has jobs ending in it; an arm without jobs there has
-- jobs 0, hours 0 and NULL ratios. Built from the per-day partial sums of
-- int_efficiency_day_partials (a week or the whole data is the sum of its days), so it reads
-- days x arms rows, not every job.
{%- set arm_a = sql_literal(var('arm_a', 'A')) %}
{%- set arm_b = sql_literal(var('arm_b', 'B')) %}

with days as (
    -- the day partials of the two arms' jobs (a row of launch failures alone has no job that ran)
    select day, week, ab_arm, jobs, cpu_seconds, wall_seconds, core_wall_seconds
    from {{ ref('int_efficiency_day_partials') }}
    where ab_arm in ({{ arm_a }}, {{ arm_b }}) and jobs > 0
),

by_period as (
    select 'day' as period_grain, day as period_start, day + 1 as period_end, ab_arm,
           jobs, cpu_seconds, wall_seconds, core_wall_seconds
    from days
    union all
    select 'week', week, week + 7, ab_arm, jobs, cpu_seconds, wall_seconds, core_wall_seconds
    from days
    union all
    select 'all', min(day) over (), max(day) over () + 1, ab_arm,
           jobs, cpu_seconds, wall_seconds, core_wall_seconds
    from days
),

aggregated as (
    select
        period_grain,
        cast(period_start as date) as period_start,
        cast(period_end as date)   as period_end,
{%- for suffix, arm in [('a', arm_a), ('b', arm_b)] %}
        coalesce(cast(sum(jobs) filter (where ab_arm = {{ arm }}) as bigint), 0)       as jobs_{{ suffix }},
        coalesce(sum(cpu_seconds) filter (where ab_arm = {{ arm }}), 0) / 3600.0       as cpu_hours_{{ suffix }},
        coalesce(sum(wall_seconds) filter (where ab_arm = {{ arm }}), 0) / 3600.0      as wall_hours_{{ suffix }},
        coalesce(sum(core_wall_seconds) filter (where ab_arm = {{ arm }}), 0) / 3600.0 as core_wall_hours_{{ suffix }}{{ ',' if not loop.last }}
{%- endfor %}
    from by_period
    group by period_grain, period_start, period_end
),

final as (
    select
        period_grain,
        period_start,
        period_end,
        -- the last day inside the period: what a reader is shown ("2026-10-01 to 2026-10-03"),
        -- while period_end stays exclusive for arithmetic on periods
        cast(period_end - 1 as date) as period_last_day,
{%- for suffix in ['a', 'b'] %}
        jobs_{{ suffix }},
        cpu_hours_{{ suffix }},
        wall_hours_{{ suffix }},
        core_wall_hours_{{ suffix }},
        cpu_hours_{{ suffix }} / nullif(wall_hours_{{ suffix }}, 0)      as cpu_per_wall_{{ suffix }},
        cpu_hours_{{ suffix }} / nullif(core_wall_hours_{{ suffix }}, 0) as efficiency_{{ suffix }},
{%- endfor %}
        efficiency_b - efficiency_a                                  as efficiency_difference,
        cpu_per_wall_b - cpu_per_wall_a                              as cpu_per_wall_difference
    from aggregated
)

select * from final
