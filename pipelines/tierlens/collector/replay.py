"""Read UDP payloads out of a tcpdump capture (pcap or pcapng) with dpkt."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import dpkt

from .datagrams import DatagramBatch

_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


def _ip_of(linktype: int, buf: bytes):
    if linktype == dpkt.pcap.DLT_EN10MB:
        eth = dpkt.ethernet.Ethernet(buf)
        return eth.data
    if linktype == dpkt.pcap.DLT_LINUX_SLL:
        return dpkt.sll.SLL(buf).data
    if linktype == getattr(dpkt.pcap, "DLT_LINUX_SLL2", 276):
        return dpkt.sll2.SLL2(buf).data
    if linktype in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
        return dpkt.loopback.Loopback(buf).data
    if linktype in (dpkt.pcap.DLT_RAW, 101, 228, 229):
        return dpkt.ip.IP(buf) if buf[:1] and (buf[0] >> 4) == 4 else dpkt.ip6.IP6(buf)
    raise ValueError(f"unsupported link type {linktype}")


def batches(path: Path, port: int | None = None, size: int = 8192) -> Iterator[DatagramBatch]:
    """The capture's datagrams in :class:`DatagramBatch` values of up to ``size`` datagrams."""
    items: list[tuple[float, tuple[str, int], bytes]] = []
    for item in udp_packets(path, port):
        items.append(item)
        if len(items) >= size:
            yield DatagramBatch.pack(items, str(path))
            items = []
    if items:
        yield DatagramBatch.pack(items, str(path))


def udp_packets(path: Path, port: int | None = None) -> Iterator[tuple[float, tuple[str, int], bytes]]:
    """(capture time, (source ip, source port), UDP payload) for every UDP datagram in the file,
    optionally only those sent to ``port``. IP fragments are reassembled by the kernel before
    XRootD sees them; a capture holds them as fragments, which dpkt does not reassemble, so a
    capture should be taken on the collector's host (loopback or its interface) where the
    monitoring packets are well under the MTU."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
        fh.seek(0)
        reader = dpkt.pcapng.Reader(fh) if magic == _PCAPNG_MAGIC else dpkt.pcap.Reader(fh)
        linktype = reader.datalink()
        for ts, buf in reader:
            try:
                ip = _ip_of(linktype, buf)
            except (dpkt.UnpackError, ValueError, IndexError):
                continue
            udp = getattr(ip, "data", None)
            if not isinstance(udp, dpkt.udp.UDP):
                continue
            if port is not None and udp.dport != port:
                continue
            fam = socket.AF_INET6 if isinstance(ip, dpkt.ip6.IP6) else socket.AF_INET
            yield float(ts), (socket.inet_ntop(fam, ip.src), udp.sport), bytes(udp.data)
