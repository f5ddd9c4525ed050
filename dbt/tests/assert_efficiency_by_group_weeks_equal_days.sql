-- Each week row of efficiency_by_group equals the sum of the day rows of the same group whose
-- day falls in that week (jobs, cpu, wall and core-wall hours, jobs above one).
with days as (
    select
        cast(date_trunc('week', period_start) as date) as week,
        storage_type, ab_arm, account, job_class,
        sum(jobs) as jobs,
        sum(cpu_hours) as cpu_hours,
        sum(wall_hours) as wall_hours,
        sum(core_wall_hours) as core_wall_hours,
        sum(jobs_above_one) as jobs_above_one
    from {{ ref('efficiency_by_group') }}
    where period_grain = 'day'
    group by cast(date_trunc('week', period_start) as date), storage_type, ab_arm, account, job_class
),

weeks as (
    select period_start as week, storage_type, ab_arm, account, job_class,
           jobs, cpu_hours, wall_hours, core_wall_hours, jobs_above_one
    from {{ ref('efficiency_by_group') }}
    where period_grain = 'week'
)

select *
from weeks
full outer join days using (week, storage_type, ab_arm, account, job_class)
where weeks.jobs is distinct from days.jobs
   or weeks.jobs_above_one is distinct from days.jobs_above_one
   or abs(weeks.cpu_hours - days.cpu_hours) > 1e-6 * greatest(1, abs(days.cpu_hours))
   or abs(weeks.wall_hours - days.wall_hours) > 1e-6 * greatest(1, abs(days.wall_hours))
   or abs(weeks.core_wall_hours - days.core_wall_hours) > 1e-6 * greatest(1, abs(days.core_wall_hours))
   or weeks.cpu_hours is null or days.cpu_hours is null
