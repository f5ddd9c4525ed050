"""Belady's MIN (the offline optimum) and the next-access index it ranks by."""

from __future__ import annotations

import numpy as np
from numba import njit

from .skeleton import NEVER, evict_min, keyed_heap_replay, push_keyed, record_hit


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


@njit(cache=True, nogil=True)
def belady_kernel(obj, osize, read, hr, n_hours, cap, next_use, req_hit):
    """Belady's MIN with a lazy-deletion min-heap: key = -(next access index) (``next_use``,
    -1: never again), so the file used furthest ahead goes first. The requested file itself is
    a candidate: a file needed later than everything cached bypasses the cache."""
    inc, key, hk, hv, size, out, used = keyed_heap_replay(osize.shape[0], n_hours)
    for i in range(obj.shape[0]):
        o = obj[i]
        h = hr[i]
        nx = next_use[i]
        k = -(nx if nx >= 0 else NEVER)
        if inc[o]:
            record_hit(out, req_hit, i, h, read[i])
            size = push_keyed(hk, hv, size, k, o, key, inc)
            continue
        s = osize[o]
        if s > cap:
            continue
        size = push_keyed(hk, hv, size, k, o, key, inc)
        inc[o] = True
        used += s
        while used > cap:
            size, t = evict_min(hk, hv, size, key, inc)
            used -= osize[t]
        if inc[o]:
            out[2, h] += s
    return out
