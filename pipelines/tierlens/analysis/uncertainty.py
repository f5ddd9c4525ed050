"""marts.ab_uncertainty computed from two other marts, whatever engine built them.

A/B trial with uncertainty: arm B against arm A per period and per grouping, with a 95 % paired
block bootstrap confidence interval on each difference, a permutation p-value, a warning when an
arm has too little data, and the same comparison restricted to high cache-hit hours (the SLAC
seed's 13-15 September analysis).

Input: the rows of marts.job_efficiency and marts.cache_hourly as Arrow tables. dbt-duckdb's
Python model (dbt/models/marts/ab_uncertainty.py) hands them over from the warehouse; on Spark,
where dbt cannot run Python models outside Databricks, `tierlens ab-uncertainty` reads the Parquet
files Spark wrote. The selection and typing run on a private in-memory DuckDB over those tables,
so both paths give the same answer from the same rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .ab import ab_test, resamples

GROUPINGS = ("site", "storage_type", "job_class", "account", "vo")
JOB_COLUMNS = (
    "ab_arm",
    "end_time",
    "day",
    "week",
    "storage_type",
    "job_class",
    "account",
    "vo",
    "cpu_seconds",
    "wall_seconds",
    "core_wall_seconds",
)
CACHE_COLUMNS = ("hour", "gb_delivered_from_cache", "gb_staged_in", "gb_bypassed")


@dataclass(frozen=True)
class ABParams:
    """The dbt vars of the model, with the same defaults (dbt_project.yml, ab_uncertainty.yml)."""

    arm_a: str = "A"
    arm_b: str = "B"
    block: str = "hour"
    seed: int = 42
    min_jobs: int = 30
    min_core_hours: float = 20.0
    min_blocks: int = 10
    high_hit_ratio: float = 0.8

    def __post_init__(self) -> None:
        if self.block not in ("hour", "day"):
            raise ValueError(f"var ab_block must be 'hour' or 'day', not {self.block!r}")


def _check_columns(name: str, table: pa.Table, needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in table.column_names]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}: is it marts.{name}?")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _inputs(job_efficiency: pa.Table, cache_hourly: pa.Table, p: ABParams) -> tuple[set, dict]:
    """High-hit hours and the A/B jobs' columns as numpy arrays (a private in-memory DuckDB)."""
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        con.register("c", cache_hourly.select(list(CACHE_COLUMNS)))
        con.register("j", job_efficiency.select(list(JOB_COLUMNS)))
        # Hours (UTC) whose byte hit ratio, summed over every cache server, reaches the threshold.
        # cast to timestamptz: a reader may give a naive UTC timestamp (Parquet without zone).
        high_hours = {
            r[0]
            for r in con.execute(f"""
            select timezone('UTC', cast("hour" as timestamptz)) as h
            from c group by 1
            having sum(gb_delivered_from_cache)
                   / nullif(sum(gb_delivered_from_cache + gb_staged_in + gb_bypassed), 0) >= {float(p.high_hit_ratio)}
        """).fetchall()
        }
        data = con.execute(f"""
            select ab_arm = {_literal(p.arm_b)} as is_b,
                   date_trunc('hour', timezone('UTC', cast(end_time as timestamptz))) as end_hour,
                   cast("day" as date) as "day", cast(week as date) as week,
                   storage_type, job_class, coalesce(account, 'unknown') as account,
                   coalesce(vo, 'unknown') as vo,
                   cast(cpu_seconds as double) as cpu_seconds, cast(wall_seconds as double) as wall_seconds,
                   cast(core_wall_seconds as double) as core_wall_seconds
            from j
            where ab_arm in ({_literal(p.arm_a)}, {_literal(p.arm_b)}) and core_wall_seconds > 0
            -- a fixed order: the bootstrap then sees the same arrays whichever engine wrote j
            order by end_time, storage_type, job_class, account, vo, cpu_seconds, wall_seconds, core_wall_seconds
        """).fetchnumpy()
    finally:
        con.close()
    return high_hours, data


