-- Question: Which jobs used more CPU than their allocation allows (efficiency above 1)?
-- Efficiency above 1 means CPU user + system exceeded wall x allocated cores: threads beyond the
-- allocation (over-subscription) or an accounting error. tierlens keeps and flags these values
-- instead of clipping them; this lists them, worst first. Reads marts.job_efficiency.
select
    batch_system,
    cluster,
    job_id,
    step_id,
    user_name,
    account,
    node,
    storage_type,
    allocated_cores,
    round(cpu_seconds / 3600, 2)        as cpu_hours,
    round(core_wall_seconds / 3600, 2)  as core_wall_hours,
    round(efficiency, 3)                as efficiency,
    end_time
from marts.job_efficiency
where efficiency_above_one
order by efficiency desc, end_time;
