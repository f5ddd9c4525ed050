"""A/B trial with uncertainty: arm B against arm A per period and per grouping, with a 95 %
paired block bootstrap confidence interval on each difference, a permutation p-value, a warning
when an arm has too little data, and the same comparison restricted to high cache-hit hours
(the SLAC seed's 13-15 September analysis).

A dbt Python model (dbt-duckdb runs it in-process on the warehouse connection), so `dbt build`,
`tierlens transform` and `tierlens demo` build it with the other marts and its YAML tests run
on it. The statistics are tierlens.analysis.ab_test (scipy.stats.bootstrap and
scipy.stats.permutation_test, seeded). Parameters are dbt vars, passed in through the model's
config in _marts.yml: arm_a, arm_b, ab_block ('hour' or 'day'), ab_seed, ab_min_jobs,
ab_min_core_hours, ab_min_blocks, high_hit_ratio.
"""

import datetime as dt

import numpy as np
import pyarrow as pa

from tierlens.analysis import ab_test, blocks_from_jobs

GROUPINGS = ("site", "storage_type", "job_class", "account", "vo")


def _value(value, default, cast):
    return default if value in (None, "") else cast(value)


def model(dbt, session):
    dbt.config(materialized="table")
    # dbt.config.get takes literals only (dbt parses them), hence one call per parameter.
    arm_a = _value(dbt.config.get("arm_a"), "A", str)
    arm_b = _value(dbt.config.get("arm_b"), "B", str)
    block = _value(dbt.config.get("ab_block"), "hour", str)
    if block not in ("hour", "day"):
        raise ValueError(f"var ab_block must be 'hour' or 'day', not {block!r}")
    seed = _value(dbt.config.get("ab_seed"), 42, int)
    min_jobs = _value(dbt.config.get("ab_min_jobs"), 30, int)
    min_core_hours = _value(dbt.config.get("ab_min_core_hours"), 20.0, float)
    min_blocks = _value(dbt.config.get("ab_min_blocks"), 10, int)
    threshold = _value(dbt.config.get("high_hit_ratio"), 0.8, float)

    jobs_rel = dbt.ref("job_efficiency")
    cache_rel = dbt.ref("cache_hourly")
    # Hours (UTC) whose byte hit ratio, summed over every cache server, reaches the threshold.
    high_hours = {
        r[0] for r in cache_rel.query("c", f"""
            select timezone('UTC', "hour") as h
            from c group by 1
            having sum(gb_delivered_from_cache)
                   / nullif(sum(gb_delivered_from_cache + gb_staged_in + gb_bypassed), 0) >= {threshold}
        """).fetchall()
    }
    arms_sql = "'" + arm_a.replace("'", "''") + "', '" + arm_b.replace("'", "''") + "'"
    data = jobs_rel.query("j", f"""
        select ab_arm = '{arm_b.replace("'", "''")}' as is_b,
               date_trunc('hour', timezone('UTC', end_time)) as end_hour,
               "day", week,
               storage_type, job_class, coalesce(account, 'unknown') as account,
               coalesce(vo, 'unknown') as vo,
               cpu_seconds, wall_seconds, core_wall_seconds
        from j
        where ab_arm in ({arms_sql}) and core_wall_seconds > 0
    """).fetchnumpy()

    n = len(data["is_b"])
    is_b = np.asarray(data["is_b"], dtype=bool)
    end_hour = np.asarray(data["end_hour"])
    day = np.asarray(data["day"]).astype("datetime64[D]")
    week = np.asarray(data["week"]).astype("datetime64[D]")
    block_ids = end_hour if block == "hour" else day
    cpu = np.asarray(data["cpu_seconds"], dtype=float)
    wall = np.asarray(data["wall_seconds"], dtype=float)
    core_wall = np.asarray(data["core_wall_seconds"], dtype=float)
    high_arr = np.array(sorted(high_hours), dtype="datetime64[us]")
    high = np.isin(end_hour.astype("datetime64[us]"), high_arr)

    rows = []

    def compare(subset, grouping, value, grain, start, end, mask):
        m_a = mask & ~is_b
        m_b = mask & is_b
        jobs_a, jobs_b = int(m_a.sum()), int(m_b.sum())
        cw_a, cw_b = core_wall[m_a].sum() / 3600, core_wall[m_b].sum() / 3600
        cpu_a, cpu_b = cpu[m_a].sum() / 3600, cpu[m_b].sum() / 3600
        wall_a, wall_b = wall[m_a].sum() / 3600, wall[m_b].sum() / 3600
        sums = blocks_from_jobs(block_ids[mask], is_b[mask], cpu[mask], core_wall[mask])
        eff = ab_test(*sums, seed=seed, min_blocks=min_blocks)
        sums_w = blocks_from_jobs(block_ids[mask], is_b[mask], cpu[mask], wall[mask])
        cpw = ab_test(*sums_w, seed=seed, min_blocks=min_blocks, permutation=False)
        reasons = []
        for arm, j, h in (("A", jobs_a, cw_a), ("B", jobs_b, cw_b)):
            if j < min_jobs:
                reasons.append(f"arm {arm} has {j} jobs (< {min_jobs})")
            if h < min_core_hours:
                reasons.append(f"arm {arm} has {h:.1f} core-hours (< {min_core_hours:g})")
        if eff.paired_blocks < min_blocks:
            reasons.append(f"{eff.paired_blocks} {block}s with both arms (< {min_blocks})")
        enough = not reasons
        if not enough:
            conclusion = "insufficient data"
        elif eff.ci_low is not None and eff.ci_low > 0:
            conclusion = "B higher"
        elif eff.ci_high is not None and eff.ci_high < 0:
            conclusion = "A higher"
        else:
            conclusion = "no significant difference"
        rows.append(dict(
            subset=subset, grouping=grouping, group_value=value, period_grain=grain,
            period_start=start, period_end=end,
            jobs_a=jobs_a, jobs_b=jobs_b, cpu_hours_a=cpu_a, cpu_hours_b=cpu_b,
            wall_hours_a=wall_a, wall_hours_b=wall_b, core_wall_hours_a=cw_a, core_wall_hours_b=cw_b,
            efficiency_a=cpu_a / cw_a if cw_a > 0 else None, efficiency_b=cpu_b / cw_b if cw_b > 0 else None,
            cpu_per_wall_a=cpu_a / wall_a if wall_a > 0 else None,
            cpu_per_wall_b=cpu_b / wall_b if wall_b > 0 else None,
            efficiency_difference=eff.difference, efficiency_ci_low=eff.ci_low, efficiency_ci_high=eff.ci_high,
            efficiency_p_value=eff.p_value,
            cpu_per_wall_difference=cpw.difference, cpu_per_wall_ci_low=cpw.ci_low,
            cpu_per_wall_ci_high=cpw.ci_high,
            block=block, blocks=eff.blocks, paired_blocks=eff.paired_blocks,
            enough_data=enough, warning="; ".join(reasons) or None, conclusion=conclusion,
        ))

    if n:
        for subset, base in (("all", np.ones(n, dtype=bool)), ("high_hit_ratio", high)):
            if not base.any():
                continue
            first_day, last_day = day[base].min(), day[base].max()
            for grouping in GROUPINGS:
                values = [None] if grouping == "site" else sorted(set(np.asarray(data[grouping])[base].tolist()))
                for value in values:
                    gmask = base if value is None else base & (np.asarray(data[grouping]) == value)
                    label = "all jobs" if value is None else str(value)
                    compare(subset, grouping, label, "all", _date(first_day), _date(last_day) + dt.timedelta(days=1),
                            gmask)
                    for w in sorted(set(week[gmask].tolist())):
                        w = _date(w)
                        compare(subset, grouping, label, "week", w, w + dt.timedelta(days=7),
                                gmask & (week == np.datetime64(w)))
                    if grouping == "site":  # daily rows for the site only: the time series of the report
                        for d in sorted(set(day[gmask].tolist())):
                            d = _date(d)
                            compare(subset, grouping, label, "day", d, d + dt.timedelta(days=1),
                                    gmask & (day == np.datetime64(d)))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _date(value):
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return np.datetime64(value, "D").astype(dt.date)


