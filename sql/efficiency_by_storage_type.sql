-- Question: Which worker-node scratch storage gives our jobs the best CPU efficiency?
-- Efficiency = Σ CPU (user + system) / Σ (wall x allocated cores) over the jobs that ended in the
-- last 28 days of data (change the 28 below), per storage type and job class, with the mean of
-- per-job efficiencies beside it and the jobs above 1 (kept, not clipped). Reads
-- marts.job_efficiency. Run: duckdb -readonly published/warehouse.duckdb -f sql/efficiency_by_storage_type.sql
select
    storage_type,
    job_class,
    count(*)                                              as jobs,
    round(sum(cpu_seconds) / 3600, 1)                     as cpu_hours,
    round(sum(core_wall_seconds) / 3600, 1)               as core_wall_hours,
    round(sum(cpu_seconds) / nullif(sum(core_wall_seconds), 0), 3) as efficiency,
    round(avg(efficiency), 3)                             as mean_job_efficiency,
    count(*) filter (where efficiency_above_one)          as jobs_above_one
from marts.job_efficiency
where day > (select max(day) from marts.job_efficiency) - 28
group by storage_type, job_class
order by job_class, efficiency desc nulls last;
