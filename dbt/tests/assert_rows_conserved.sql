-- Nothing is lost or duplicated between layers:
--   every finished job (end_time set, wall > 0) of stg_job is one row of job_efficiency;
--   every file access of stg_file_access is one row of int_file_access_by_job;
--   every cache access is counted once in cache_hourly;
--   every catalog configuration is one row of storage_price_performance;
--   exact-matched accesses counted on finished jobs never exceed the exact matches.
select 'job_efficiency' as check_name, expected, actual
from (
    select
        (select count(*) from {{ ref('stg_job') }} where end_time is not null and wall_seconds > 0) as expected,
        (select count(*) from {{ ref('job_efficiency') }}) as actual
) as counts_1
where expected <> actual

union all
select 'int_file_access_by_job', expected, actual
from (
    select
        (select count(*) from {{ ref('stg_file_access') }}) as expected,
        (select count(*) from {{ ref('int_file_access_by_job') }}) as actual
) as counts_2
where expected <> actual

union all
select 'cache_hourly', expected, actual
from (
    select
        (select count(*) from {{ ref('stg_file_access') }} where server_role = 'cache') as expected,
        (select coalesce(sum(accesses), 0) from {{ ref('cache_hourly') }}) as actual
) as counts_3
where expected <> actual

union all
select 'storage_price_performance', expected, actual
from (
    select
        (select count(*) from {{ ref('stg_storage_catalog') }}) as expected,
        (select count(*) from {{ ref('storage_price_performance') }}) as actual
) as counts_4
where expected <> actual

union all
select 'files_accessed', expected, actual
from (
    select
        (select count(*) from {{ ref('int_file_access_by_job') }} where match_quality = 'exact') as expected,
        (select coalesce(sum(files_accessed), 0) from {{ ref('job_efficiency') }}) as actual
) as counts_5
where actual > expected
