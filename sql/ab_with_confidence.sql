-- Question: Is arm B's CPU efficiency really different from arm A's, and are the data enough to say so?
-- Per grouping (whole site, storage type, job class, account, VO) over the whole trial and per
-- ISO week: both arms' efficiency and CPU/wall, the difference B - A with its 95 % bootstrap
-- interval (hour blocks of end_time, resampled with both arms together) and permutation p-value,
-- and the verdict: 'B higher' / 'A higher' when the interval excludes 0, 'insufficient data' with
-- the reason in warning. subset 'high_hit_ratio' repeats it for hours when the cache hit ratio
-- was high (the SLAC 13-15 September comparison; dbt var high_hit_ratio). Reads marts.ab_uncertainty.
select
    subset,
    grouping,
    group_value,
    period_grain,
    period_start,
    jobs_a,
    jobs_b,
    round(efficiency_a, 3)            as efficiency_a,
    round(efficiency_b, 3)            as efficiency_b,
    round(efficiency_difference, 4)   as efficiency_b_minus_a,
    round(efficiency_ci_low, 4)       as ci_low,
    round(efficiency_ci_high, 4)      as ci_high,
    round(efficiency_p_value, 3)      as p_value,
    round(cpu_per_wall_a, 3)          as cpu_per_wall_a,
    round(cpu_per_wall_b, 3)          as cpu_per_wall_b,
    conclusion,
    warning
from marts.ab_uncertainty
where period_grain in ('all', 'week')
-- the answer first: the whole site, over the whole trial, then its weeks, then the groupings
order by subset <> 'all', subset, grouping <> 'site', grouping, group_value, period_grain <> 'all', period_start;
