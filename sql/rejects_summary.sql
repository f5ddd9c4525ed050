-- Question: Which records did the loader reject, and why?
-- Counts of main.raw_rejects (records that failed parsing or a validation rule of
-- tierlens.records) by record kind, source, field and reason, with when they were first and last
-- seen and one example location to look at. Most rejects first.
select
    record_kind,
    source,
    field,
    reason,
    count(*)              as rejects,
    min(rejected_at)      as first_rejected_at,
    max(rejected_at)      as last_rejected_at,
    min(location)         as example_location
from main.raw_rejects
group by record_kind, source, field, reason
order by rejects desc, record_kind, source, field, reason;
