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

The 'all' rows (the whole history) come from per-month totals (ab_totals, stored by dbt in
intermediate.int_ab_totals): a month's arm sums and the resampled sums of its blocks. The
bootstrap and the arm-swap test are sums over blocks and a block lies in one month, so the
months' totals add up to the whole history's, and an hourly run recomputes only the months its
window touches. `tierlens ab-uncertainty` computes the same month totals from all the jobs, then
sums them in the same order: both paths give the same 'all' rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .ab import Resamples, Totals, ab_test, check_block, resamples, result_from_totals

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
#: The per-block sums a comparison resamples, arm A's then arm B's (int_ab_totals' columns).
SUMS = (
    "cpu_seconds_a",
    "core_wall_seconds_a",
    "wall_seconds_a",
    "cpu_seconds_b",
    "core_wall_seconds_b",
    "wall_seconds_b",
)
#: The four sums (num_a, den_a, num_b, den_b) of the efficiency and of SLAC's CPU/wall.
_EFFICIENCY = [0, 1, 3, 4]
_CPU_PER_WALL = [0, 2, 3, 5]


@dataclass(frozen=True)
class ABParams:
    """The A/B models' parameters (config ab_params, from the vars): their defaults live here only."""

    arm_a: str = "A"
    arm_b: str = "B"
    block: str = "hour"
    seed: int = 42
    min_jobs: int = 30
    min_core_hours: float = 20.0
    min_blocks: int = 10
    high_hit_ratio: float = 0.8

    def __post_init__(self) -> None:
        check_block(self.block, "ab_block")


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


@dataclass(frozen=True)
class _Jobs:
    """The A/B jobs as arrays, with their blocks and the blocks' resampling draws."""

    data: dict
    is_b: np.ndarray
    day: np.ndarray  # datetime64[D]
    week: np.ndarray  # datetime64[D]
    high: np.ndarray  # bool: ends in a high-hit hour
    cpu: np.ndarray
    wall: np.ndarray
    core_wall: np.ndarray
    block_index: np.ndarray  # each job's row in all_keys
    all_keys: np.ndarray  # sorted block keys (epoch hours or days of the block's start)
    block_day: np.ndarray  # datetime64[D] of each of all_keys
    draws: Resamples

    @property
    def n(self) -> int:
        return len(self.is_b)


def _prepare(job_efficiency: pa.Table, cache_hourly: pa.Table, p: ABParams) -> _Jobs:
    _check_columns("job_efficiency", job_efficiency, JOB_COLUMNS)
    _check_columns("cache_hourly", cache_hourly, CACHE_COLUMNS)
    high_hours, data = _inputs(job_efficiency, cache_hourly, p)
    is_b = np.asarray(data["is_b"], dtype=bool)
    end_hour = np.asarray(data["end_hour"])
    day = np.asarray(data["day"]).astype("datetime64[D]")
    # a block's key is its start in epoch hours (or days): its resampling draws follow from it alone
    hours = end_hour.astype("datetime64[h]")
    block_ids = hours.astype(np.int64) if p.block == "hour" else day.astype(np.int64)
    # every comparison sums its jobs per block of this one list (bincount over block_index)
    all_keys, block_index = np.unique(block_ids, return_inverse=True)
    if p.block == "hour":
        block_day = all_keys.astype("datetime64[h]").astype("datetime64[D]")
    else:
        block_day = all_keys.astype("datetime64[D]")
    high_arr = np.array(sorted(high_hours), dtype="datetime64[us]")
    return _Jobs(
        data=data,
        is_b=is_b,
        day=day,
        week=np.asarray(data["week"]).astype("datetime64[D]"),
        high=np.isin(end_hour.astype("datetime64[us]"), high_arr),
        cpu=np.asarray(data["cpu_seconds"], dtype=float),
        wall=np.asarray(data["wall_seconds"], dtype=float),
        core_wall=np.asarray(data["core_wall_seconds"], dtype=float),
        block_index=block_index.reshape(-1),
        all_keys=all_keys,
        block_day=block_day,
        draws=resamples(all_keys, p.seed),
    )


