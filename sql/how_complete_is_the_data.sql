-- Question: How much of the data is behind the figures?
-- The report's first-screen answer on completeness, over the same days: the UTC days on which
-- the measured jobs ended (first_day to last_day, both included), plus the loading's own rows
-- (grain 'source': rejected records, intervals that loaded nothing) whatever their day. Shares
-- are fractions (0.998 is 99.8 %): cpu_hours_tagged is the share of CPU hours from jobs a plugin
-- tagged with their storage and arm, bytes_joined the share of bytes read from XRootD servers
-- that joined to a job (exactly or by inference). provisional: jobs still running may add to it.
-- Reads marts.data_completeness (per day and subject) and marts.job_efficiency (the days).
with period as (
    select min("day") as first_day, max("day") as last_day
    from marts.job_efficiency
),

in_period as (
    select completeness.*
    from marts.data_completeness as completeness
    cross join period
    where completeness.grain = 'source'
        or period.first_day is null
        or completeness."day" between period.first_day and period.last_day
)

select
    period.first_day,
    period.last_day,
    round(
        sum(numerator) filter (where measure = 'cpu_hours_tagged')
        / nullif(sum(denominator) filter (where measure = 'cpu_hours_tagged'), 0), 4
    ) as cpu_hours_tagged,
    round(sum(denominator) filter (where measure = 'cpu_hours_tagged'), 1) as cpu_hours,
    round(
        sum(numerator) filter (where measure = 'bytes_joined')
        / nullif(sum(denominator) filter (where measure = 'bytes_joined'), 0), 4
    ) as bytes_joined,
    cast(coalesce(sum(numerator) filter (where measure = 'kernel_drops'), 0) as bigint) as kernel_drops,
    cast(coalesce(sum(numerator) filter (where measure = 'rejected_records'), 0) as bigint) as rejected_records,
    coalesce(bool_or(provisional), false) as provisional
from period
left join in_period on true
group by period.first_day, period.last_day;