def ab_uncertainty(
    job_efficiency: pa.Table,
    cache_hourly: pa.Table,
    params: ABParams | None = None,
    periods_from: dt.date | None = None,
    periods_until: dt.date | None = None,
) -> pa.Table:
    """The rows of marts.ab_uncertainty (schema SCHEMA) from the rows of the two marts.

    ``periods_from`` / ``periods_until`` (an incremental build): only the week and day rows whose
    last day is on or after ``periods_from`` and before ``periods_until`` are computed, besides
    every 'all' row; the other periods' rows are unchanged by jobs ending in that window.
    """
    p = params or ABParams()
    _check_columns("job_efficiency", job_efficiency, JOB_COLUMNS)
    _check_columns("cache_hourly", cache_hourly, CACHE_COLUMNS)
    high_hours, data = _inputs(job_efficiency, cache_hourly, p)
    block, seed, min_jobs, min_core_hours, min_blocks = p.block, p.seed, p.min_jobs, p.min_core_hours, p.min_blocks

    n = len(data["is_b"])
    is_b = np.asarray(data["is_b"], dtype=bool)
    end_hour = np.asarray(data["end_hour"])
    day = np.asarray(data["day"]).astype("datetime64[D]")
    week = np.asarray(data["week"]).astype("datetime64[D]")
    # a block's key is its start in epoch hours (or days): its resampling draws follow from it alone
    block_ids = end_hour.astype("datetime64[h]").astype(np.int64) if block == "hour" else day.astype(np.int64)
    # every comparison sums its jobs per block of this one list (bincount over block_index)
    all_keys, block_index = np.unique(block_ids, return_inverse=True)
    draws = resamples(all_keys, seed)
    cpu = np.asarray(data["cpu_seconds"], dtype=float)
    wall = np.asarray(data["wall_seconds"], dtype=float)
    core_wall = np.asarray(data["core_wall_seconds"], dtype=float)
    high_arr = np.array(sorted(high_hours), dtype="datetime64[us]")
    high = np.isin(end_hour.astype("datetime64[us]"), high_arr)

    rows = []

    def wanted(end: dt.date) -> bool:
        last = end - dt.timedelta(days=1)
        return (periods_from is None or last >= periods_from) and (periods_until is None or last < periods_until)

    def compare(subset, grouping, value, grain, start, end, mask):
        m_a = mask & ~is_b
        m_b = mask & is_b
        jobs_a, jobs_b = int(m_a.sum()), int(m_b.sum())
        cw_a, cw_b = core_wall[m_a].sum() / 3600, core_wall[m_b].sum() / 3600
        cpu_a, cpu_b = cpu[m_a].sum() / 3600, cpu[m_b].sum() / 3600
        wall_a, wall_b = wall[m_a].sum() / 3600, wall[m_b].sum() / 3600
        index, arm_b = block_index[mask], is_b[mask]
        present = np.bincount(index, minlength=len(all_keys)) > 0
        keys = all_keys[present]

        def per_block(den: np.ndarray) -> list[np.ndarray]:
            """num_a, den_a, num_b, den_b per block with jobs (as blocks_from_jobs sums them)."""
            out = []
            for arm in (~arm_b, arm_b):
                for x in (cpu, den):
                    out.append(np.bincount(index[arm], weights=x[mask][arm], minlength=len(all_keys))[present])
            return out

        eff = ab_test(*per_block(core_wall), seed=seed, min_blocks=min_blocks, keys=keys, draws=draws)
        cpw = ab_test(*per_block(wall), seed=seed, min_blocks=min_blocks, permutation=False, keys=keys, draws=draws)
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
        rows.append(
            dict(
                subset=subset,
                grouping=grouping,
                group_value=value,
                period_grain=grain,
                period_start=start,
                period_end=end,
                jobs_a=jobs_a,
                jobs_b=jobs_b,
                cpu_hours_a=cpu_a,
                cpu_hours_b=cpu_b,
                wall_hours_a=wall_a,
                wall_hours_b=wall_b,
                core_wall_hours_a=cw_a,
                core_wall_hours_b=cw_b,
                efficiency_a=cpu_a / cw_a if cw_a > 0 else None,
                efficiency_b=cpu_b / cw_b if cw_b > 0 else None,
                cpu_per_wall_a=cpu_a / wall_a if wall_a > 0 else None,
                cpu_per_wall_b=cpu_b / wall_b if wall_b > 0 else None,
                efficiency_difference=eff.difference,
                efficiency_ci_low=eff.ci_low,
                efficiency_ci_high=eff.ci_high,
                efficiency_p_value=eff.p_value,
                cpu_per_wall_difference=cpw.difference,
                cpu_per_wall_ci_low=cpw.ci_low,
                cpu_per_wall_ci_high=cpw.ci_high,
                block=block,
                blocks=eff.blocks,
                paired_blocks=eff.paired_blocks,
                enough_data=enough,
                warning="; ".join(reasons) or None,
                conclusion=conclusion,
            )
        )

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
                    compare(
                        subset, grouping, label, "all", _date(first_day), _date(last_day) + dt.timedelta(days=1), gmask
                    )
                    for w in sorted(set(week[gmask].tolist())):
                        w = _date(w)
                        if not wanted(w + dt.timedelta(days=7)):
                            continue
                        compare(
                            subset,
                            grouping,
                            label,
                            "week",
                            w,
                            w + dt.timedelta(days=7),
                            gmask & (week == np.datetime64(w)),
                        )
                    if grouping == "site":  # daily rows for the site only: the time series of the report
                        for d in sorted(set(day[gmask].tolist())):
                            d = _date(d)
                            if not wanted(d + dt.timedelta(days=1)):
                                continue
                            compare(
                                subset,
                                grouping,
                                label,
                                "day",
                                d,
                                d + dt.timedelta(days=1),
                                gmask & (day == np.datetime64(d)),
                            )
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _date(value):
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return np.datetime64(value, "D").astype(dt.date)


SCHEMA = pa.schema(
    [
        ("subset", pa.string()),
        ("grouping", pa.string()),
        ("group_value", pa.string()),
        ("period_grain", pa.string()),
        ("period_start", pa.date32()),
        ("period_end", pa.date32()),
        ("jobs_a", pa.int64()),
        ("jobs_b", pa.int64()),
        ("cpu_hours_a", pa.float64()),
        ("cpu_hours_b", pa.float64()),
        ("wall_hours_a", pa.float64()),
        ("wall_hours_b", pa.float64()),
        ("core_wall_hours_a", pa.float64()),
        ("core_wall_hours_b", pa.float64()),
        ("efficiency_a", pa.float64()),
        ("efficiency_b", pa.float64()),
        ("cpu_per_wall_a", pa.float64()),
        ("cpu_per_wall_b", pa.float64()),
        ("efficiency_difference", pa.float64()),
        ("efficiency_ci_low", pa.float64()),
        ("efficiency_ci_high", pa.float64()),
        ("efficiency_p_value", pa.float64()),
        ("cpu_per_wall_difference", pa.float64()),
        ("cpu_per_wall_ci_low", pa.float64()),
        ("cpu_per_wall_ci_high", pa.float64()),
        ("block", pa.string()),
        ("blocks", pa.int64()),
        ("paired_blocks", pa.int64()),
        ("enough_data", pa.bool_()),
        ("warning", pa.string()),
        ("conclusion", pa.string()),
    ]
)
