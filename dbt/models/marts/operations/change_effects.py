"""marts.change_effects: did each recorded site change help? Efficiency before and after it.

A dbt Python model, like ab_uncertainty: the statistics are tierlens.analysis.change (the A/B
marts' hour-block percentile bootstrap, difference-in-differences against the nodes outside the
change's scope, strata of job class x bytes read per job). Parameters are dbt vars passed through
the model's config in change_effects.yml: change_window_days (7), change_block ('hour'), change_seed
(42), bytes_read_bin_edges_gb ([1, 3, 10, 30, 100]), change_min_jobs (30), change_min_blocks (10).
"""

from tierlens.analysis.change import ChangeParams, change_effects, jobs_needed_from, needed_jobs_sql
from tierlens.analysis.dbt_window import model_window, params_from_config


def _edges(value):
    if isinstance(value, str):  # a var rendered into config arrives as its text
        value = value.strip("[] ").split(",")
    return tuple(float(v) for v in value)


def model(dbt, session):
    # Incremental by inputs_until, the last day whose jobs or change records can alter a change's
    # rows: a change recorded late is rebuilt with the changes it overlaps, old ones are kept.
    dbt.config(materialized="incremental", incremental_strategy="replace_days", unique_key="inputs_until")
    # dbt hands a Python model only the config keys its source names literally (dbt_window.py)
    params = params_from_config(
        ChangeParams, dbt.config.get("change_params"), "change_params", casts={"bin_edges_gb": _edges}
    )
    changes = dbt.ref("stg_site_change").to_arrow_table()
    changes_from, changes_until = model_window(dbt, session, dbt.config.get("incremental_window"), "inputs_until")
    # Only the jobs of the rebuilt changes' windows (and each cluster's first job, which dates the
    # start of its data) cross into Python: an hourly run reads days of jobs, not all of history.
    since = jobs_needed_from(changes, params, changes_from, changes_until)
    jobs = dbt.ref("job_efficiency").query("job_efficiency", needed_jobs_sql("job_efficiency", since)).to_arrow_table()
    return change_effects(jobs, changes, params, changes_from, changes_until)
