"""The skeleton every policy's kernel is written on: the compiled-step decorator, the hit record,
the doubly linked lists (LRU, FIFO, S3-FIFO's queues) and the min-heaps with lazy deletion (LFU,
Belady, SLAC's rankings). Nothing here knows a policy."""

from __future__ import annotations

import numpy as np
from numba import njit

NEVER = np.int64(2**62)

#: The small steps the kernels are written in. They allocate nothing, so they are compiled
#: without reference counting (numba's _nrt=False): with it, every call counted a reference to
#: each array it was passed, which made the steps cost 2-5x the replay they are part of.
step = njit(cache=True, nogil=True, _nrt=False)


@step
def record_hit(out, req_hit, i, h, nbytes):
    """Request ``i`` (hour ``h``) was served from the cache; flag it when the caller keeps flags."""
    out[0, h] += 1
    out[1, h] += nbytes
    if req_hit.shape[0] > 0:
        req_hit[i] = 1


# Doubly linked lists threaded through arrays indexed by object id (prv, nxt; -1 ends a list),
# newest at the head. The ends travel as plain integers, returned updated, so that LRU keeps
# them in registers.


@step
def unlink(o, prv, nxt, head, tail):
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
def link_head(o, prv, nxt, head, tail):
    """Put ``o`` at the head of the list; returns the new (head, tail)."""
    prv[o] = -1
    nxt[o] = head
    if head >= 0:
        prv[head] = o
    else:
        tail = o
    return o, tail


# ----------------------------------------------------------------------------- heaps


@step
def sift_down(hk, hv, pos, size):
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
def heap_push(hk, hv, size, k, v):
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
def heap_pop(hk, hv, size):
    size -= 1
    if size > 0:
        hk[0] = hk[size]
        hv[0] = hv[size]
        sift_down(hk, hv, 0, size)
    return size


@step
def heapify(hk, hv, m):
    for j in range(m // 2 - 1, -1, -1):
        sift_down(hk, hv, j, m)


@step
def compact(hk, hv, size, key, inc):
    """Drop stale entries (lazy deletion) and re-heapify."""
    m = 0
    for j in range(size):
        v = hv[j]
        if inc[v] and key[v] == hk[j]:
            hk[m] = hk[j]
            hv[m] = v
            m += 1
    heapify(hk, hv, m)
    return m


@njit(cache=True, nogil=True)
def keyed_heap_replay(n_obj, n_hours):
    """What a replay that ranks files in a keyed heap (LFU, Belady) starts from: cached flags,
    current keys, a min-heap of (key, object) with room for stale entries and its size, the
    per-hour counts (hits, hit bytes, bytes staged in) and the bytes cached. One start for
    every such policy, so that their results count the same things."""
    return (
        np.zeros(n_obj, np.bool_),
        np.zeros(n_obj, np.int64),
        np.empty(2 * n_obj + 1024, np.int64),
        np.empty(2 * n_obj + 1024, np.int32),
        0,
        np.zeros((3, n_hours), np.int64),
        np.int64(0),
    )


@step
def push_keyed(hk, hv, size, k, o, key, inc):
    """Rank ``o`` by ``k`` (its older entries go stale); cleans the heap first when it is full."""
    if size >= hk.shape[0]:
        size = compact(hk, hv, size, key, inc)
    key[o] = k
    return heap_push(hk, hv, size, k, o)


@step
def evict_min(hk, hv, size, key, inc):
    """Evict the cached object of lowest key, skipping stale entries: (new size, the object)."""
    while True:
        t = hv[0]
        tk = hk[0]
        size = heap_pop(hk, hv, size)
        if inc[t] and key[t] == tk:
            inc[t] = False
            return size, t
