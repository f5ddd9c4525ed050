-- Question: How efficient is each scratch storage type when its nodes are full, not half empty?
-- The Glasgow seed's Table 3 counted only periods when the nodes were fully occupied; a half-empty
-- node flatters every disk. Per storage type: CPU efficiency and throughput (CPU core-hours per
-- node-hour, jobs per node-hour) over every node-hour beside the same over the fully occupied
-- node-hours only (occupancy >= dbt var full_occupancy, default 0.99), and the share of node-hours
-- that were full. Reads marts.occupancy_efficiency.
select
    storage_type,
    max(node_hours) filter (where scope = 'all')                        as node_hours,
    round(max(share_of_node_hours) filter (where scope = 'fully_occupied'), 3) as share_full,
    round(max(efficiency) filter (where scope = 'all'), 3)             as efficiency_all,
    round(max(efficiency) filter (where scope = 'fully_occupied'), 3)  as efficiency_full,
    round(max(throughput) filter (where scope = 'all'), 2)             as throughput_all,
    round(max(throughput) filter (where scope = 'fully_occupied'), 2)  as throughput_full,
    round(max(jobs_per_node_hour) filter (where scope = 'all'), 2)     as jobs_per_node_hour_all,
    round(max(jobs_per_node_hour) filter (where scope = 'fully_occupied'), 2) as jobs_per_node_hour_full
from marts.occupancy_efficiency
group by storage_type
order by efficiency_full desc nulls last, storage_type;