def _groups(jobs: _Jobs) -> Iterator[tuple[str, str, str, np.ndarray]]:
    """(subset, grouping, group_value, job mask) of every comparison the jobs hold."""
    if not jobs.n:
        return
    for subset, base in (("all", np.ones(jobs.n, dtype=bool)), ("high_hit_ratio", jobs.high)):
        if not base.any():
            continue
        for grouping in GROUPINGS:
            column = None if grouping == "site" else np.asarray(jobs.data[grouping])
            values = [None] if column is None else sorted(set(column[base].tolist()))
            for value in values:
                mask = base if value is None else base & (column == value)
                yield subset, grouping, "all jobs" if value is None else str(value), mask


def _month_start(day: dt.date) -> dt.date:
    return day.replace(day=1)


def _next_month(day: dt.date) -> dt.date:
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def rebuild_day(month: dt.date, newest_day: dt.date | None) -> dt.date:
    """The day int_ab_totals' row of a month is rebuilt by: its last day, or the newest job day
    when that is earlier (the newest month, still filling)."""
    last = _next_month(month) - dt.timedelta(days=1)
    return last if newest_day is None else min(last, newest_day)


def months_to_rebuild(
    days_from: dt.date | None, days_until: dt.date | None, newest_day: dt.date | None
) -> tuple[dt.date | None, dt.date | None] | None:
    """The days [first, stop) of the months whose rebuild_day lies in [days_from, days_until)
    (None: unbounded), the jobs their rebuild reads; None when no month is rebuilt."""
    if days_from is None:
        return None, None if days_until is None else _next_month(days_until - dt.timedelta(days=1))
    if days_until is None:
        # every month with a day from days_from on: their rebuild days are all >= days_from
        return None if newest_day is not None and newest_day < days_from else (_month_start(days_from), None)
    months = []
    month = _month_start(days_from)
    while month < days_until:
        if days_from <= rebuild_day(month, newest_day) < days_until:
            months.append(month)
        month = _next_month(month)
    return (months[0], _next_month(months[-1])) if months else None


def ab_totals(
    job_efficiency: pa.Table,
    cache_hourly: pa.Table,
    params: ABParams | None = None,
    days_from: dt.date | None = None,
    days_until: dt.date | None = None,
    newest_day: dt.date | None = None,
) -> pa.Table:
    """The rows of intermediate.int_ab_totals (schema TOTALS_SCHEMA): per calendar month and
    comparison, the arms' sums and the resampled totals that analysis.ab.result_from_totals
    turns into the 'all' rows' intervals and p-values.

    Only months whose rebuild_day lies in [days_from, days_until) are computed, each from all
    of its jobs (pass at least those months' jobs and cache hours: months_to_rebuild). Blocks (hours or
    days) never straddle two months, so the months' totals add up to those of all of history.
    ``newest_day`` is the newest job day of the whole input (default: job_efficiency's): the
    newest month's rebuild_day, so that the next incremental run rebuilds it.
    """
    p = params or ABParams()
    jobs = _prepare(job_efficiency, cache_hourly, p)
    if newest_day is None and job_efficiency.num_rows:
        newest = pc.max(job_efficiency.column("day")).as_py()
        newest_day = None if newest is None else _date(newest)
    block_month = jobs.block_day.astype("datetime64[M]")
    months = np.unique(block_month)
    wanted = []
    for m in months:
        start = m.astype("datetime64[D]").astype(dt.date)
        day = rebuild_day(start, newest_day)
        if (days_from is None or day >= days_from) and (days_until is None or day < days_until):
            wanted.append((m, start, day))
    rows: list[dict] = []
    n_keys = len(jobs.all_keys)
    for subset, grouping, value, mask in _groups(jobs):
        index, arm_b = jobs.block_index[mask], jobs.is_b[mask]
        per_block = []
        for arm in (~arm_b, arm_b):
            for x in (jobs.cpu, jobs.core_wall, jobs.wall):
                per_block.append(np.bincount(index[arm], weights=x[mask][arm], minlength=n_keys))
        sums = np.stack(per_block, axis=1)  # (blocks, 6) in SUMS' order
        counts_a = np.bincount(index[~arm_b], minlength=n_keys)
        counts_b = np.bincount(index[arm_b], minlength=n_keys)
        present = (counts_a + counts_b) > 0
        for m, start, day in wanted:
            rows_m = np.flatnonzero(present & (block_month == m))
            if not len(rows_m):
                continue
            s = sums[rows_m]
            # (sums.T @ draws).T: 3x faster than draws.T @ sums for these shapes (one month's blocks)
            boot = (s.T @ jobs.draws.weights[rows_m]).T  # (resamples, 6)
            moved = (s[:, _EFFICIENCY].T @ jobs.draws.swaps[rows_m]).T  # (resamples, 4)
            days = jobs.block_day[rows_m]
            row = dict(
                month=start,
                rebuild_day=day,
                subset=subset,
                grouping=grouping,
                group_value=value,
                first_day=days.min().astype(dt.date),
                last_day=days.max().astype(dt.date),
                jobs_a=int(counts_a[rows_m].sum()),
                jobs_b=int(counts_b[rows_m].sum()),
                blocks=int(np.count_nonzero((s[:, 1] > 0) | (s[:, 4] > 0))),
                paired_blocks=int(np.count_nonzero((s[:, 1] > 0) & (s[:, 4] > 0))),
            )
            total = s.sum(axis=0)
            for i, name in enumerate(SUMS):
                row[name] = float(total[i])
                row["resampled_" + name] = boot[:, i]
            for i, j in enumerate(_EFFICIENCY):
                row["swapped_" + SUMS[j]] = moved[:, i]
            rows.append(row)
    return _totals_table(rows)


