"""tierlens.analysis: the A/B bootstrap and permutation test, and Jain's index, on plain arrays.

The statistics are a Poisson block bootstrap and a within-block arm-swap permutation test whose
draws depend only on (seed, block key): these tests check them against a slow reference written
here block by block, check that a block's draws do not depend on which other blocks are drawn
(what makes partial totals add up), and that the interval holds the point estimate, shrinks with
more data and covers a known true difference at about its stated rate over repeated seeds, and
that identical arms get a large p-value and different arms a small one.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from tierlens.analysis import ab_test, blocks_from_jobs, jain_index
from tierlens.analysis.ab import resamples


def synthetic_jobs(rng: np.random.Generator, blocks: int, jobs_per_block: int, eff_a: float, eff_b: float):
    """Jobs in hourly blocks, half in each arm; per-job efficiency ~ N(eff, 0.15), core-wall ~ U."""
    n = blocks * jobs_per_block
    block = np.repeat(np.arange(blocks), jobs_per_block)
    is_b = rng.random(n) < 0.5
    core_wall = rng.uniform(1800, 36000, n)
    eff = rng.normal(np.where(is_b, eff_b, eff_a), 0.15)
    return block, is_b, eff * core_wall, core_wall


def test_blocks_from_jobs_sums_per_block_and_arm():
    na, da, nb, db = blocks_from_jobs(
        ["h1", "h1", "h2", "h2", "h2"], [False, True, False, False, True], [1, 2, 3, 4, 5], [10, 20, 30, 40, 50]
    )
    assert na.tolist() == [1, 7] and da.tolist() == [10, 70]
    assert nb.tolist() == [2, 5] and db.tolist() == [20, 50]


def test_point_estimate_is_the_ratio_of_sums_and_inside_the_interval():
    rng = np.random.default_rng(7)
    block, is_b, cpu, cw = synthetic_jobs(rng, 100, 10, 0.75, 0.80)
    r = ab_test(*blocks_from_jobs(block, is_b, cpu, cw))
    expected = cpu[is_b].sum() / cw[is_b].sum() - cpu[~is_b].sum() / cw[~is_b].sum()
    assert r.difference == pytest.approx(expected)
    assert r.ci_low < r.difference < r.ci_high
    assert r.blocks == r.paired_blocks == 100
    assert r.p_value < 0.01


M64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _uniform(seed: int, key: int, r: int, stream: int) -> float:
    h = _splitmix64(_splitmix64(_splitmix64(seed) ^ (key & M64)) ^ (2 * r + stream))
    return (h >> 11) / 2.0**53


def _poisson1(u: float) -> int:
    """The Poisson(1) quantile of u, by the textbook inversion."""
    k, p = 0, math.exp(-1.0)
    cdf = p
    while u >= cdf and k < 19:
        k += 1
        p /= k
        cdf += p
    return k


def _reference(na, da, nb, db, keys, seed, r):
    """The Poisson bootstrap and arm-swap test spelled out resample by resample, block by block."""
    boot, null = [], []
    for i in range(r):
        t = [0.0, 0.0, 0.0, 0.0]
        u = [0.0, 0.0, 0.0, 0.0]
        for b, k in enumerate(keys):
            w = _poisson1(_uniform(seed, k, i, 0))
            for j, x in enumerate((na[b], da[b], nb[b], db[b])):
                t[j] += w * x
            swap = _uniform(seed, k, i, 1) < 0.5
            a_b = (nb[b], db[b], na[b], da[b]) if swap else (na[b], da[b], nb[b], db[b])
            for j, x in enumerate(a_b):
                u[j] += x
        boot.append(t[2] / t[3] - t[0] / t[1])
        null.append(u[2] / u[3] - u[0] / u[1])
    diff = sum(nb) / sum(db) - sum(na) / sum(da)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    p = (1 + sum(abs(x) >= abs(diff) * (1 - 1e-12) for x in null)) / (1 + r)
    return lo, hi, p


def test_bootstrap_and_permutation_equal_a_slow_reference():
    rng = np.random.default_rng(21)
    block, is_b, cpu, cw = synthetic_jobs(rng, 40, 5, 0.75, 0.78)
    sums = blocks_from_jobs(block, is_b, cpu, cw)
    keys = np.arange(40) * 3 + 490_000  # epoch hours, not positions
    keys[0] = -5  # a key before 1970 too
    r = ab_test(*sums, keys=keys, seed=9, n_resamples=199)
    lo, hi, p = _reference(*sums, keys.tolist(), 9, 199)
    assert r.ci_low == pytest.approx(lo, rel=1e-9)
    assert r.ci_high == pytest.approx(hi, rel=1e-9)
    assert r.p_value == pytest.approx(p)


def test_a_blocks_draws_do_not_depend_on_the_other_blocks():
    everything = resamples([5, 1, 9, 3, 7], seed=4, n_resamples=50)
    some = resamples([9, 3], seed=4, n_resamples=50)
    rows = everything.rows([3, 9])
    assert (everything.weights[rows] == some.weights).all() and (everything.swaps[rows] == some.swaps).all()
    # so the totals of a set of blocks are the sum of its parts' totals
    x = np.arange(5, dtype=float) + 1.0
    whole = everything.weights.T.astype(float) @ x
    parts = everything.weights[:2].T.astype(float) @ x[:2] + everything.weights[2:].T.astype(float) @ x[2:]
    assert np.allclose(whole, parts, rtol=1e-12)
    assert abs(everything.weights.mean() - 1.0) < 0.2 and 0.3 < everything.swaps.mean() < 0.7


def test_totals_of_days_merge_into_the_totals_of_the_whole_history():
    """What the 'all' rows need: per-day partial totals, stored, add up to the whole's result."""
    from tierlens.analysis.ab import partial_totals, result_from_totals

    rng = np.random.default_rng(31)
    block, is_b, cpu, cw = synthetic_jobs(rng, 24 * 6, 5, 0.75, 0.77)  # six days of hours
    keys = block + 480_000
    draws = resamples(keys, seed=3)
    whole = ab_test(*blocks_from_jobs(keys, is_b, cpu, cw), keys=np.unique(keys), draws=draws)
    days = []
    for d in range(6):
        m = (block // 24) == d
        days.append(partial_totals(*blocks_from_jobs(keys[m], is_b[m], cpu[m], cw[m]), np.unique(keys[m]), draws))
    merged = result_from_totals(sum(days[1:], days[0]))
    assert (merged.blocks, merged.paired_blocks) == (whole.blocks, whole.paired_blocks)
    assert merged.blocks == 144 and merged.paired_blocks == int(sum(d.paired for d in days))
    for field in ("difference", "ci_low", "ci_high"):
        assert getattr(merged, field) == pytest.approx(getattr(whole, field), rel=1e-9)
    assert merged.p_value == whole.p_value


def test_arms_different_by_construction_give_a_small_p_value():
    rng = np.random.default_rng(8)
    block, is_b, cpu, cw = synthetic_jobs(rng, 60, 6, 0.70, 0.80)
    r = ab_test(*blocks_from_jobs(block, is_b, cpu, cw))
    assert r.p_value <= 2 / 1000 and r.ci_low > 0


def test_interval_shrinks_with_more_data():
    rng = np.random.default_rng(11)
    small = ab_test(*blocks_from_jobs(*synthetic_jobs(rng, 30, 5, 0.75, 0.78)))
    large = ab_test(*blocks_from_jobs(*synthetic_jobs(rng, 600, 5, 0.75, 0.78)))
    width_small = small.ci_high - small.ci_low
    width_large = large.ci_high - large.ci_low
    # 20 x the blocks: about sqrt(20) ~ 4.5 x narrower
    assert width_large < width_small / 3


def test_same_seed_same_numbers():
    sums = blocks_from_jobs(*synthetic_jobs(np.random.default_rng(3), 50, 4, 0.7, 0.72))
    assert ab_test(*sums, seed=5) == ab_test(*sums, seed=5)


def test_interval_covers_a_known_difference_at_about_95_percent():
    true_diff = 0.04
    covered = 0
    reps = 200
    for seed in range(reps):
        rng = np.random.default_rng(1000 + seed)
        block, is_b, cpu, cw = synthetic_jobs(rng, 60, 6, 0.75, 0.75 + true_diff)
        # per-job efficiency is independent of core_wall, so the ratio of expected sums is the mean
        r = ab_test(*blocks_from_jobs(block, is_b, cpu, cw), seed=seed, n_resamples=499)
        covered += r.ci_low <= true_diff <= r.ci_high
    rate = covered / reps
    # 95 % nominal; with 200 repetitions the binomial sd is 1.5 points: allow 0.89 .. 0.99
    assert 0.89 <= rate <= 0.99, rate


def test_identical_arms_give_a_large_p_value_and_an_interval_around_zero():
    rng = np.random.default_rng(5)
    block, _, cpu, cw = synthetic_jobs(rng, 80, 4, 0.75, 0.75)
    # arm B is an exact copy of arm A, block by block
    sums = blocks_from_jobs(
        np.concatenate([block, block]),
        np.concatenate([np.zeros(len(block), bool), np.ones(len(block), bool)]),
        np.concatenate([cpu, cpu]),
        np.concatenate([cw, cw]),
    )
    r = ab_test(*sums)
    assert r.difference == pytest.approx(0.0, abs=1e-12)
    assert r.p_value > 0.9
    assert r.ci_low <= 0.0 <= r.ci_high


def test_p_values_of_equal_arms_are_rarely_small():
    small = 0
    for seed in range(60):
        rng = np.random.default_rng(2000 + seed)
        r = ab_test(*blocks_from_jobs(*synthetic_jobs(rng, 40, 6, 0.75, 0.75)), seed=seed, n_resamples=299)
        small += r.p_value < 0.05
    assert small <= 9  # ~5 % of 60 = 3 expected


def test_too_little_data_gives_no_interval():
    r = ab_test([1.0], [2.0], [1.0], [2.0])
    assert r.difference == pytest.approx(0.0) and r.ci_low is None and r.p_value is None
    r = ab_test([1.0, 2.0], [2.0, 2.0], [0.0, 0.0], [0.0, 0.0])  # no arm B at all
    assert r.difference is None


def test_fast_on_a_demo_month_of_jobs():
    rng = np.random.default_rng(1)
    block, is_b, cpu, cw = synthetic_jobs(rng, 720, 107, 0.76, 0.83)  # ~77k jobs, 720 hours
    start = time.perf_counter()
    r = ab_test(*blocks_from_jobs(block, is_b, cpu, cw))
    assert time.perf_counter() - start < 5.0
    assert r.ci_low < 0.07 < r.ci_high or abs(r.difference - 0.07) < 0.01


def test_jain_index_by_hand():
    assert jain_index([10, 10, 10, 10]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([8, 9, 10, 11]) == pytest.approx(38**2 / (4 * (64 + 81 + 100 + 121)))
    assert jain_index([]) is None
