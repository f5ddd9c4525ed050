"""--metrics HOST:PORT: the collector's counts as Prometheus metrics (prometheus_client).

The values are read at scrape time from the collector's latest stats (the same figures as
collector-stats.json, refreshed every second), so the receive and decode loops pay nothing
per datagram for them.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .listen import parse_listen

P = "tierlens_collector_"


class StatsCollector:
    """A prometheus_client collector over a function returning the latest stats dict."""

    def __init__(self, stats: Callable[[], dict]) -> None:
        self.stats = stats

    def collect(self):
        s = self.stats() or {}
        yield _counter("datagrams", "Datagrams decoded from the journal.", s.get("packets", 0))
        rec = CounterMetricFamily(
            P + "received_datagrams",
            "Datagrams each receiving worker took off its socket (this run).",
            labels=["worker"],
        )
        for w, n in sorted((s.get("received") or {}).items()):
            rec.add_metric([str(w)], n)
        yield rec
        yield _counter(
            "kernel_drops",
            "Datagrams the kernel dropped on the sockets (SO_RXQ_OVFL, /proc/net/udp).",
            s.get("kernel_drops", 0),
        )
        yield _counter("disallowed", "Datagrams dropped because the sender is outside --allow.", s.get("disallowed", 0))
        gaps = CounterMetricFamily(
            P + "sequence_gaps",
            "Datagrams missing from a server's pseq sequences (a lower bound of loss: pseq has 8 bits).",
            labels=["server"],
        )
        per: dict[str, int] = {}
        for srv in s.get("servers") or []:
            per[srv["server"]] = per.get(srv["server"], 0) + srv.get("lost", 0)
        for name, n in sorted(per.items()):
            gaps.add_metric([name], n)
        yield gaps
        yield _counter("rows_written", "file_access rows written.", s.get("rows_written", 0))
        q = CounterMetricFamily(P + "quarantined", "Datagrams or records that could not be decoded.", labels=["reason"])
        for reason, n in sorted((s.get("quarantined") or {}).items()):
            q.add_metric([reason], n)
        yield q
        yield _counter(
            "pfc_unmatched",
            "Cache file_close events matched to no access within the grace window.",
            (s.get("counters") or {}).get("pfc_unmatched", 0),
        )
        yield _counter(
            "journal_torn",
            "Torn or corrupt journal records found (after a crash or disk error).",
            len(s.get("journal_torn") or []),
        )
        yield GaugeMetricFamily(
            P + "journal_backlog_bytes",
            "Journal bytes received but not yet decoded.",
            value=s.get("journal_backlog_bytes", 0),
        )
        yield GaugeMetricFamily(
            P + "journal_backlog_seconds",
            "How far decoding lags behind receiving.",
            value=s.get("journal_backlog_seconds", 0.0),
        )
        yield GaugeMetricFamily(P + "workers", "Receiving workers.", value=s.get("workers", 0))


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(P + name, doc, value=value)


def serve(spec: str, stats: Callable[[], dict]):
    """Serve the metrics on HOST:PORT (loopback unless told otherwise) in a daemon thread."""
    host, port = parse_listen(spec)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(stats))
    server, thread = start_http_server(port, addr=host, registry=registry)
    return server, thread
