-- Question: What does each storage configuration cost per unit of full-node throughput and per efficiency point, and how long will its SSDs last at our write rate?
-- Glasgow Table 4 for our nodes when full: price per node, price per throughput of a fully
-- occupied node, price per percentage point of efficiency, and for devices with a rated
-- endurance (TBW) the GB written to scratch per device and day (staged-in inputs and job
-- writes) and the expected lifetime in years at that rate. Reads marts.storage_price_performance.
select
    config_name,
    storage_type,
    currency,
    round(price_per_node, 2)                      as price_per_node,
    round(efficiency, 3)                          as efficiency,
    round(price_per_efficiency_point, 2)          as price_per_efficiency_point,
    round(efficiency_full_occupancy, 3)           as efficiency_full_occupancy,
    round(node_throughput_full_occupancy, 2)      as throughput_full_occupancy,
    round(price_per_throughput_full_occupancy, 2) as price_per_throughput_full_occupancy,
    endurance_tbw,
    round(gb_written_per_device_day, 1)           as gb_written_per_device_day,
    round(expected_lifetime_years, 2)             as expected_lifetime_years
from marts.storage_price_performance
order by price_per_throughput_full_occupancy nulls last, config_name;