def _totals_table(rows: list[dict]) -> pa.Table:
    columns = {}
    for field in TOTALS_SCHEMA:
        values = [r[field.name] for r in rows]
        if pa.types.is_list(field.type):
            flat = np.concatenate(values) if values else np.zeros(0)
            offsets = np.arange(len(values) + 1, dtype=np.int32) * (len(values[0]) if values else 0)
            columns[field.name] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.float64()))
        else:
            columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=TOTALS_SCHEMA)


def _list_matrix(table: pa.Table, name: str) -> np.ndarray:
    """A list column of equal-length lists as a (rows, length) array."""
    column = table.column(name).combine_chunks()
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return flat.reshape(len(column), -1) if len(column) else flat.reshape(0, 0)


def _all_rows(totals: pa.Table, p: ABParams) -> list[dict]:
    """The 'all' rows: each comparison's month totals summed in month order."""
    _check_columns("int_ab_totals", totals, tuple(TOTALS_SCHEMA.names))
    if not totals.num_rows:
        return []
    totals = totals.sort_by(
        [("subset", "ascending"), ("grouping", "ascending"), ("group_value", "ascending"), ("month", "ascending")]
    )
    keys = list(zip(*(totals.column(c).to_pylist() for c in ("subset", "grouping", "group_value"))))
    first = totals.column("first_day").to_pylist()
    last = totals.column("last_day").to_pylist()
    counts = {c: totals.column(c).to_numpy() for c in ("jobs_a", "jobs_b", "blocks", "paired_blocks")}
    sums = np.stack([totals.column(c).to_numpy() for c in SUMS], axis=1)
    boot = np.stack([_list_matrix(totals, "resampled_" + c) for c in SUMS], axis=1)  # (rows, 6, resamples)
    moved = np.stack([_list_matrix(totals, "swapped_" + SUMS[j]) for j in _EFFICIENCY], axis=1)
    out = []
    i = 0
    while i < len(keys):
        j = i
        while j < len(keys) and keys[j] == keys[i]:
            j += 1
        s, b, mv = sums[i].copy(), boot[i].copy(), moved[i].copy()
        for k in range(i + 1, j):  # month by month: the same order in every build
            s += sums[k]
            b += boot[k]
            mv += moved[k]
        blocks, paired = int(counts["blocks"][i:j].sum()), int(counts["paired_blocks"][i:j].sum())
        eff = result_from_totals(Totals(s[_EFFICIENCY], b[_EFFICIENCY], mv, blocks, paired), min_blocks=p.min_blocks)
        cpw = result_from_totals(
            Totals(s[_CPU_PER_WALL], b[_CPU_PER_WALL], np.zeros_like(mv), blocks, paired),
            min_blocks=p.min_blocks,
            permutation=False,
        )
        subset, grouping, value = keys[i]
        out.append(
            _row(
                p,
                subset,
                grouping,
                value,
                "all",
                min(first[i:j]),
                max(last[i:j]) + dt.timedelta(days=1),
                int(counts["jobs_a"][i:j].sum()),
                int(counts["jobs_b"][i:j].sum()),
                s,
                eff,
                cpw,
            )
        )
        i = j
    return out


