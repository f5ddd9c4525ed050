"""marts.change_effects: did each recorded site change help? Efficiency before and after it.

A dbt Python model, like ab_uncertainty: the statistics are tierlens.analysis.change (the A/B
marts' hour-block percentile bootstrap, difference-in-differences against the nodes outside the
change's scope, strata of job class x bytes read per job). Parameters are dbt vars passed through
the model's config in change_effects.yml: change_window_days (7), change_block ('hour'), change_seed
(42), bytes_read_bin_edges_gb ([1, 3, 10, 30, 100]), change_min_jobs (30), change_min_blocks (10).
"""

from tierlens.analysis.change import DEFAULT_EDGES_GB, ChangeParams, change_effects, jobs_needed_from, needed_jobs_sql
from tierlens.analysis.dbt_window import rebuild_window, setting


def _edges(value):
    if value in (None, ""):
        return DEFAULT_EDGES_GB
    if isinstance(value, str):  # a var rendered into config arrives as its text
        value = value.strip("[] ").split(",")
    return tuple(float(v) for v in value)


def model(dbt, session):
    # Incremental by inputs_until, the last day whose jobs or change records can alter a change's
    # rows: a change recorded late is rebuilt with the changes it overlaps, old ones are kept.
    dbt.config(materialized="incremental", incremental_strategy="replace_days", unique_key="inputs_until")
    params = ChangeParams(
        window_days=setting(dbt.config.get("change_window_days"), 7.0, float),
        block=setting(dbt.config.get("change_block"), "hour", str),
        seed=setting(dbt.config.get("change_seed"), 42, int),
        bin_edges_gb=_edges(dbt.config.get("bytes_read_bin_edges_gb")),
        min_jobs=setting(dbt.config.get("change_min_jobs"), 30, int),
        min_blocks=setting(dbt.config.get("change_min_blocks"), 10, int),
    )
    changes = dbt.ref("stg_site_change").to_arrow_table()
    changes_from, changes_until = rebuild_window(
        dbt.config.get("backfill_start"),
        dbt.config.get("backfill_end"),
        dbt.config.get("lookback_days"),
        dbt.is_incremental,
        f'"{dbt.this.schema}"."{dbt.this.identifier}"',
        session,
        "inputs_until",
    )
    # Only the jobs of the rebuilt changes' windows (and each cluster's first job, which dates the
    # start of its data) cross into Python: an hourly run reads days of jobs, not all of history.
    since = jobs_needed_from(changes, params, changes_from, changes_until)
    jobs = dbt.ref("job_efficiency").query("job_efficiency", needed_jobs_sql("job_efficiency", since)).to_arrow_table()
    return change_effects(jobs, changes, params, changes_from, changes_until)
