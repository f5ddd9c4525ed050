-- Question: Which nodes send untagged jobs?
-- Jobs (whole-job rows, else first step) that ended in the cluster's last 7 days with data and carry no
-- plugin tag (no job_tag for the job or its step), per cluster and node: the plugin is missing,
-- misconfigured or failing there. Nodes with the most untagged CPU hours first; the share of the
-- node's jobs untagged beside it. From intermediate.int_job_tagged (tag_level NULL = untagged).
with ranked as (
    select *,
           row_number() over (partition by batch_system, cluster, job_id
                              order by case when step_id = '' then 0 else 1 end, step_id) as r,
           max(end_time) over (partition by cluster) as cluster_last_end
    from intermediate.int_job_tagged
),

jobs as (
    select * from ranked
    where r = 1 and end_time >= cluster_last_end - interval 7 day
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
