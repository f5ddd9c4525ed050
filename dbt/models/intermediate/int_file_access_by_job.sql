-- Every file access, with the job it belongs to where that is known.
--   exact:     the access carries a job_identity (XRD_MONINFO) equal to a job's job_identity.
--   unmatched: no identity, or an identity no loaded job has; job keys are NULL.
-- (A later step adds 'inferred': client host + time overlap + pid.)
-- job_identity names a job, not a step ('<batch_system>.<cluster>.<job_id>'): where a job has
-- several step rows the access goes to the whole-job row (step_id ''), else to its first step,
-- so an access is never counted twice.
with accesses as (
    select * from {{ ref('stg_file_access') }}
),

job_by_identity as (
    select
        job_identity,
        batch_system,
        cluster,
        job_id,
        step_id
    from {{ ref('stg_job') }}
    where job_identity is not null
    qualify row_number() over (
        partition by job_identity
        order by (step_id = '') desc, step_id, batch_system, cluster, job_id
    ) = 1
),

final as (
    select
        accesses.*,
        job_by_identity.batch_system                             as batch_system,
        job_by_identity.cluster                                  as cluster,
        job_by_identity.job_id                                   as job_id,
        job_by_identity.step_id                                  as step_id,
        case
            when job_by_identity.job_identity is not null then 'exact'
            else 'unmatched'
        end                                                      as match_quality
    from accesses
    left join job_by_identity
        on job_by_identity.job_identity = accesses.job_identity
)

select * from final