def _row(p: ABParams, subset, grouping, value, grain, start, end, jobs_a, jobs_b, seconds, eff, cpw) -> dict:
    """One row of the mart from a comparison's counts, its six sums (SUMS' order) and results."""
    cpu_a, cw_a, wall_a, cpu_b, cw_b, wall_b = (float(x) / 3600 for x in seconds)
    reasons = []
    for arm, j, h in (("A", jobs_a, cw_a), ("B", jobs_b, cw_b)):
        if j < p.min_jobs:
            reasons.append(f"arm {arm} has {j} jobs (< {p.min_jobs})")
        if h < p.min_core_hours:
            reasons.append(f"arm {arm} has {h:.1f} core-hours (< {p.min_core_hours:g})")
    if eff.paired_blocks < p.min_blocks:
        reasons.append(f"{eff.paired_blocks} {p.block}s with both arms (< {p.min_blocks})")
    enough = not reasons
    if not enough:
        conclusion = "insufficient data"
    elif eff.ci_low is not None and eff.ci_low > 0:
        conclusion = "B higher"
    elif eff.ci_high is not None and eff.ci_high < 0:
        conclusion = "A higher"
    else:
        conclusion = "no significant difference"
    return dict(
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
        block=p.block,
        blocks=eff.blocks,
        paired_blocks=eff.paired_blocks,
        enough_data=enough,
        warning="; ".join(reasons) or None,
        conclusion=conclusion,
    )


