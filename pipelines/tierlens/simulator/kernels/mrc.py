"""The LRU miss-ratio curve: every cache size's hits from one pass over the trace."""

from __future__ import annotations

import numpy as np
from numba import njit


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
