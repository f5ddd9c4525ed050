-- Question: Which groups of jobs ran least efficiently this week?
-- "This week" is the latest ISO week (Monday start, UTC) with data. Groups are storage type x
-- A/B arm x account x job class (marts.efficiency_by_group); groups with under 1 core-wall hour
-- are left out so a single short job does not top the list. Lowest efficiency first.
select
    period_start                      as week,
    storage_type,
    ab_arm,
    account,
    job_class,
    jobs,
    round(core_wall_hours, 1)         as core_wall_hours,
    round(efficiency, 3)              as efficiency,
    round(mean_job_efficiency, 3)     as mean_job_efficiency,
    jobs_above_one
from marts.efficiency_by_group
where period_grain = 'week'
  and period_start = (select max(period_start) from marts.efficiency_by_group where period_grain = 'week')
  and core_wall_hours >= 1
order by efficiency asc nulls last, core_wall_hours desc
limit 20;
