"""Compiled replay loops (numba, ``cache=True``: compiled once per machine, then loaded), one
module per policy on one skeleton (skeleton.py), as libCacheSim keeps one file per eviction
algorithm.

The interface every online policy's kernel shares::

    <policy>_kernel(obj, osize, read, hr, n_hours, cap, *policy_settings, req_hit) -> out

dense object ids (int32), the per-object size (int64, indexed by object id), the bytes each
request read (int64) and its hour bucket (int32), the hours, the capacity in bytes, the policy's
own settings, and ``req_hit``. It returns an int64 array ``out[3, n_hours]``: hits, bytes
delivered from the cache (the request's read bytes on a hit), bytes staged into the cache (whole
files). No quantity is ever held in 32 bits except ids. ``req_hit`` (int8) receives 1 for every
request that hit when it is as long as the trace; an empty array skips that store (the efficiency
model needs hits per job, the plain replay does not). The SLAC kernel takes the same arrays
grouped by name (SlacTrace, SlacPolicy); the MRC kernel answers every capacity at once.

Online policies (LRU, FIFO, LFU, S3-FIFO, Belady) fill the cache on demand: a miss stages the
whole file in, unless the file is larger than the whole cache (then it bypasses the cache, as in
libCacheSim). The SLAC algorithms never fill on demand; they stage files in at their ticks.

Adding a policy: a module here with its kernel, written on skeleton.py's steps, exported below,
and its entry in engine.py.

numba decides whether a cached compile is still good from the file the function is defined in
only, and a policy's kernel compiles skeleton.py's steps into itself: _cache.py adds the digest of
every module of this folder to numba's stamp, so an edit of skeleton.py (or any module here)
recompiles every kernel of the folder on its next use. It is installed before any kernel module
is imported.
"""

from . import _cache  # noqa: F401  (first: numba picks a kernel's cache locator when it is decorated)
from .belady import belady_kernel, next_access_kernel
from .lfu import lfu_kernel
from .lru import lru_kernel
from .mrc import mrc_kernel
from .s3fifo import s3fifo_kernel
from .skeleton import NEVER
from .slac import SlacPolicy, SlacTrace, slac_kernel

__all__ = [
    "NEVER",
    "SlacPolicy",
    "SlacTrace",
    "belady_kernel",
    "lfu_kernel",
    "lru_kernel",
    "mrc_kernel",
    "next_access_kernel",
    "s3fifo_kernel",
    "slac_kernel",
]
