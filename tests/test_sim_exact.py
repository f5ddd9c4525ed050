"""Simulator exactness: hand-made traces with known answers, and libCacheSim's own LRU/FIFO."""

from __future__ import annotations

import numpy as np
import pytest

from tierlens.simulator import CacheParams, Trace, mrc, read_oracle, simulate, write_oracle
from tierlens.simulator.trace import ORACLE_DTYPE, next_access


def make(objs, sizes, reads=None, times=None, jobs=None) -> Trace:
    objs = np.asarray(objs, np.int32)
    sizes = np.asarray(sizes, np.int64)
    size = sizes[objs]
    n = len(objs)
    return Trace(
        np.arange(n, dtype=np.float64) * 60 + 1.7e9 if times is None else times,
        objs,
        size,
        size.copy() if reads is None else np.asarray(reads, np.int64),
        np.full(n, -1) if jobs is None else jobs,
    )


def zipf_trace(n=30_000, n_obj=2_000, seed=7, big=False) -> Trace:
    rng = np.random.default_rng(seed)
    obj = (rng.zipf(1.1, n) - 1) % n_obj
    sizes = rng.integers(1_000, 100_000, n_obj)
    if big:
        sizes[:3] = 5 * 2**30  # larger than the cache
    return make(obj, sizes)


# --------------------------------------------------------------------- known answers


def test_lru_and_fifo_by_hand():
    # unit sizes, capacity 2: a b a c b a
    t = make([0, 1, 0, 2, 1, 0], [1, 1, 1])
    lru = simulate(t, CacheParams("lru", 2))
    fifo = simulate(t, CacheParams("fifo", 2))
    # LRU: a m, b m, a h, c m (evict b), b m (evict a), a m  -> 1 hit
    assert lru.hits == 1
    # FIFO: a m, b m, a h, c m (evict a), b h, a m (evict b) -> 2 hits
    assert fifo.hits == 2
    assert lru.bytes_staged == 5 and fifo.bytes_staged == 4


def test_belady_by_hand():
    # capacity 2, a b c a b: MIN keeps a, b (c's next use is never) -> 2 hits
    t = make([0, 1, 2, 0, 1], [1, 1, 1])
    assert simulate(t, CacheParams("belady", 2)).hits == 2
    assert simulate(t, CacheParams("lru", 2)).hits == 0


def test_byte_capacity_and_partial_reads():
    # a (6) b (5) in a 10-byte cache: b evicts a; partial reads deliver only what was read
    t = make([0, 1, 1, 0], [6, 5], reads=[6, 5, 2, 3])
    r = simulate(t, CacheParams("lru", 10))
    assert r.hits == 1 and r.bytes_from_cache == 2 and r.bytes_staged == 6 + 5 + 6
    assert r.bytes_requested == 16


def test_files_over_4_gib_do_not_overflow():
    big = 5 * 2**30 + 7
    t = make([0, 0, 1, 0], [big, 2**33], reads=[big, big, 2**33, big])
    r = simulate(t, CacheParams("lru", 2**34))
    assert r.hits == 2 and r.bytes_from_cache == 2 * big
    assert r.bytes_staged == big + 2**33
    assert r.hourly["bytes_from_cache"].to_pylist()[0] == 2 * big
    curve = mrc(t, np.array([2**34]))
    assert curve["bytes_from_cache"].to_pylist() == [2 * big]


def test_oracle_round_trip_and_large_sizes(tmp_path):
    t = make([0, 1, 0, 2, 1], [10, 20, 30])
    path = tmp_path / "t.oracleGeneral"
    assert write_oracle(t, path) == 5
    rec = np.fromfile(path, ORACLE_DTYPE)
    assert path.stat().st_size == 5 * 24
    assert rec["next"].tolist() == [2, 4, -1, -1, -1]
    assert next_access(t.obj).tolist() == [2, 4, -1, -1, -1]
    back = read_oracle(path)
    assert back.obj.tolist() == t.obj.tolist() and back.size.tolist() == t.size.tolist()
    huge = make([0, 1], [5 * 2**30, 10])
    with pytest.raises(ValueError, match="size unit"):
        write_oracle(huge, tmp_path / "h.bin")
    write_oracle(huge, tmp_path / "h.bin", size_unit=4096)
    assert read_oracle(tmp_path / "h.bin", size_unit=4096).size[0] == 5 * 2**30


