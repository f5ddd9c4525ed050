"""intermediate.int_ab_totals: per calendar month and A/B comparison, the arms' sums and the
resampled totals of the month's blocks, from which ab_uncertainty builds its 'all' rows.

A dbt Python model (dbt-duckdb runs it in-process): the resampling draws are splitmix64 hashes
with wrapping 64-bit multiplication, which DuckDB's integer arithmetic rejects on overflow, and
the month's totals are one small matrix product per comparison in numpy. The computation is
tierlens.analysis.uncertainty.ab_totals, the same code `tierlens ab-uncertainty` runs.

Incremental (replace_days) by rebuild_day: the month's last calendar day, or the newest job day
when the month is the newest. A run's window (job_efficiency's lookback) then holds the
rebuild_day of every month with a day in the window, and the model recomputes those months whole
from their jobs: at most two months of jobs per hourly run, whatever the history's length.

The newest month's rebuild_day moves on with the newest job day, so a rebuilt month also
replaces its rows wherever their old rebuild_day lies (row_key month): a back-fill's chunk
rebuilds the month of its day while the month's rows of the chunk before lie outside its window.
"""

from tierlens.analysis.dbt_window import model_window, params_from_config, utc_instant
from tierlens.analysis.uncertainty import CACHE_COLUMNS, JOB_COLUMNS, ABParams, ab_totals, months_to_rebuild


def model(dbt, session):
    dbt.config(
        materialized="incremental",
        incremental_strategy="replace_days",
        unique_key="rebuild_day",
        row_key=["month"],
    )
    # dbt hands a Python model only the config keys its source names literally (dbt_window.py)
    params = params_from_config(ABParams, dbt.config.get("ab_params"), "ab_params")
    days_from, days_until = model_window(dbt, session, dbt.config.get("incremental_window"), "rebuild_day")
    job_efficiency = dbt.ref("job_efficiency")
    # the newest month's rebuild_day is the newest job day of all of job_efficiency, in any mode
    newest = job_efficiency.query("j", "select max(day) from j").fetchone()[0]
    # whole months: a month's totals are recomputed from all of its jobs (a back-fill's daily
    # chunks read a month's jobs only in the chunk holding its rebuild_day)
    months = months_to_rebuild(days_from, days_until, newest)
    first, stop = months if months is not None else (None, None)
    # only the trial's arms cross into Python
    arms = ", ".join("'" + arm.replace("'", "''") + "'" for arm in (params.arm_a, params.arm_b))
    job_filter = [f"ab_arm in ({arms})", "core_wall_seconds > 0"]
    cache_filter = ["true"]
    if months is None:  # no month to rebuild: read nothing
        job_filter.append("false")
        cache_filter.append("false")
    if first is not None:
        job_filter.append(f"day >= date '{first.isoformat()}'")
        cache_filter.append(f'"hour" >= {utc_instant(first)}')
    if stop is not None:
        job_filter.append(f"day < date '{stop.isoformat()}'")
        cache_filter.append(f'"hour" < {utc_instant(stop)}')
    jobs = job_efficiency.query(
        "j", "select " + ", ".join(f'"{c}"' for c in JOB_COLUMNS) + " from j where " + " and ".join(job_filter)
    ).to_arrow_table()
    cache = (
        dbt.ref("cache_hourly")
        .query(
            "c", "select " + ", ".join(f'"{c}"' for c in CACHE_COLUMNS) + " from c where " + " and ".join(cache_filter)
        )
        .to_arrow_table()
    )
    return ab_totals(jobs, cache, params, days_from, days_until, newest)
