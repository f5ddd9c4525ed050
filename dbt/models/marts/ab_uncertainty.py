"""marts.ab_uncertainty: arm B against arm A per period and grouping, with 95 % paired block
bootstrap intervals, permutation p-values, data warnings and the high cache-hit subset.

A dbt Python model (dbt-duckdb runs it in-process on the warehouse connection), so `dbt build`,
`tierlens transform` and `tierlens demo` build it with the other marts and its YAML tests run on
it. The computation is tierlens.analysis.uncertainty (a Poisson block bootstrap and an arm-swap
permutation test, seeded per block), shared with `tierlens ab-uncertainty`, which builds the same table from
the marts of another engine: dbt-spark runs Python models only on Databricks, so dbt_project.yml
disables this model on Spark. Parameters are dbt vars, passed in through the model's config in
ab_uncertainty.yml: arm_a, arm_b, ab_block ('hour' or 'day'), ab_seed, ab_min_jobs, ab_min_core_hours,
ab_min_blocks, high_hit_ratio.

The 'all' rows (the whole history) are summed from the month totals of int_ab_totals; the week
and day rows of the window are computed from the jobs of their weeks alone.
"""

import datetime as dt

from tierlens.analysis.dbt_window import model_window, params_from_config, utc_instant
from tierlens.analysis.uncertainty import CACHE_COLUMNS, JOB_COLUMNS, ABParams, ab_uncertainty

#: The day a row is rebuilt by (macros/incremental.sql, strategy replace_days): a week or day row
#: by its last day, so a week is rebuilt while any of its days is; 'all' rows (NULL) every run.
PERIOD_LAST_DAY = "(case when period_grain = 'all' then null else period_end - 1 end)"


def model(dbt, session):
    # Incremental: a late job changes the rows of the periods it ended in and every 'all' row.
    # (dbt reads dbt.config's arguments as literals: PERIOD_LAST_DAY spelled out)
    dbt.config(
        materialized="incremental",
        incremental_strategy="replace_days",
        unique_key="(case when period_grain = 'all' then null else period_end - 1 end)",
    )
    # dbt hands a Python model only the config keys its source names literally (dbt_window.py)
    params = params_from_config(ABParams, dbt.config.get("ab_params"), "ab_params")
    periods_from, periods_until = model_window(dbt, session, dbt.config.get("incremental_window"), PERIOD_LAST_DAY)
    # The window's week and day rows need the jobs of their weeks (a week row by its last day):
    # from the Monday of the window's first day on. Only the columns the statistics read, and
    # only the trial's arms, cross into Python.
    arms = ", ".join("'" + arm.replace("'", "''") + "'" for arm in (params.arm_a, params.arm_b))
    job_filter = [f"ab_arm in ({arms})", "core_wall_seconds > 0"]
    cache_filter = ["true"]
    if periods_from is not None:
        monday = periods_from - dt.timedelta(days=periods_from.weekday())
        job_filter.append(f"day >= date '{monday.isoformat()}'")
        cache_filter.append(f'"hour" >= {utc_instant(monday)}')
    if periods_until is not None:
        job_filter.append(f"day < date '{periods_until.isoformat()}'")
        cache_filter.append(f'"hour" < {utc_instant(periods_until)}')
    jobs = (
        dbt.ref("job_efficiency")
        .query("j", "select " + ", ".join(f'"{c}"' for c in JOB_COLUMNS) + " from j where " + " and ".join(job_filter))
        .to_arrow_table()
    )
    cache = (
        dbt.ref("cache_hourly")
        .query(
            "c", "select " + ", ".join(f'"{c}"' for c in CACHE_COLUMNS) + " from c where " + " and ".join(cache_filter)
        )
        .to_arrow_table()
    )
    totals = dbt.ref("int_ab_totals").to_arrow_table()
    return ab_uncertainty(jobs, cache, params, periods_from, periods_until, totals)
