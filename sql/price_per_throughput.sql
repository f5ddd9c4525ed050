-- Question: Which scratch storage configuration buys the most job throughput for the money?
-- Glasgow Table 4 for our own nodes: price per node, per GB of usable scratch and per unit of
-- throughput (CPU core-hours delivered per node-hour), cheapest throughput first. Configurations
-- in the catalog that no node has yet show prices but no measurements. Prices come from
-- dbt/seeds/storage_catalog.csv, overridden by raw_storage_catalog. Reads
-- marts.storage_price_performance.
select
    config_name,
    storage_type,
    device_model,
    currency,
    round(price_per_node, 2)          as price_per_node,
    round(capacity_gb_per_node, 0)    as capacity_gb_per_node,
    round(price_per_gb, 3)            as price_per_gb,
    nodes,
    jobs,
    round(efficiency, 3)              as efficiency,
    round(node_throughput, 3)         as node_throughput,
    round(price_per_throughput, 2)    as price_per_throughput
from marts.storage_price_performance
order by price_per_throughput asc nulls last, price_per_gb asc;
