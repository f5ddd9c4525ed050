"""int_ab_totals' month totals: stored, rebuilt for a late job, and summed, they give the same
'all' rows as the bootstrap and permutation test run at once over every block of the history.

Plain Arrow tables shaped like marts.job_efficiency and marts.cache_hourly (no dbt build: the
dbt model is analysis.uncertainty.ab_totals plus the window test_incremental_equivalence.py
checks). The reference is analysis.ab.ab_test over all the jobs' hour blocks, computed here
from the jobs, not from any total.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tierlens.analysis import ab_test, blocks_from_jobs
from tierlens.analysis.ab import block_keys
from tierlens.analysis.change import ChangeParams
from tierlens.analysis.uncertainty import ABParams, ab_totals, ab_uncertainty, months_to_rebuild

UTC = dt.timezone.utc
START = dt.datetime(2025, 1, 20, tzinfo=UTC)  # three calendar months: January to March
HOURS = 24 * 45


def _jobs(rng: np.random.Generator, hours: np.ndarray, storage: list[str] | None = None) -> dict:
    n = len(hours)
    end = [START + dt.timedelta(hours=int(h), minutes=int(m)) for h, m in zip(hours, rng.integers(0, 60, n))]
    day = [e.date() for e in end]
    core_wall = rng.uniform(1800, 36000, n).round()
    is_b = rng.random(n) < 0.5
    cpu = (np.clip(rng.normal(np.where(is_b, 0.78, 0.74), 0.15), 0.01, 1) * core_wall).round()
    return dict(
        ab_arm=["B" if b else "A" for b in is_b],
        end_time=end,
        day=day,
        week=[d - dt.timedelta(days=d.weekday()) for d in day],
        storage_type=storage or list(rng.choice(["nfs", "xcache"], n)),
        job_class=list(rng.choice(["analysis", "production"], n)),
        account=[None if x == "none" else x for x in rng.choice(["atlas1", "cms2", "none"], n)],
        vo=list(rng.choice(["atlas", "cms"], n)),
        cpu_seconds=cpu,
        wall_seconds=(core_wall / 4).round(),
        core_wall_seconds=core_wall,
    )


def _table(columns: dict) -> pa.Table:
    return pa.table(
        {
            **{k: v for k, v in columns.items() if k not in ("end_time", "day", "week")},
            "end_time": pa.array(columns["end_time"], pa.timestamp("us", tz="UTC")),
            "day": pa.array(columns["day"], pa.date32()),
            "week": pa.array(columns["week"], pa.date32()),
        }
    )


def _cache(rng: np.random.Generator) -> pa.Table:
    hours = [START + dt.timedelta(hours=h) for h in range(HOURS)]
    hit = rng.uniform(0.5, 1.0, HOURS)
    return pa.table(
        {
            "hour": pa.array(hours, pa.timestamp("us", tz="UTC")),
            "gb_delivered_from_cache": hit * 10,
            "gb_staged_in": (1 - hit) * 10,
            "gb_bypassed": np.zeros(HOURS),
        }
    )


def _until(table: pa.Table, day: dt.date | None, column: str = "day") -> pa.Table:
    if day is None:
        return table
    return table.filter(pc.greater_equal(table.column(column), pa.scalar(day, pa.date32())))


def _in_window(table: pa.Table, first: dt.date, stop: dt.date | None) -> pa.Array:
    day = table.column("rebuild_day")
    inside = pc.greater_equal(day, pa.scalar(first, pa.date32()))
    return inside if stop is None else pc.and_(inside, pc.less(day, pa.scalar(stop, pa.date32())))


def _replace_days(
    stored: pa.Table, rebuilt: pa.Table, first: dt.date, stop: dt.date | None = None, row_key: bool = True
) -> pa.Table:
    """The strategy replace_days on rebuild_day with row_key [month], as macros/incremental.sql
    runs it: delete the window's rows and every row of a month the run rebuilt, insert the
    rebuilt rows of the window."""
    new = rebuilt.filter(_in_window(rebuilt, first, stop))
    gone = pc.invert(_in_window(stored, first, stop))
    if row_key:
        gone = pc.and_(gone, pc.invert(pc.is_in(stored.column("month"), value_set=new.column("month"))))
    return pa.concat_tables([stored.filter(gone), new])


def _reference(jobs: pa.Table, storage_type: str | None = None):
    """ab_test over every hour block of the jobs at once (the old computation of an 'all' row)."""
    if storage_type is not None:
        jobs = jobs.filter(pc.equal(jobs.column("storage_type"), storage_type))
    hours = jobs.column("end_time").to_numpy().astype("datetime64[h]").astype(np.int64)
    is_b = np.array(jobs.column("ab_arm").to_pylist()) == "B"
    cpu, cw = jobs.column("cpu_seconds").to_numpy(), jobs.column("core_wall_seconds").to_numpy()
    return ab_test(*blocks_from_jobs(hours, is_b, cpu, cw), keys=block_keys(hours), min_blocks=10), int(is_b.sum())


def _all_row(rows: pa.Table, grouping: str, value: str) -> dict:
    found = [
        r
        for r in rows.to_pylist()
        if (r["subset"], r["grouping"], r["group_value"], r["period_grain"]) == ("all", grouping, value, "all")
    ]
    assert len(found) == 1
    return found[0]


def test_all_rows_from_stored_month_totals_with_a_late_job_equal_the_bootstrap_over_every_block():
    rng = np.random.default_rng(5)
    cache = _cache(rng)
    params = ABParams()
    early = _table(_jobs(rng, np.sort(rng.integers(0, 24 * 38, 3000))))  # to 27 February
    # the first build: every month
    stored = ab_totals(early, cache, params)
    assert sorted(set(stored.column("month").to_pylist())) == [dt.date(2025, m, 1) for m in (1, 2)]
    # later: jobs to 5 March, and one late job of arm B ending on 25 January, a closed month
    late_hour = np.array([24 * 5 + 3])
    late = _table(_jobs(rng, late_hour, storage=["nfs"]))
    newer = _table(_jobs(rng, np.sort(rng.integers(24 * 38, HOURS, 700))))
    jobs = pa.concat_tables([early, late, newer])
    newest = max(jobs.column("day").to_pylist())
    # an incremental run whose window reaches back to the late job's day rebuilds January whole
    first = late.column("day")[0].as_py()
    months_from, _ = months_to_rebuild(first, None, newest)
    rebuilt = ab_totals(_until(jobs, months_from), _until(cache, None), params, first, None, newest)
    stored = _replace_days(stored, rebuilt, first)
    assert set(rebuilt.column("month").to_pylist()) == {dt.date(2025, m, 1) for m in (1, 2, 3)}
    # the stored totals are those of a full rebuild, to the bit
    full = ab_totals(jobs, cache, params)
    key = [(c, "ascending") for c in ("month", "subset", "grouping", "group_value")]
    assert stored.sort_by(key).equals(full.sort_by(key))

    # (the week and day rows of the last day only: they do not come from the totals)
    rows = ab_uncertainty(jobs, cache, params, newest, None, totals=stored)
    for grouping, value, storage_type in (("site", "all jobs", None), ("storage_type", "nfs", "nfs")):
        row = _all_row(rows, grouping, value)
        reference, jobs_b = _reference(jobs, storage_type)
        assert row["jobs_b"] == jobs_b
        assert (row["blocks"], row["paired_blocks"]) == (reference.blocks, reference.paired_blocks)
        assert row["efficiency_difference"] == pytest.approx(reference.difference, rel=1e-12)
        assert row["efficiency_ci_low"] == pytest.approx(reference.ci_low, rel=1e-12)
        assert row["efficiency_ci_high"] == pytest.approx(reference.ci_high, rel=1e-12)
        assert row["efficiency_p_value"] == reference.p_value
        assert row["period_start"] == dt.date(2025, 1, 20) and row["period_end"] == newest + dt.timedelta(days=1)
    # the late job moved the site's 'all' row: it is in it
    without_late, _ = _reference(pa.concat_tables([early, newer]))
    assert _all_row(rows, "site", "all jobs")["efficiency_difference"] != pytest.approx(
        without_late.difference, rel=1e-12
    )


def test_a_back_fill_day_by_day_leaves_one_row_per_month_equal_to_a_full_build():
    """`tierlens transform --backfill ... --days 1` from an empty warehouse: each chunk's
    job_efficiency holds the days up to the chunk, so the newest month's rebuild_day is the
    chunk's day and moves on with every chunk, out of the next chunk's window."""
    rng = np.random.default_rng(11)
    cache = _cache(rng)
    params = ABParams()
    # ten days across the end of January, every one with jobs (the month's last day too)
    jobs = _table(_jobs(rng, np.sort(rng.integers(24 * 7, 24 * 17, 800))))
    days = sorted(set(jobs.column("day").to_pylist()))
    assert days == [dt.date(2025, 1, 27) + dt.timedelta(days=i) for i in range(10)]
    key = [(c, "ascending") for c in ("month", "subset", "grouping", "group_value")]
    stored = {True: ab_totals(jobs.slice(0, 0), cache, params), False: ab_totals(jobs.slice(0, 0), cache, params)}
    for day in days:
        stop = day + dt.timedelta(days=1)
        held = jobs.filter(pc.less(jobs.column("day"), pa.scalar(stop, pa.date32())))
        midnight = pa.scalar(dt.datetime.combine(stop, dt.time(), UTC), cache.column("hour").type)
        held_cache = cache.filter(pc.less(cache.column("hour"), midnight))
        newest = max(held.column("day").to_pylist())
        months = months_to_rebuild(day, stop, newest)
        assert months is not None and months[0] <= day < months[1]  # the chunk's month, whole
        read = held.filter(pc.greater_equal(held.column("day"), pa.scalar(months[0], pa.date32())))
        rebuilt = ab_totals(read, held_cache, params, day, stop, newest)
        for row_key in stored:
            stored[row_key] = _replace_days(stored[row_key], rebuilt, day, stop, row_key)
    full = ab_totals(jobs, cache, params)
    assert stored[True].sort_by(key).equals(full.sort_by(key))
    # without the row key every chunk's month row stays beside the next one's
    assert stored[False].num_rows > full.num_rows


@pytest.mark.parametrize(
    ("make", "var"),
    [(lambda b: ABParams(block=b), "ab_block"), (lambda b: ChangeParams(block=b), "change_block")],
)
def test_a_block_other_than_an_hour_or_a_day_is_refused_naming_its_var(make, var):
    with pytest.raises(ValueError, match=f"var {var} must be 'hour' or 'day', not 'week'"):
        make("week")
    assert make("day").block == "day"
