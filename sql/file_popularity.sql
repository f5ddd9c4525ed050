-- Question: Which files are hot right now and should be in the cache?
-- SLAC's caching algorithms as of the latest access: the 10 x 12-hour access counts (period 1 =
-- the latest 12 hours), reads in the last 5 days (dbt var popularity_recent_days), the mean
-- fraction of the file those reads covered, and the rank by reads x fraction (algorithm 2).
-- The 50 highest-ranked files. Reads marts.file_popularity.
select
    popularity_rank,
    file_lfn,
    round(file_size_bytes / 1e9, 2)     as file_gb,
    [accesses_p01, accesses_p02, accesses_p03, accesses_p04, accesses_p05,
     accesses_p06, accesses_p07, accesses_p08, accesses_p09, accesses_p10] as accesses_by_12h_period,
    reads_recent,
    round(mean_read_fraction, 3)        as mean_read_fraction,
    round(score, 2)                     as score
from marts.file_popularity
order by popularity_rank
limit 50;
