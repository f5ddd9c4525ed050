"""A listen address as the collector's options give it (HOST:PORT): the UDP receivers' and the
Prometheus endpoint's, so that service.py and metrics.py share it without importing each other."""

from __future__ import annotations


def parse_listen(spec: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; an empty host is 127.0.0.1); ValueError for anything else."""
    host, _, port = spec.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {spec!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)
