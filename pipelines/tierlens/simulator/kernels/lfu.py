"""LFU: least frequent, then least recent, evicted first."""

from __future__ import annotations

import numpy as np
from numba import njit

from .skeleton import evict_min, keyed_heap_replay, push_keyed, record_hit


@njit(cache=True, nogil=True)
def lfu_kernel(obj, osize, read, hr, n_hours, cap, req_hit):
    """LFU with a lazy-deletion min-heap: key = frequency * 2**40 + request index (least
    frequent, then least recent, goes first; frequency restarts at 1 on admission)."""
    inc, key, hk, hv, size, out, used = keyed_heap_replay(osize.shape[0], n_hours)
    freq = np.zeros(osize.shape[0], np.int64)
    for i in range(obj.shape[0]):
        o = obj[i]
        h = hr[i]
        if inc[o]:
            record_hit(out, req_hit, i, h, read[i])
            freq[o] += 1
            size = push_keyed(hk, hv, size, freq[o] * (np.int64(1) << 40) + i, o, key, inc)
            continue
        s = osize[o]
        if s > cap:
            continue
        while used + s > cap:
            size, t = evict_min(hk, hv, size, key, inc)
            used -= osize[t]
        freq[o] = 1
        size = push_keyed(hk, hv, size, (np.int64(1) << 40) + i, o, key, inc)
        inc[o] = True
        used += s
        out[2, h] += s
    return out
