"""Compiled replay loops (numba, ``cache=True``: compiled once per machine, then loaded).

Every kernel takes dense object ids (int32), the per-object size (int64, indexed by object id),
the bytes each request read (int64) and its hour bucket (int32), and returns an int64 array
``out[3, n_hours]``: hits, bytes delivered from the cache (the request's read bytes on a hit),
bytes staged into the cache (whole files). No quantity is ever held in 32 bits except ids.
The last argument, ``req_hit`` (int8), receives 1 for every request that hit when it is as long
as the trace; an empty array skips that store (the efficiency model needs hits per job, the
plain replay does not).

Online policies (LRU, FIFO, LFU, S3-FIFO, Belady) fill the cache on demand: a miss stages the
whole file in, unless the file is larger than the whole cache (then it bypasses the cache, as in
libCacheSim). The SLAC algorithms never fill on demand; they stage files in at their ticks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

NEVER = np.int64(2**62)

#: The small steps the kernels are written in. They allocate nothing, so they are compiled
#: without reference counting (numba's _nrt=False): with it, every call counted a reference to
#: each array it was passed, which made the steps cost 2-5x the replay they are part of.
step = njit(cache=True, nogil=True, _nrt=False)


@njit(cache=True, nogil=True)
def next_access_kernel(obj, n_obj):
    n = obj.shape[0]
    out = np.empty(n, np.int64)
    last = np.full(n_obj, -1, np.int64)
    for i in range(n - 1, -1, -1):
        o = obj[i]
        out[i] = last[o]
        last[o] = i
    return out


# ----------------------------------------------------------------------------- shared steps


@step
def _record_hit(out, req_hit, i, h, nbytes):
    """Request ``i`` (hour ``h``) was served from the cache; flag it when the caller keeps flags."""
    out[0, h] += 1
    out[1, h] += nbytes
    if req_hit.shape[0] > 0:
        req_hit[i] = 1


# Doubly linked lists threaded through arrays indexed by object id (prv, nxt; -1 ends a list),
# newest at the head. The ends travel as plain integers, returned updated, so that LRU keeps
# them in registers.


@step
def _unlink(o, prv, nxt, head, tail):
    """Take ``o`` out of the list; returns the new (head, tail)."""
    p = prv[o]
    n = nxt[o]
    if p >= 0:
        nxt[p] = n
    else:
        head = n
    if n >= 0:
        prv[n] = p
    else:
        tail = p
    prv[o] = -1
    nxt[o] = -1
    return head, tail


@step
def _link_head(o, prv, nxt, head, tail):
    """Put ``o`` at the head of the list; returns the new (head, tail)."""
    prv[o] = -1
    nxt[o] = head
    if head >= 0:
        prv[head] = o
    else:
        tail = o
    return o, tail


# ----------------------------------------------------------------------------- LRU / FIFO


@njit(cache=True, nogil=True)
def lru_kernel(obj, osize, read, hr, n_hours, cap, move_on_hit, req_hit):
    """LRU (move_on_hit=True) or FIFO (False) on a byte-capacity cache: one list, evicting
    from the tail."""
    n_obj = osize.shape[0]
    prv = np.full(n_obj, -1, np.int32)
    nxt = np.full(n_obj, -1, np.int32)
    head = -1
    tail = -1
    inc = np.zeros(n_obj, np.bool_)
    out = np.zeros((3, n_hours), np.int64)
    used = np.int64(0)
    for i in range(obj.shape[0]):
        o = obj[i]
        if inc[o]:
            _record_hit(out, req_hit, i, hr[i], read[i])
            if move_on_hit and o != head:
                head, tail = _unlink(o, prv, nxt, head, tail)
                head, tail = _link_head(o, prv, nxt, head, tail)
            continue
        s = osize[o]
        if s > cap:
            continue
        while used + s > cap:
            t = tail
            head, tail = _unlink(t, prv, nxt, head, tail)
            inc[t] = False
            used -= osize[t]
        head, tail = _link_head(o, prv, nxt, head, tail)
        inc[o] = True
        used += s
        out[2, hr[i]] += s
    return out


# ----------------------------------------------------------------------------- heaps


@step
def _sift_down(hk, hv, pos, size):
    k = hk[pos]
    v = hv[pos]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= k:
            break
        hk[pos] = hk[c]
        hv[pos] = hv[c]
        pos = c
    hk[pos] = k
    hv[pos] = v


@step
def _push(hk, hv, size, k, v):
    pos = size
    while pos > 0:
        p = (pos - 1) >> 1
        if hk[p] <= k:
            break
        hk[pos] = hk[p]
        hv[pos] = hv[p]
        pos = p
    hk[pos] = k
    hv[pos] = v
    return size + 1


@step
def _pop(hk, hv, size):
    size -= 1
    if size > 0:
        hk[0] = hk[size]
        hv[0] = hv[size]
        _sift_down(hk, hv, 0, size)
    return size


@step
def _heapify(hk, hv, m):
    for j in range(m // 2 - 1, -1, -1):
        _sift_down(hk, hv, j, m)


@step
def _compact(hk, hv, size, key, inc):
    """Drop stale entries (lazy deletion) and re-heapify."""
    m = 0
    for j in range(size):
        v = hv[j]
        if inc[v] and key[v] == hk[j]:
            hk[m] = hk[j]
            hv[m] = v
            m += 1
    _heapify(hk, hv, m)
    return m


@njit(cache=True, nogil=True)
def _keyed_heap(n_obj):
    """Cached flags, current keys, and a min-heap of (key, object) with room for stale entries."""
    return (
        np.zeros(n_obj, np.bool_),
        np.zeros(n_obj, np.int64),
        np.empty(2 * n_obj + 1024, np.int64),
        np.empty(2 * n_obj + 1024, np.int32),
    )


@step
def _push_keyed(hk, hv, size, k, o, key, inc):
    """Rank ``o`` by ``k`` (its older entries go stale); cleans the heap first when it is full."""
    if size >= hk.shape[0]:
        size = _compact(hk, hv, size, key, inc)
    key[o] = k
    return _push(hk, hv, size, k, o)


@step
def _evict_min(hk, hv, size, key, inc):
    """Evict the cached object of lowest key, skipping stale entries: (new size, the object)."""
    while True:
        t = hv[0]
        tk = hk[0]
        size = _pop(hk, hv, size)
        if inc[t] and key[t] == tk:
            inc[t] = False
            return size, t


@njit(cache=True, nogil=True)
def lfu_kernel(obj, osize, read, hr, n_hours, cap, req_hit):
    """LFU with a lazy-deletion min-heap: key = frequency * 2**40 + request index (least
    frequent, then least recent, goes first; frequency restarts at 1 on admission)."""
    inc, key, hk, hv = _keyed_heap(osize.shape[0])
    freq = np.zeros(osize.shape[0], np.int64)
    size = 0
    out = np.zeros((3, n_hours), np.int64)
    used = np.int64(0)
    for i in range(obj.shape[0]):
        o = obj[i]
        h = hr[i]
        if inc[o]:
            _record_hit(out, req_hit, i, h, read[i])
            freq[o] += 1
            size = _push_keyed(hk, hv, size, freq[o] * (np.int64(1) << 40) + i, o, key, inc)
            continue
        s = osize[o]
        if s > cap:
            continue
        while used + s > cap:
            size, t = _evict_min(hk, hv, size, key, inc)
            used -= osize[t]
        freq[o] = 1
        size = _push_keyed(hk, hv, size, (np.int64(1) << 40) + i, o, key, inc)
        inc[o] = True
        used += s
        out[2, h] += s
    return out


@njit(cache=True, nogil=True)
def belady_kernel(obj, osize, read, hr, n_hours, cap, next_use, req_hit):
    """Belady's MIN with a lazy-deletion min-heap: key = -(next access index) (``next_use``,
    -1: never again), so the file used furthest ahead goes first. The requested file itself is
    a candidate: a file needed later than everything cached bypasses the cache."""
    inc, key, hk, hv = _keyed_heap(osize.shape[0])
    size = 0
    out = np.zeros((3, n_hours), np.int64)
    used = np.int64(0)
    for i in range(obj.shape[0]):
        o = obj[i]
        h = hr[i]
        nx = next_use[i]
        k = -(nx if nx >= 0 else NEVER)
        if inc[o]:
            _record_hit(out, req_hit, i, h, read[i])
            size = _push_keyed(hk, hv, size, k, o, key, inc)
            continue
        s = osize[o]
        if s > cap:
            continue
        size = _push_keyed(hk, hv, size, k, o, key, inc)
        inc[o] = True
        used += s
        while used > cap:
            size, t = _evict_min(hk, hv, size, key, inc)
            used -= osize[t]
        if inc[o]:
            out[2, h] += s
    return out


# ----------------------------------------------------------------------------- S3-FIFO


@step
def _q_unlink(o, prv, nxt, heads, tails, q):
    heads[q], tails[q] = _unlink(o, prv, nxt, heads[q], tails[q])


@step
def _q_link_head(o, prv, nxt, heads, tails, q):
    heads[q], tails[q] = _link_head(o, prv, nxt, heads[q], tails[q])


@step
def _q_pop_tail(prv, nxt, heads, tails, q):
    """Remove and return the oldest entry of queue ``q`` (which must not be empty)."""
    t = tails[q]
    _q_unlink(t, prv, nxt, heads, tails, q)
    return t


@njit(cache=True, nogil=True)
def s3fifo_kernel(obj, osize, read, hr, n_hours, cap, small_ratio, req_hit):
    """S3-FIFO (Yang et al., SOSP'23) in bytes: a small FIFO S (``small_ratio`` of the bytes), a
    main FIFO M with reinsertion while freq > 0 (freq capped at 3), a ghost FIFO G of ids evicted
    from S (bounded by M's share of the bytes). A file leaving S that was hit while in S moves to
    M; a miss on a ghost goes straight to M."""
    n_obj = osize.shape[0]
    prv = np.full(n_obj, -1, np.int32)
    nxt = np.full(n_obj, -1, np.int32)
    where = np.zeros(n_obj, np.int8)  # 0 none, 1 S, 2 M, 3 G
    freq = np.zeros(n_obj, np.int8)
    heads = np.full(4, -1, np.int32)
    tails = np.full(4, -1, np.int32)
    qbytes = np.zeros(4, np.int64)
    small_cap = np.int64(cap * small_ratio)
    ghost_cap = cap - small_cap
    out = np.zeros((3, n_hours), np.int64)
    for i in range(obj.shape[0]):
        o = obj[i]
        w = where[o]
        if w == 1 or w == 2:
            _record_hit(out, req_hit, i, hr[i], read[i])
            if freq[o] < 3:
                freq[o] += 1
            continue
        s = osize[o]
        if s > cap:
            continue
        target = 1
        if w == 3:
            _q_unlink(o, prv, nxt, heads, tails, 3)
            qbytes[3] -= s
            where[o] = 0
            target = 2
        while qbytes[1] + qbytes[2] + s > cap:
            if heads[1] >= 0 and (qbytes[1] > small_cap or heads[2] < 0):
                t = _q_pop_tail(prv, nxt, heads, tails, 1)
                ts = osize[t]
                qbytes[1] -= ts
                # hit while in S: promoted to M; otherwise remembered as a ghost
                q = 2 if freq[t] >= 1 else 3
                freq[t] = 0
                _q_link_head(t, prv, nxt, heads, tails, q)
                where[t] = q
                qbytes[q] += ts
                while qbytes[3] > ghost_cap:
                    g = _q_pop_tail(prv, nxt, heads, tails, 3)
                    qbytes[3] -= osize[g]
                    where[g] = 0
            else:
                t = _q_pop_tail(prv, nxt, heads, tails, 2)
                if freq[t] > 0:
                    freq[t] -= 1
                    _q_link_head(t, prv, nxt, heads, tails, 2)
                else:
                    qbytes[2] -= osize[t]
                    where[t] = 0
        freq[o] = 0
        _q_link_head(o, prv, nxt, heads, tails, target)
        where[o] = target
        qbytes[target] += s
        out[2, hr[i]] += s
    return out


# ----------------------------------------------------------------------------- SLAC 1-3


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
        _heapify(hk, hv, m)
        size = m
    return _push(hk, hv, size, k, v)


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
                    csz = _pop(ck, cv, csz)
                    continue
                c = np.int32(v & 0xFFFFFFFF)
                s = osize[c]
                if s > budget:
                    break
                while used + s > cap and esz > 0:
                    if not _slac_valid(ev[0], files, rule, True):
                        esz = _pop(ek, ev, esz)
                        continue
                    if ek[0] >= sc:
                        break
                    t = np.int32(ev[0] & 0xFFFFFFFF)
                    esz = _pop(ek, ev, esz)
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
                csz = _pop(ck, cv, csz)
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
            _record_hit(out, req_hit, i, hr[i], read[i])
    return out


# ----------------------------------------------------------------------------- MRC


@njit(cache=True, nogil=True)
def mrc_kernel(obj, osize, read, sizes):
    """LRU byte stack distances in one pass (Fenwick tree over request positions: each object
    is marked, with its size, only at its latest request). A request hits an LRU cache of C
    bytes iff (bytes of the distinct files requested since its previous request) + its own
    size <= C. Returns hits and hit bytes per cache size (``sizes`` ascending)."""
    n = obj.shape[0]
    n_obj = osize.shape[0]
    tree = np.zeros(n + 1, np.int64)
    last = np.full(n_obj, -1, np.int64)
    k = sizes.shape[0]
    cnt = np.zeros(k + 1, np.int64)
    byt = np.zeros(k + 1, np.int64)
    for i in range(n):
        o = obj[i]
        s = osize[o]
        p = last[o]
        if p >= 0:
            # sum over positions (p, i): prefix(i) - prefix(p+1), 1-based tree
            acc = np.int64(0)
            j = i
            while j > 0:
                acc += tree[j]
                j -= j & (-j)
            j = p + 1
            while j > 0:
                acc -= tree[j]
                j -= j & (-j)
            d = acc + s
            # first size >= d
            lo = 0
            hi = k
            while lo < hi:
                mid = (lo + hi) >> 1
                if sizes[mid] < d:
                    lo = mid + 1
                else:
                    hi = mid
            cnt[lo] += 1
            byt[lo] += read[i]
            j = p + 1
            while j <= n:
                tree[j] -= s
                j += j & (-j)
        j = i + 1
        while j <= n:
            tree[j] += s
            j += j & (-j)
        last[o] = i
    hits = np.cumsum(cnt[:k])
    hbytes = np.cumsum(byt[:k])
    return hits, hbytes
