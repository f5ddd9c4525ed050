"""LRU and FIFO: one list, newest at the head, evicting from the tail."""

from __future__ import annotations

import numpy as np
from numba import njit

from .skeleton import link_head, record_hit, unlink


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
            record_hit(out, req_hit, i, hr[i], read[i])
            if move_on_hit and o != head:
                head, tail = unlink(o, prv, nxt, head, tail)
                head, tail = link_head(o, prv, nxt, head, tail)
            continue
        s = osize[o]
        if s > cap:
            continue
        while used + s > cap:
            t = tail
            head, tail = unlink(t, prv, nxt, head, tail)
            inc[t] = False
            used -= osize[t]
        head, tail = link_head(o, prv, nxt, head, tail)
        inc[o] = True
        used += s
        out[2, hr[i]] += s
    return out
