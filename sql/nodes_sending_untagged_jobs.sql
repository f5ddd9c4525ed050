-- Question: Which nodes send untagged jobs?
-- Jobs (whole-job rows, else first step) that ended in the cluster's last 7 days with data and carry no
-- plugin tag (no job_tag for the job or its step), per cluster and node: the plugin is missing,
-- misconfigured or failing there. Nodes with the most untagged CPU hours first; the share of the
-- node's jobs untagged beside it. From intermediate.int_job_tagged (tag_level NULL = untagged).
with cluster_days as (
    select cluster, max(end_time) - interval 7 day as since
    from intermediate.int_job_tagged
    group by cluster
),

-- Only a job with a row that ended in those days can qualify (the row standing for it must have):
-- ranking the rows of every job ever recorded made this query's time grow with the months kept.
recent_jobs as (
    select distinct tagged.batch_system, tagged.cluster, tagged.job_id
    from intermediate.int_job_tagged as tagged
    inner join cluster_days on cluster_days.cluster = tagged.cluster
    where tagged.end_time >= cluster_days.since
),

ranked as (
    select tagged.*,
           row_number() over (partition by tagged.batch_system, tagged.cluster, tagged.job_id
                              order by case when tagged.step_id = '' then 0 else 1 end, tagged.step_id) as r
    from intermediate.int_job_tagged as tagged
    semi join recent_jobs using (batch_system, cluster, job_id)
),

jobs as (
    select ranked.* from ranked
    inner join cluster_days on cluster_days.cluster = ranked.cluster
    where ranked.r = 1 and ranked.end_time >= cluster_days.since
)
select
    cluster,
    node,
    count(*) filter (where tag_level is null)                                  as untagged_jobs,
    count(*)                                                                   as jobs,
    round(count(*) filter (where tag_level is null) / count(*), 3)             as untagged_share,
    round(sum(coalesce(cpu_user_seconds, 0) + coalesce(cpu_system_seconds, 0))
          filter (where tag_level is null) / 3600.0, 1)                        as untagged_cpu_hours,
    max(end_time) filter (where tag_level is null)                             as last_untagged_end
from jobs
group by cluster, node
having count(*) filter (where tag_level is null) > 0
order by untagged_cpu_hours desc nulls last, untagged_jobs desc, cluster, node;
