"""S3-FIFO: a small FIFO, a main FIFO with reinsertion, and a ghost queue."""

from __future__ import annotations

import numpy as np
from numba import njit

from .skeleton import link_head, record_hit, step, unlink


@step
def _q_unlink(o, prv, nxt, heads, tails, q):
    heads[q], tails[q] = unlink(o, prv, nxt, heads[q], tails[q])


@step
def _q_link_head(o, prv, nxt, heads, tails, q):
    heads[q], tails[q] = link_head(o, prv, nxt, heads[q], tails[q])


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
            record_hit(out, req_hit, i, hr[i], read[i])
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
