"""Trace-driven cache simulation: replay file accesses through caches not deployed.

from tierlens.simulator import CacheParams, simulate, from_warehouse

trace = from_warehouse(con)                      # dense ids, int64 bytes, time order
result = simulate(trace, CacheParams("slac2", 11 * 10**12))
"""

from .engine import POLICIES, CacheParams, CacheResult, log_sizes, mrc, simulate
from .trace import Trace, from_parquet, from_table, from_warehouse, read_oracle, write_oracle

__all__ = [
    "POLICIES",
    "CacheParams",
    "CacheResult",
    "Trace",
    "from_parquet",
    "from_table",
    "from_warehouse",
    "log_sizes",
    "mrc",
    "read_oracle",
    "simulate",
    "write_oracle",
]
