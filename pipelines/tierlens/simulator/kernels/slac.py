"""The SLAC SSD-cache algorithms 1-3: staged in at ticks by score, never filled on demand."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .skeleton import heap_pop, heap_push, heapify, record_hit, step


class SlacTrace(NamedTuple):
    """The requests a SLAC replay reads, and the upcoming jobs' requests (algorithm 3)."""

    time: np.ndarray  # float64, seconds, ascending
    obj: np.ndarray  # int32 object id per request
    osize: np.ndarray  # int64 size per object id
    read: np.ndarray  # int64 bytes each request read
    hr: np.ndarray  # int32 hour bucket per request
    n_hours: int
    t0: float  # the first tick's start
    up_order: np.ndarray  # int64 requests ordered by their job's start (empty: no look-ahead)
    up_start: np.ndarray  # float64 their job's start


class SlacPolicy(NamedTuple):
    """One SLAC algorithm as configured (see slac_kernel for what each setting does)."""

    cap: np.int64  # bytes
    algo: int  # 1, 2 or 3
    min_reads: int
    cap_frac: float  # stage-in budget per clock hour, fraction of ``cap``
    window_s: float
    period_s: float
    n_periods: int
    tick_s: float
    assumed: float  # read fraction of a file without history (algorithm 3)


class SlacFiles(NamedTuple):
    """Per file: cnt (accesses in the window), sfrac (their summed read fractions), un (accesses
    by upcoming jobs), ver (entry version), inc (cached), osize (bytes)."""

    cnt: np.ndarray
    sfrac: np.ndarray
    un: np.ndarray
    ver: np.ndarray
    inc: np.ndarray
    osize: np.ndarray


class SlacRule(NamedTuple):
    """How a file is scored and whether it may be staged in."""

    algo: int
    min_reads: int
    max_size: np.int64
    assumed: float


class Ranking(NamedTuple):
    """A lazily cleaned min-heap of (rank, version << 32 | file); its size travels apart."""

    keys: np.ndarray  # float64
    entries: np.ndarray  # int64


@step
def _score(f, files, rule):
    if rule.algo == 1:
        return np.float64(files.cnt[f])
    sc = files.sfrac[f]
    if rule.algo == 3 and files.un[f] > 0:
        if files.cnt[f] > 0:
            sc += files.un[f] * (files.sfrac[f] / files.cnt[f])
        else:
            sc += files.un[f] * rule.assumed
    return sc


@step
def _slac_wanted(f, files, rule):
    """May ``f`` be staged in: read often enough (or by an upcoming job) and small enough."""
    return (files.cnt[f] >= rule.min_reads or files.un[f] > 0) and files.osize[f] <= rule.max_size


@step
def _slac_valid(v, files, rule, want_cached):
    f = np.int32(v & 0xFFFFFFFF)
    if (v >> 32) != files.ver[f] or files.inc[f] != want_cached:
        return False
    return want_cached or _slac_wanted(f, files, rule)


@step
def _push_ranked(heap, size, k, v, files, rule, want_cached):
    """Push entry ``v`` (version << 32 | file) at rank ``k``, cleaning the heap first when full."""
    hk, hv = heap.keys, heap.entries
    if size >= hk.shape[0]:
        m = 0
        for j in range(size):
            if _slac_valid(hv[j], files, rule, want_cached):
                hk[m] = hk[j]
                hv[m] = hv[j]
                m += 1
        heapify(hk, hv, m)
        size = m
    return heap_push(hk, hv, size, k, v)


@step
def _rerank(changed, count, end_bonus, files, rule, candidates, csz, cached, esz):
    """New versions of the entries of ``changed[:count]`` (first ending their upcoming-job bonus
    when ``end_bonus``): among the ``cached`` files by score (evicted lowest first) or among the
    ``candidates`` by -score (staged best first). Returns (csz, esz)."""
    for j in range(count):
        f = changed[j]
        if end_bonus:
            files.un[f] = 0
        files.ver[f] += 1
        v = (files.ver[f] << 32) | f
        if files.inc[f]:
            esz = _push_ranked(cached, esz, _score(f, files, rule), v, files, rule, True)
        elif _slac_wanted(f, files, rule):
            csz = _push_ranked(candidates, csz, -_score(f, files, rule), v, files, rule, False)
    return csz, esz