def ab_uncertainty(
    job_efficiency: pa.Table,
    cache_hourly: pa.Table,
    params: ABParams | None = None,
    periods_from: dt.date | None = None,
    periods_until: dt.date | None = None,
    totals: pa.Table | None = None,
) -> pa.Table:
    """The rows of marts.ab_uncertainty (schema SCHEMA) from the rows of the two marts.

    'all' rows: from ``totals`` (the rows of int_ab_totals, every month) when given, else from
    ab_totals over the jobs passed (which must then be all of them). Week and day rows: from
    the jobs. ``periods_from`` / ``periods_until`` (an incremental build): only the week and day
    rows whose last day is on or after ``periods_from`` and before ``periods_until`` are
    computed; the jobs of those weeks are enough.
    """
    p = params or ABParams()
    if totals is None:
        totals = ab_totals(job_efficiency, cache_hourly, p)
    rows = _all_rows(totals, p)
    jobs = _prepare(job_efficiency, cache_hourly, p)
    n_keys = len(jobs.all_keys)

    def wanted(end: dt.date) -> bool:
        last = end - dt.timedelta(days=1)
        return (periods_from is None or last >= periods_from) and (periods_until is None or last < periods_until)

    def compare(subset, grouping, value, grain, start, end, mask):
        index, arm_b = jobs.block_index[mask], jobs.is_b[mask]
        present = np.bincount(index, minlength=n_keys) > 0
        keys = jobs.all_keys[present]

        def per_block(den: np.ndarray) -> list[np.ndarray]:
            """num_a, den_a, num_b, den_b per block with jobs (as blocks_from_jobs sums them)."""
            out = []
            for arm in (~arm_b, arm_b):
                for x in (jobs.cpu, den):
                    out.append(np.bincount(index[arm], weights=x[mask][arm], minlength=n_keys)[present])
            return out

        eff = ab_test(*per_block(jobs.core_wall), seed=p.seed, min_blocks=p.min_blocks, keys=keys, draws=jobs.draws)
        cpw = ab_test(
            *per_block(jobs.wall), seed=p.seed, min_blocks=p.min_blocks, permutation=False, keys=keys, draws=jobs.draws
        )
        m_a, m_b = mask & ~jobs.is_b, mask & jobs.is_b
        seconds = [x[m].sum() for m in (m_a, m_b) for x in (jobs.cpu, jobs.core_wall, jobs.wall)]
        rows.append(
            _row(p, subset, grouping, value, grain, start, end, int(m_a.sum()), int(m_b.sum()), seconds, eff, cpw)
        )

    for subset, grouping, label, gmask in _groups(jobs):
        for w in sorted(set(jobs.week[gmask].tolist())):
            w = _date(w)
            if wanted(w + dt.timedelta(days=7)):
                compare(
                    subset,
                    grouping,
                    label,
                    "week",
                    w,
                    w + dt.timedelta(days=7),
                    gmask & (jobs.week == np.datetime64(w)),
                )
        if grouping == "site":  # daily rows for the site only: the time series of the report
            for d in sorted(set(jobs.day[gmask].tolist())):
                d = _date(d)
                if wanted(d + dt.timedelta(days=1)):
                    compare(
                        subset,
                        grouping,
                        label,
                        "day",
                        d,
                        d + dt.timedelta(days=1),
                        gmask & (jobs.day == np.datetime64(d)),
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


TOTALS_SCHEMA = pa.schema(
    [
        ("month", pa.date32()),
        ("rebuild_day", pa.date32()),
        ("subset", pa.string()),
        ("grouping", pa.string()),
        ("group_value", pa.string()),
        ("first_day", pa.date32()),
        ("last_day", pa.date32()),
        ("jobs_a", pa.int64()),
        ("jobs_b", pa.int64()),
        ("blocks", pa.int64()),
        ("paired_blocks", pa.int64()),
        *[(name, pa.float64()) for name in SUMS],
        *[("resampled_" + name, pa.list_(pa.float64())) for name in SUMS],
        *[("swapped_" + SUMS[j], pa.list_(pa.float64())) for j in _EFFICIENCY],
    ]
)


#: The dbt vars the model's config passes as ABParams' fields (ab_uncertainty.yml, ab_params).
AB_PARAM_VARS = {
    "arm_a": "arm_a",
    "arm_b": "arm_b",
    "ab_block": "block",
    "ab_seed": "seed",
    "ab_min_jobs": "min_jobs",
    "ab_min_core_hours": "min_core_hours",
    "ab_min_blocks": "min_blocks",
    "high_hit_ratio": "high_hit_ratio",
}


def ab_params_from_vars(dbt_vars: dict[str, Any]) -> ABParams:
    """ABParams as the dbt model takes them from a project's vars (a var not set: the default)."""
    from .dbt_window import params_from_config

    given = {field: dbt_vars[var] for var, field in AB_PARAM_VARS.items() if var in dbt_vars}
    return params_from_config(ABParams, given, "vars")


def write_ab_uncertainty(marts: Path, out: Path, params: ABParams) -> pa.Table:
    """marts.ab_uncertainty from another engine's marts folder (its job_efficiency/ and
    cache_hourly/ as Parquet, e.g. <spark.sql.warehouse.dir>/marts.db), written to ``out`` whole
    or not at all: the dbt Python model's twin for engines that cannot run it."""
    from ..warehouse.lake import read_parquet_table, write_parquet_atomically

    jobs = read_parquet_table(marts / "job_efficiency")
    cache = read_parquet_table(marts / "cache_hourly")
    table = ab_uncertainty(jobs, cache, params)
    write_parquet_atomically(table, out)
    return table
