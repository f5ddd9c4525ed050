"""Cache: GB delivered against GB staged in, and hit ratios (marts.cache_hourly)."""

from __future__ import annotations

from .. import fmt, plots
from ..columns import CACHE_TRAFFIC
from ..page import Column
from ..reader import MartReader
from ..spec import PlotSpec, SectionOut, SectionSpec, TableSpec

_TRAFFIC_SUMS = """
    sum(accesses) AS accesses, sum(hit_accesses) AS hit_accesses,
    sum(gb_read) AS gb_read, sum(gb_delivered_from_cache) AS gb_delivered_from_cache,
    sum(gb_staged_in) AS gb_staged_in, sum(gb_bypassed) AS gb_bypassed,
    sum(hit_accesses)::DOUBLE / nullif(sum(accesses), 0) AS hit_ratio_requests,
    sum(gb_delivered_from_cache)
      / nullif(sum(gb_delivered_from_cache) + sum(gb_staged_in) + sum(gb_bypassed), 0)
      AS hit_ratio_bytes
"""


def body(wh: MartReader, s: SectionOut) -> None:
    wh.con.execute("SET TimeZone = 'UTC'")
    hourly = wh.rows(f"""
        SELECT timezone('UTC', CAST("hour" AS TIMESTAMPTZ)) AS "hour", {_TRAFFIC_SUMS}
        FROM marts.cache_hourly GROUP BY 1 ORDER BY 1
    """)
    servers = wh.rows(f"""
        SELECT CASE WHEN grouping(server_host) = 1 THEN 'all servers' ELSE server_host END AS server_host,
               grouping(server_host) = 1 AS _total,
               count(DISTINCT "hour") AS hours, {_TRAFFIC_SUMS}
        FROM marts.cache_hourly
        GROUP BY GROUPING SETS ((server_host), ())
        ORDER BY grouping(server_host), server_host
    """)
    total = next((r for r in servers if r["_total"]), None)
    if total is not None:
        s.fact(
            "Hours covered (UTC)",
            f"{fmt.text(hourly[0]['hour'])} to {fmt.text(hourly[-1]['hour'])} ({len(hourly)} hours with data)",
        )
        s.fact("GB read by clients", fmt.gb(total["gb_read"]))
        s.fact("GB delivered from cache", fmt.gb(total["gb_delivered_from_cache"]))
        s.fact("GB staged in", fmt.gb(total["gb_staged_in"]))
        s.fact("GB bypassed", fmt.gb(total["gb_bypassed"]))
        s.fact("Hit ratio by requests", fmt.pct(total["hit_ratio_requests"]))
        s.fact("Hit ratio by bytes", fmt.pct(total["hit_ratio_bytes"]))
    s.figure("gb_per_hour", hourly)
    s.figure("hit_ratio", hourly)
    s.table("cache_hourly", hourly)
    s.table("cache_by_server", servers)
    s.note(
        "Hit ratios are ratios of sums over servers and hours, as marts.cache_hourly defines them "
        "per server and hour: Σhit accesses / Σaccesses, and ΣGB from cache / Σ(GB from cache + "
        "staged in + bypassed). GB read is what the clients read (read bytes at close); GB = 1e9 bytes."
    )


SPEC = SectionSpec(
    id="cache",
    title="Cache: delivered vs staged in, hit ratio",
    intro="Per hour, summed over all cache servers: GB the cache delivered to clients from its "
    "storage (blue) against GB it staged in from the origin (green), as in the SLAC SSD-cache "
    "plot. A cache that stages in about as much as it delivers is not acting as a cache.",
    body=body,
    marts=("cache_hourly",),
    empty_hint="No monitored cache server has reported yet.",
    tables=(
        TableSpec("cache_hourly", "Per hour", (Column("hour", "hour (UTC)"), *CACHE_TRAFFIC), shown=False),
        TableSpec(
            "cache_by_server",
            "By cache server, whole period",
            (Column("server_host", "server"), Column("hours", "hours", "int"), *CACHE_TRAFFIC),
        ),
    ),
    plots=(
        PlotSpec(
            "gb_per_hour",
            plots.cache_gb_per_hour,
            "Line chart of GB per hour delivered from cache and staged in",
            "GB/hour delivered from the cache (blue) and staged into it (green), each point one hour (UTC).",
            "cache_hourly",
        ),
        PlotSpec(
            "hit_ratio",
            plots.cache_hit_ratio,
            "Line chart of hourly cache hit ratio by requests and by bytes",
            "Hit ratio per hour by requests (accesses served entirely from the cache / accesses) and "
            "by bytes (GB delivered from cache / GB the cache reported as hit, staged in or bypassed).",
            "cache_hourly",
        ),
    ),
)
