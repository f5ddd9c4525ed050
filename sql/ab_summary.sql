-- Question: In the A/B trial, did arm B use the CPU better than arm A?
-- The SLAC-style comparison of the two arms (dbt vars arm_a/arm_b, default A and B): CPU hours,
-- wall hours and CPU/wall per arm, plus the core-weighted efficiency, over the whole trial
-- ('all') and per ISO week. A positive difference means arm B did better. A period runs from
-- period_start to period_last_day, both days included (as the report and the demo print it).
-- Reads marts.ab_comparison.
select
    period_grain,
    period_start,
    period_last_day,
    jobs_a,
    round(cpu_hours_a, 1)            as cpu_hours_a,
    round(wall_hours_a, 1)           as wall_hours_a,
    round(cpu_per_wall_a, 3)         as cpu_per_wall_a,
    round(efficiency_a, 3)           as efficiency_a,
    jobs_b,
    round(cpu_hours_b, 1)            as cpu_hours_b,
    round(wall_hours_b, 1)           as wall_hours_b,
    round(cpu_per_wall_b, 3)         as cpu_per_wall_b,
    round(efficiency_b, 3)           as efficiency_b,
    round(cpu_per_wall_difference, 3) as cpu_per_wall_difference,
    round(efficiency_difference, 3)  as efficiency_difference
from marts.ab_comparison
where period_grain in ('all', 'week')
order by period_grain = 'week', period_start;
