"""Simulator properties: LRU's stack property, Belady's bound, SLAC's stage-in cap."""

from __future__ import annotations

import numpy as np
import pytest

from tierlens.simulator import POLICIES, CacheParams, Trace, simulate


def random_trace(seed, n=4_000, n_obj=300, unit=False, hours=48.0, jobs=False) -> Trace:
    rng = np.random.default_rng(seed)
    obj = ((rng.zipf(1.2, n) - 1) % n_obj).astype(np.int32)
    sizes = np.ones(n_obj, np.int64) if unit else rng.integers(1, 5 * 2**30, n_obj)  # up to 5 GiB
    size = sizes[obj]
    read = size if unit else (size * rng.uniform(0.05, 1.0, n)).astype(np.int64)
    t = 1.7e9 + np.sort(rng.uniform(0, hours * 3600, n))
    job = (np.arange(n) // 7).astype(np.int32) if jobs else np.full(n, -1, np.int32)
    return Trace(t, obj, size, read, job)


@pytest.mark.parametrize("seed", range(3))
def test_lru_stack_property(seed):
    t = random_trace(seed)
    total = int(np.unique(t.obj, return_index=True)[1].size)
    caps = np.unique(np.geomspace(5 * 2**30, t.size.max() * total, 15).astype(np.int64))
    ratios = [simulate(t, CacheParams("lru", int(c))).hit_ratio for c in caps]
    assert all(b >= a for a, b in zip(ratios, ratios[1:])), ratios


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cap", [5, 20, 80])
def test_belady_bounds_every_online_policy(seed, cap):
    # unit sizes: Belady's MIN is optimal for hits (with variable sizes optimality is NP-hard and
    # furthest-next-use is only a heuristic, as in libCacheSim's Belady)
    t = random_trace(seed, unit=True)
    best = simulate(t, CacheParams("belady", cap)).hits
    for p in ("lru", "fifo", "lfu", "s3fifo"):
        assert simulate(t, CacheParams(p, cap)).hits <= best, p


@pytest.mark.parametrize("algo", ["slac1", "slac2", "slac3"])
@pytest.mark.parametrize("pct", [0.5, 2.0, 10.0])
def test_slac_never_exceeds_stage_in_cap(algo, pct):
    t = random_trace(11, n=20_000, hours=24 * 8, jobs=True)
    cap = int(t.size.max() * 30)
    r = simulate(t, CacheParams(algo, cap, min_reads=3, stage_cap_pct=pct))
    staged = r.hourly["bytes_staged"].to_numpy()
    assert staged.max() <= cap * pct / 100
    assert r.bytes_staged > 0 and r.hits > 0
    # SLAC stages in only at its ticks, never on a miss: a cache-hit needs an earlier stage-in
    assert r.bytes_from_cache <= r.bytes_requested


def test_slac_cache_grows_with_time_and_min_reads_filters():
    t = random_trace(5, n=20_000, hours=24 * 8)
    cap = int(t.size.max() * 30)
    loose = simulate(t, CacheParams("slac2", cap, min_reads=1, stage_cap_pct=50))
    strict = simulate(t, CacheParams("slac2", cap, min_reads=10**6, stage_cap_pct=50))
    assert strict.bytes_staged == 0 and strict.hits == 0
    assert loose.hits > 0


def test_slac3_uses_upcoming_jobs():
    # a file read once by a job that starts in the next 20 minutes, with no history at all:
    # SLAC-3 stages it in at the tick before; SLAC-2 (no history, min reads 1) cannot
    t0 = 1.7e9 - (1.7e9 % 3600)
    times = np.array([t0 + 10, t0 + 1200 + 600], np.float64)
    tr = Trace(
        times, np.array([0, 1], np.int32), np.array([100, 100]), np.array([100, 100]), np.array([0, 1], np.int32)
    )
    assert simulate(tr, CacheParams("slac3", 1000, min_reads=1, stage_cap_pct=100)).hits == 1
    assert simulate(tr, CacheParams("slac2", 1000, min_reads=1, stage_cap_pct=100)).hits == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_conserves_bytes(policy):
    t = random_trace(2, n=3_000, hours=24 * 6, jobs=True)
    r = simulate(t, CacheParams(policy, int(t.size.max() * 20), min_reads=2))
    h = r.hourly
    assert sum(h["requests"].to_pylist()) == len(t)
    assert r.hits <= len(t) and 0 <= r.bytes_from_cache <= r.bytes_requested
    assert (h["hits"].to_numpy() <= h["requests"].to_numpy()).all()
