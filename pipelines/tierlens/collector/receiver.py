"""The receiving worker: UDP socket -> journal, and nothing else.

Each worker is its own process (``python -m tierlens.collector.receiver``), started by the
collector with the socket as an inherited file descriptor, so the decoder's CPU use (another
process, at a lower priority) can never make it miss a datagram, and the interpreter lock is not
shared. Python has no ``recvmmsg``; the loop wakes on ``poll`` and then drains the socket with
``recvmsg_into`` until it would block, each datagram landing directly in the journal segment's
memory map (see journal.py): no copy, no per-datagram allocation, and a datagram is in the page
cache (safe from a kill of this process) as soon as its header is written. bench/README.md has
the measured cost per datagram.

Loss is measured, not inferred: ``SO_RXQ_OVFL`` makes the kernel attach its drop counter for the
socket to each datagram, and the drops column of ``/proc/net/udp`` (by socket inode) is read on
the same timer as a cross-check (it also counts drops after the last datagram received). Both go
into the journal as counters records once a second when they change, with the number of
datagrams refused by ``--allow``.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import ipaddress
import mmap
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from .journal import JournalWriter, worker_folder

SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)  # Linux; neither is exported by Python's socket module
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_ANC = socket.CMSG_SPACE(4)
#: Datagrams taken per drain before the loop looks at its timers again.
DRAIN_MAX = 8192
#: segment, offset, datagrams, kernel drops, disallowed, updated (UTC seconds)
STATUS = struct.Struct("<qqqqqd")
STATUS_FILE = "receiver.status"
LOCK_FILE = ".lock"


class Allow:
    """--allow CIDR...: which senders may write to the journal (an address's answer is cached)."""

    def __init__(self, cidrs: list[str]) -> None:
        self.networks = [ipaddress.ip_network(c, strict=False) for c in cidrs]
        self._cache: dict[str, bool] = {}

    def __call__(self, ip: str) -> bool:
        ok = self._cache.get(ip)
        if ok is None:
            addr = ipaddress.ip_address(ip)
            if addr.version == 6 and addr.ipv4_mapped is not None:
                addr = addr.ipv4_mapped
            ok = any(addr in n for n in self.networks)
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[ip] = ok
        return ok


def open_sockets(host: str, port: int, workers: int, rcvbuf: int = 64 << 20) -> list[socket.socket]:
    """``workers`` UDP sockets bound to host:port (SO_REUSEPORT when more than one: the kernel
    spreads senders across them by address hash, so one server's stream stays in one worker)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    socks = []
    for _ in range(workers):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if workers > 1:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        prepare(s, rcvbuf)
        s.bind((host, port))
        if port == 0 and workers > 1:
            port = s.getsockname()[1]
        socks.append(s)
    return socks


def prepare(s: socket.socket, rcvbuf: int | None = 64 << 20) -> None:
    """A large receive buffer (FORCE as root: above net.core.rmem_max) and the drop counter."""
    for opt in () if rcvbuf is None else (SO_RCVBUFFORCE, socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, rcvbuf)
            break
        except OSError:
            continue
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)


def systemd_sockets() -> list[socket.socket] | None:
    """Sockets handed over by systemd socket activation (LISTEN_FDS, sd_listen_fds(3)): the socket
    then outlives the collector, and datagrams sent while it restarts wait in the kernel."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    n = int(os.environ.get("LISTEN_FDS", "0"))
    if n < 1:
        return None
    socks = []
    for fd in range(3, 3 + n):
        s = socket.socket(fileno=fd)
        if s.type != socket.SOCK_DGRAM:
            raise ValueError(f"LISTEN_FDS: descriptor {fd} is not a UDP socket")
        prepare(s, rcvbuf=None)  # the socket unit's ReceiveBuffer= stands
        socks.append(s)
    for k in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(k, None)
    return socks


def proc_drops(inode: int) -> int:
    """The drops column of /proc/net/udp (or udp6) for the socket with this inode; -1 if absent."""
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(name) as fh:
                next(fh, None)
                for line in fh:
                    f = line.split()
                    if len(f) >= 13 and f[9] == str(inode):
                        return int(f[12])
        except OSError:
            continue
    return -1


def lock_folder(folder: Path, wait: float = 0.0) -> int:
    """An exclusive flock on ``folder/.lock``; the fd holds it. Waits up to ``wait`` seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise
            time.sleep(0.05)


class Status:
    """The receiver's position and counts in a small shared file the collector reads."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        try:
            os.ftruncate(fd, STATUS.size)
            self._map = mmap.mmap(fd, STATUS.size)
        finally:
            os.close(fd)

    def write(self, *values) -> None:
        STATUS.pack_into(self._map, 0, *values)


def read_status(folder: Path) -> tuple | None:
    try:
        with open(folder / STATUS_FILE, "rb") as fh:
            raw = fh.read(STATUS.size)
    except OSError:
        return None
    return STATUS.unpack(raw) if len(raw) == STATUS.size else None


class Receiver:
    def __init__(
        self,
        sock: socket.socket,
        journal: Path,
        worker: int,
        allow: Allow | None = None,
        segment_bytes: int = 64 << 20,
        sync_every: float = 1.0,
        after_segment: int = 0,
    ) -> None:
        self.sock = sock
        self.worker = worker
        self.folder = worker_folder(journal, worker)
        self.allow = allow
        self.sync_every = sync_every
        self.inode = os.fstat(sock.fileno()).st_ino
        self.writer = JournalWriter(self.folder, worker, segment_bytes, after_segment)
        self.status = Status(self.folder / STATUS_FILE)
        self.datagrams = 0
        self.kernel_drops = 0
        self.disallowed = 0
        self._reported = (-1, -1, 0)
        self.stop = False

    def drain(self) -> int:
        recv = self.sock.recvmsg_into
        slot, commit, clock = self.writer.slot, self.writer.commit, time.time
        allow = self.allow
        got = 0
        anc = None
        while got < DRAIN_MAX:
            try:
                n, anc_now, _, addr = recv([slot()], _ANC)
            except (BlockingIOError, InterruptedError):
                break
            if allow is not None and not allow(addr[0]):
                self.disallowed += 1
                continue
            commit(n, clock(), addr)
            got += 1
            if anc_now:
                anc = anc_now
        if anc:
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(data) >= 4:
                    self.kernel_drops = int.from_bytes(data[:4], sys.byteorder)
        self.datagrams += got
        if got:
            self._publish()
        return got

    def _publish(self) -> None:
        w = self.writer
        self.status.write(w.number, w.pos, self.datagrams, self.kernel_drops, self.disallowed, time.time())

    def tick(self) -> None:
        """Counters record when something changed, then fsync: at most ``sync_every`` of
        datagrams can be lost by a power cut (a killed process loses nothing committed)."""
        pdrops = proc_drops(self.inode)
        now = (self.kernel_drops, pdrops, self.disallowed)
        if now != self._reported:
            self.writer.counters(
                self.inode, self.kernel_drops, pdrops, self.disallowed - self._reported[2], time.time()
            )
            self._reported = now
        self.writer.sync()
        self._publish()

    def run(self) -> None:
        self.sock.setblocking(False)
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        next_tick = time.monotonic() + self.sync_every
        self.tick()
        while not self.stop:
            if self.drain() < DRAIN_MAX:
                poller.poll(max(1, int(1000 * min(0.2, next_tick - time.monotonic()))))
            if time.monotonic() >= next_tick:
                self.tick()
                next_tick = time.monotonic() + self.sync_every
        self.drain()  # what the kernel holds already
        self.tick()
        self.writer.close()
        self._publish()


def _die_with_parent() -> None:
    """SIGTERM when the collector that started us dies (even by SIGKILL): drain, seal, exit."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="tierlens collector receiving worker (started by the collector)")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--journal", type=Path, required=True)
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--segment-bytes", type=int, default=64 << 20)
    ap.add_argument("--sync-every", type=float, default=1.0)
    ap.add_argument("--parent", type=int, default=0)
    ap.add_argument(
        "--after-segment",
        type=int,
        default=0,
        help="number new segments above this (the checkpoint's), even if the folder was emptied",
    )
    a = ap.parse_args(argv)
    _die_with_parent()
    if a.parent and os.getppid() != a.parent:
        return 3  # the collector died before we set the death signal
    lock = lock_folder(worker_folder(a.journal, a.worker), wait=30.0)
    sock = socket.socket(fileno=a.fd)
    r = Receiver(
        sock, a.journal, a.worker, Allow(a.allow) if a.allow else None, a.segment_bytes, a.sync_every, a.after_segment
    )

    def _stop(signum, frame):  # noqa: ARG001
        r.stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the collector, which stops us in order
    r.run()
    os.close(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
