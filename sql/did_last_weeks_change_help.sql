-- Question: Did last week's change help?
-- The changes recorded (tierlens change add) in the latest 7 days with any change, newest first:
-- efficiency of the jobs in the change's scope before and after it, the effect (difference in
-- differences against the nodes outside the scope where there are any; stratified by job class x
-- bytes read per job) with its 95 % interval, the plain difference beside it, the verdict and
-- any caveat (short window, overlapping change, no control, too few jobs). marts.change_effects.
select
    changed_at,
    description,
    scope,
    comparison,
    jobs_scope_before,
    jobs_scope_after,
    round(efficiency_scope_before, 3)   as efficiency_before,
    round(efficiency_scope_after, 3)    as efficiency_after,
    round(effect, 3)                    as effect,
    round(effect_ci_low, 3)             as effect_ci_low,
    round(effect_ci_high, 3)            as effect_ci_high,
    round(effect_unstratified, 3)       as effect_unstratified,
    conclusion,
    warning
from marts.change_effects
where row_kind = 'change'
  and changed_at >= (select max(changed_at) from marts.change_effects) - interval 7 day
order by changed_at desc, change_id;
