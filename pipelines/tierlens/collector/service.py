"""Run the decoder live on a UDP socket, or offline over a capture; write batches and stats."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..records import Batch, RecordKind
from .datagrams import DatagramBatch
from .decoder import Decoder
from .replay import batches
from .writer import BatchWriter


@dataclass
class Options:
    out_dir: Path
    max_rows: int = 200_000
    max_seconds: float = 60.0
    unclosed_timeout: float = 24 * 3600.0
    cache_grace: float = 5.0
    warehouse: Path | None = None


@dataclass
class RunResult:
    rows: int
    files: list[Path]
    stats: dict


class _Run:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self._wh = None
        on_batch = self._load if opts.warehouse is not None else None
        self.writer = BatchWriter(opts.out_dir, opts.max_rows, opts.max_seconds, on_batch=on_batch)
        self.decoder = Decoder(self.writer.add, self.writer.quarantine,
                               unclosed_timeout=opts.unclosed_timeout, cache_grace=opts.cache_grace)
        self.stats_path = Path(opts.out_dir) / "collector-stats.json"

    def _load(self, path: Path, table: pa.Table) -> None:
        from ..warehouse import Warehouse

        if self._wh is None:
            self._wh = Warehouse(self.opts.warehouse)
        self._wh.load(Batch(RecordKind.FILE_ACCESS, table, f"xrootd-collector:{path}"))

    def stats(self, state: str) -> dict:
        d = self.decoder
        return {"state": state, "updated_at": time.time(), "packets": d.stats["packets"],
                "rows_emitted": d.stats["rows"], "rows_written": self.writer.rows_written,
                "files": [str(p) for p in self.writer.files], "lost_packets": d.lost,
                "counters": dict(d.stats), "quarantined": dict(d.quarantined),
                "servers": d.server_stats()}

    def write_stats(self, state: str) -> dict:
        s = self.stats(state)
        tmp = self.stats_path.with_name(".collector-stats.json.tmp")
        tmp.write_text(json.dumps(s, indent=1, default=str))
        os.replace(tmp, self.stats_path)
        return s

    def close(self, now: float) -> RunResult:
        self.decoder.finish(now)
        self.writer.close()
        s = self.write_stats("finished")
        if self._wh is not None:
            self._wh.close()
        return RunResult(self.writer.rows_written, list(self.writer.files), s)


def replay(pcap: Path, opts: Options, port: int | None = None) -> RunResult:
    """Decode a capture offline; capture timestamps stand in for arrival times."""
    run = _Run(opts)
    last = 0.0
    for batch in batches(pcap, port):
        run.decoder.feed_batch(batch)
        last = float(batch.arrival[-1])
    return run.close(last)


def parse_listen(spec: str) -> tuple[str, int]:
    host, _, port = spec.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {spec!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def listen(spec: str, opts: Options, ready=None, stats_every: float = 1.0,
           max_packets: int | None = None) -> RunResult:
    """Collect from a UDP socket until SIGTERM or SIGINT; then flush everything decoded."""
    host, port = parse_listen(spec)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(fam, socket.SOCK_DGRAM)
    for opt in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
        if opt is None:
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 64 * 1024 * 1024)
            break
        except OSError:
            continue
    sock.bind((host, port))
    sock.setblocking(False)  # recv until EAGAIN, then select: one syscall per packet under load
    run = _Run(opts)
    stop = {"flag": False}

    def _stop(signum, frame):  # noqa: ARG001
        stop["flag"] = True

    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    pending: list[tuple[float, tuple, bytes]] = []

    def feed(data: bytes, addr: tuple, now: float) -> None:
        # decode in batches: the decoder's per-record loop is compiled, its per-call cost is not
        pending.append((now, addr, data))
        if len(pending) >= 1024:
            flush()

    def flush() -> None:
        if pending:
            run.decoder.feed_batch(DatagramBatch.pack(pending, "socket"))
            pending.clear()

    recv = sock.recvfrom
    bound = sock.getsockname()
    run.write_stats("listening")
    if ready is not None:
        ready(bound)
    next_tick = time.time() + stats_every
    n = 0
    clock = time.time
    try:
        while not stop["flag"]:
            try:
                while True:
                    data, addr = recv(65536)
                    now = clock()
                    feed(data, addr, now)
                    n += 1
                    if now >= next_tick or (max_packets is not None and n >= max_packets):
                        break
            except (BlockingIOError, InterruptedError):
                flush()
                try:
                    select.select([sock], [], [], 0.2)
                except InterruptedError:
                    pass
            if max_packets is not None and n >= max_packets:
                break
            flush()
            now = clock()
            if now >= next_tick:
                run.decoder.sweep(now)
                run.writer.maybe_rotate()
                run.write_stats("listening")
                next_tick = now + stats_every
        # Drain what the kernel already holds, then flush.
        while True:
            try:
                data, addr = recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            feed(data, addr, clock())
        flush()
    finally:
        sock.close()
        for s, h in old.items():
            signal.signal(s, h)
    return run.close(time.time())
