-- The 'all' row of ab_comparison holds every job of each arm: its jobs and CPU hours equal the
-- totals over job_efficiency, and the day rows add up to it.
{%- set arm_a = sql_literal(var('arm_a', 'A')) %}
{%- set arm_b = sql_literal(var('arm_b', 'B')) %}
with expected as (
    select
        count(*) filter (where ab_arm = {{ arm_a }}) as jobs_a,
        coalesce(sum(cpu_seconds) filter (where ab_arm = {{ arm_a }}), 0) / 3600.0 as cpu_hours_a,
        count(*) filter (where ab_arm = {{ arm_b }}) as jobs_b,
        coalesce(sum(cpu_seconds) filter (where ab_arm = {{ arm_b }}), 0) / 3600.0 as cpu_hours_b
    from {{ ref('job_efficiency') }}
),

actual as (
    select
        coalesce(sum(jobs_a) filter (where period_grain = 'all'), 0) as jobs_a,
        coalesce(sum(cpu_hours_a) filter (where period_grain = 'all'), 0) as cpu_hours_a,
        coalesce(sum(jobs_b) filter (where period_grain = 'all'), 0) as jobs_b,
        coalesce(sum(cpu_hours_b) filter (where period_grain = 'all'), 0) as cpu_hours_b,
        coalesce(sum(cpu_hours_a) filter (where period_grain = 'day'), 0) as day_cpu_hours_a,
        coalesce(sum(cpu_hours_b) filter (where period_grain = 'day'), 0) as day_cpu_hours_b,
        count(*) filter (where period_grain = 'all') as all_rows
    from {{ ref('ab_comparison') }}
)

select *
from expected, actual
where expected.jobs_a <> actual.jobs_a
   or expected.jobs_b <> actual.jobs_b
   or abs(expected.cpu_hours_a - actual.cpu_hours_a) > 1e-6 * greatest(1, expected.cpu_hours_a)
   or abs(expected.cpu_hours_b - actual.cpu_hours_b) > 1e-6 * greatest(1, expected.cpu_hours_b)
   or abs(actual.day_cpu_hours_a - actual.cpu_hours_a) > 1e-6 * greatest(1, actual.cpu_hours_a)
   or abs(actual.day_cpu_hours_b - actual.cpu_hours_b) > 1e-6 * greatest(1, actual.cpu_hours_b)
   or actual.all_rows <> (case when expected.jobs_a + expected.jobs_b > 0 then 1 else 0 end)