def test_mrc_equals_lru_at_every_size():
    t = zipf_trace(8_000, 500)
    osize = np.zeros(500, np.int64)
    np.maximum.at(osize, t.obj, t.size)
    sizes = np.unique(np.geomspace(osize.max(), osize.sum(), 12).astype(np.int64))
    curve = mrc(t, sizes)
    for c, hits, hbytes in zip(sizes, curve["hits"].to_pylist(), curve["bytes_from_cache"].to_pylist()):
        r = simulate(t, CacheParams("lru", int(c)))
        assert (r.hits, r.bytes_from_cache) == (hits, hbytes)


# --------------------------------------------------------------------- libCacheSim

lcs = pytest.importorskip("libcachesim")


def _cachesim(path, policy, cap, trace):
    """libCacheSim on the oracleGeneral file: exact hit and byte-hit counts, request by request."""
    cls = {"lru": lcs.LRU, "fifo": lcs.FIFO}[policy]
    cache = cls(cap)
    req = lcs.Request()
    hits = hit_bytes = 0
    rec = np.fromfile(path, ORACLE_DTYPE)
    for o, s in zip(rec["obj"].tolist(), rec["size"].tolist()):
        req.obj_id = o
        req.obj_size = s
        if cache.get(req):
            hits += 1
            hit_bytes += s
    # and its own trace replay (miss ratios, as cachesim prints them)
    mr, bmr = cls(cap).process_trace(lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE))
    n, total = len(rec), int(rec["size"].astype(np.int64).sum())
    assert round(n * (1 - mr)) == hits and abs(total * (1 - bmr) - hit_bytes) < 1e-6 * total + 1
    return hits, hit_bytes


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("frac", [0.01, 0.1, 0.5])
def test_equal_to_libcachesim(tmp_path, policy, frac):
    t = zipf_trace(20_000, 1_500, seed=int(frac * 100))
    path = tmp_path / "zipf.oracleGeneral"
    write_oracle(t, path)
    osize = np.zeros(t.n_objects, np.int64)
    np.maximum.at(osize, t.obj, t.size)
    cap = int(osize.sum() * frac)
    ours = simulate(read_oracle(path), CacheParams(policy, cap, whole_object=True))
    assert (ours.hits, ours.bytes_from_cache) == _cachesim(path, policy, cap, t)


def test_equal_to_libcachesim_with_files_larger_than_cache(tmp_path):
    # files > the cache bypass it in both; sizes in KiB units to fit oracleGeneral's uint32
    t = zipf_trace(10_000, 800, seed=3, big=True)
    path = tmp_path / "big.oracleGeneral"
    write_oracle(t, path, size_unit=1024)
    back = read_oracle(path)  # sizes in KiB, as libCacheSim sees them
    for policy in ("lru", "fifo"):
        ours = simulate(back, CacheParams(policy, 4 * 2**20, whole_object=True))
        assert (ours.hits, ours.bytes_from_cache) == _cachesim(path, policy, 4 * 2**20, back)


def test_the_kernels_compile_cache_follows_every_module_of_their_folder(tmp_path):
    """numba stamps a cached compile with its own file only; a policy compiles skeleton.py's steps
    into itself, so the kernels' stamp carries the digest of the whole folder: an edit of
    skeleton.py changes it and numba recompiles instead of loading the old steps."""
    import shutil
    from pathlib import Path

    from tierlens.simulator import kernels
    from tierlens.simulator.kernels import _cache

    folder = Path(_cache.__file__).parent
    copy = tmp_path / "kernels"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _cache.sources_digest(copy)
    skeleton = copy / "skeleton.py"
    skeleton.write_text(skeleton.read_text().replace("out[1, h] += nbytes", "out[1, h] += 2 * nbytes"))
    assert _cache.sources_digest(copy) != before
    for kernel in (kernels.lru_kernel, kernels.belady_kernel, kernels.slac_kernel):
        locator = kernel._cache._impl._locator  # the one numba chose when the kernel was decorated
        assert isinstance(locator, _cache._FolderStamped)
        assert locator.get_source_stamp()[1] == _cache.sources_digest(folder) == before
