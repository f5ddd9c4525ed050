-- Question: Does each storage server share its bandwidth fairly among the clients reading at the same time?
-- The Fermilab seed's test: per server, the windows (dbt var fairness_window_minutes, default 60)
-- with concurrent client hosts, and over them the median and worst Jain's fairness index
-- (1 = every client got the same bandwidth), the median spread of client bandwidth around the
-- mean (coefficient of variation; Fermilab: about 15 %) and the median fastest/slowest client
-- bandwidth ratio (Fermilab's slowest/fastest completion time: 1.77). Reads marts.client_fairness.
select
    server_host,
    count(*)                                       as windows,
    round(avg(clients), 1)                         as mean_clients,
    round(median(jain_index), 3)                   as median_jain_index,
    round(min(jain_index), 3)                      as worst_jain_index,
    round(median(bandwidth_cv), 3)                 as median_bandwidth_cv,
    round(median(bandwidth_ratio), 2)              as median_fastest_slowest_ratio,
    round(median(mean_bandwidth_mb_s), 1)          as median_client_mb_s
from marts.client_fairness
group by server_host
order by median_jain_index, server_host;