@step
def _mark_dirty(f, tick_no, dstamp, dirty, nd):
    """Queue ``f`` for re-scoring at this tick (once); returns the queue's new length."""
    if dstamp[f] != tick_no:
        dstamp[f] = tick_no
        dirty[nd] = f
        nd += 1
    return nd


@step
def _read_fraction(read, osize, i, f):
    fr = read[i] / osize[f]
    return fr if fr < 1.0 else 1.0


@njit(cache=True, nogil=True)
def slac_kernel(trace, policy, req_hit):
    """The SLAC SSD-cache algorithms (Yang, Hanushevsky, Mount) over ``trace`` (a SlacTrace) as
    ``policy`` (a SlacPolicy) sets them. Ticks every ``tick_s`` (3600 s for 1 and 2, 1200 s for
    3) from ``t0``:

    * history (at hourly ticks): records with time < tick enter the table; records older than
      the window leave it. Algorithm 1's window is 10 periods of 12 h aligned on period
      boundaries (the current period plus the 9 before it); 2 and 3 use the last ``window_s``.
    * score: 1, number of accesses in the window; 2, reads × mean(bytes read / file size)
      = Σ min(read/size, 1); 3, that plus, for files the jobs starting in [tick, tick + tick_s)
      will read, (their number of accesses) × (the file's mean read fraction, or ``assumed``
      for files without history).
    * candidates: files not cached with at least ``min_reads`` accesses in the window (3: or
      wanted by an upcoming job) and no larger than the hourly stage-in budget. They are staged
      in best score first while they fit the hour's remaining budget (``cap_frac`` × capacity
      per clock hour), evicting cached files of lower score (lowest first); the tick stops at
      the first candidate that does not fit the remaining budget or would have to evict a file
      scored at least as high. Staging is instantaneous at the tick.
    * requests: a request for a cached file is a hit; misses are read from the origin and never
      fill the cache.

    Both rankings are kept as lazily cleaned heaps (entries carry a per-file version), and only
    files whose score changed since the last tick are re-scored, so a tick costs
    O(changed files × log) rather than O(all files).
    """
    time, obj, osize, read, hr = trace.time, trace.obj, trace.osize, trace.read, trace.hr
    up_order, up_start, t0, n_hours = trace.up_order, trace.up_start, trace.t0, trace.n_hours
    algo, cap, tick_s = policy.algo, policy.cap, policy.tick_s
    n = obj.shape[0]
    n_obj = osize.shape[0]
    files = SlacFiles(
        np.zeros(n_obj, np.int32),
        np.zeros(n_obj, np.float64),
        np.zeros(n_obj, np.int32),
        np.zeros(n_obj, np.int64),
        np.zeros(n_obj, np.bool_),
        osize,
    )
    cnt, sfrac, un, ver, inc = files.cnt, files.sfrac, files.un, files.ver, files.inc
    dirty = np.empty(n_obj, np.int32)
    dstamp = np.full(n_obj, -1, np.int64)
    ulist = np.empty(n_obj, np.int32)
    ucount = 0
    hcap = 2 * n_obj + 1024
    candidates = Ranking(np.empty(hcap, np.float64), np.empty(hcap, np.int64))  # -score: best first
    ck, cv = candidates.keys, candidates.entries
    csz = 0
    cached = Ranking(np.empty(hcap, np.float64), np.empty(hcap, np.int64))  # score: lowest first
    ek, ev = cached.keys, cached.entries
    esz = 0
    out = np.zeros((3, n_hours), np.int64)
    used = np.int64(0)
    add_p = 0
    rem_p = 0
    up_p = 0
    n_up = up_order.shape[0]
    budget_hour = -1
    budget = np.int64(0)
    hour_cap = np.int64(cap * policy.cap_frac)
    rule = SlacRule(algo, policy.min_reads, hour_cap if hour_cap < cap else cap, policy.assumed)
    tick_no = 0
    next_tick = t0 + tick_s
    for i in range(n + 1):
        now = time[i] if i < n else time[n - 1]
        while i < n and now >= next_tick:
            T = next_tick
            tick_no += 1
            next_tick = t0 + (tick_no + 1) * tick_s
            h_idx = int((T - t0) // 3600.0)
            if h_idx >= n_hours:
                h_idx = n_hours - 1
            if h_idx != budget_hour:
                budget_hour = h_idx
                budget = hour_cap
            nd = 0
            on_hour = (tick_no * tick_s) % 3600.0 == 0.0
            if on_hour or algo != 3:
                while add_p < n and time[add_p] < T:
                    f = obj[add_p]
                    cnt[f] += 1
                    sfrac[f] += _read_fraction(read, osize, add_p, f)
                    nd = _mark_dirty(f, tick_no, dstamp, dirty, nd)
                    add_p += 1
                if algo == 1:
                    ws = np.floor(T / policy.period_s) * policy.period_s - (policy.n_periods - 1) * policy.period_s
                else:
                    ws = T - policy.window_s
                while rem_p < add_p and time[rem_p] < ws:
                    f = obj[rem_p]
                    cnt[f] -= 1
                    if cnt[f] == 0:
                        sfrac[f] = 0.0
                    else:
                        sfrac[f] -= _read_fraction(read, osize, rem_p, f)
                    nd = _mark_dirty(f, tick_no, dstamp, dirty, nd)
                    rem_p += 1
            if algo == 3:
                while up_p < n_up and up_start[up_p] < T + tick_s:
                    if up_start[up_p] >= T:
                        f = obj[up_order[up_p]]
                        if un[f] == 0:
                            ulist[ucount] = f
                            ucount += 1
                        un[f] += 1
                        nd = _mark_dirty(f, tick_no, dstamp, dirty, nd)
                    up_p += 1
            csz, esz = _rerank(dirty, nd, False, files, rule, candidates, csz, cached, esz)
            # stage in, best first
            while csz > 0 and budget > 0:
                v = cv[0]
                sc = -ck[0]
                if not _slac_valid(v, files, rule, False):
                    csz = heap_pop(ck, cv, csz)
                    continue
                c = np.int32(v & 0xFFFFFFFF)
                s = osize[c]
                if s > budget:
                    break
                while used + s > cap and esz > 0:
                    if not _slac_valid(ev[0], files, rule, True):
                        esz = heap_pop(ek, ev, esz)
                        continue
                    if ek[0] >= sc:
                        break
                    t = np.int32(ev[0] & 0xFFFFFFFF)
                    esz = heap_pop(ek, ev, esz)
                    inc[t] = False
                    used -= osize[t]
                    ver[t] += 1
                    if _slac_wanted(t, files, rule):
                        csz = _push_ranked(
                            candidates, csz, -_score(t, files, rule), (ver[t] << 32) | t, files, rule, False
                        )
                if used + s > cap:
                    break
                # still the top: files evicted for it score lower and sit below it
                csz = heap_pop(ck, cv, csz)
                inc[c] = True
                used += s
                budget -= s
                out[2, h_idx] += s
                ver[c] += 1
                esz = _push_ranked(cached, esz, sc, (ver[c] << 32) | c, files, rule, True)
            # the upcoming jobs' bonus lasts one tick
            csz, esz = _rerank(ulist, ucount, True, files, rule, candidates, csz, cached, esz)
            ucount = 0
        if i == n:
            break
        o = obj[i]
        if inc[o]:
            record_hit(out, req_hit, i, hr[i], read[i])
    return out