SCHEMA = pa.schema([
    ("subset", pa.string()), ("grouping", pa.string()), ("group_value", pa.string()),
    ("period_grain", pa.string()), ("period_start", pa.date32()), ("period_end", pa.date32()),
    ("jobs_a", pa.int64()), ("jobs_b", pa.int64()),
    ("cpu_hours_a", pa.float64()), ("cpu_hours_b", pa.float64()),
    ("wall_hours_a", pa.float64()), ("wall_hours_b", pa.float64()),
    ("core_wall_hours_a", pa.float64()), ("core_wall_hours_b", pa.float64()),
    ("efficiency_a", pa.float64()), ("efficiency_b", pa.float64()),
    ("cpu_per_wall_a", pa.float64()), ("cpu_per_wall_b", pa.float64()),
    ("efficiency_difference", pa.float64()), ("efficiency_ci_low", pa.float64()),
    ("efficiency_ci_high", pa.float64()), ("efficiency_p_value", pa.float64()),
    ("cpu_per_wall_difference", pa.float64()), ("cpu_per_wall_ci_low", pa.float64()),
    ("cpu_per_wall_ci_high", pa.float64()),
    ("block", pa.string()), ("blocks", pa.int64()), ("paired_blocks", pa.int64()),
    ("enough_data", pa.bool_()), ("warning", pa.string()), ("conclusion", pa.string()),
])
