"""The collector's on-disk journal: every datagram the socket handed over, before any decoding.

One folder per receiving worker (``<journal>/w<N>/``) holds numbered segment files
``seg-<number>.tlj``. A receiver only ever appends to the newest segment of its own folder; it
never reopens an older one, so a segment is complete ("sealed") as soon as a newer one exists.

Segment layout (all integers little-endian)::

    segment header, 32 bytes
      0  8s  magic b"TLJRNL01"
      8  u32 layout version (1)
     12  u32 worker
     16  u64 segment number
     24  f64 creation time (UTC seconds)
    then records, back to back, each a 40-byte header and ``length`` payload bytes:
      0  u32 length          payload bytes
      4  u32 crc             CRC-32 (zlib) of header bytes 8..40, then of the payload
      8  u8  kind            0 = datagram, 1 = socket counters
      9  u8  family          4 or 6 (address family of the sender)
     10  u16 port            sender's UDP port
     12  u32 reserved (0)
     16  f64 arrival         receiving host's clock, UTC seconds
     24  16s address         sender's IPv4 (first 4 bytes) or IPv6 address
    a counters record's payload (kind 1), values as the receiver saw them at that moment:
      0  u64 socket inode    identifies the socket across receiver restarts
      8  i64 kernel drops    SO_RXQ_OVFL counter of the socket (cumulative, kernel's count)
     16  i64 /proc drops     drops column of /proc/net/udp[6] for the socket (cumulative)
     24  i64 disallowed      datagrams dropped by --allow since the previous counters record

A live segment is preallocated (``posix_fallocate``: a full disk fails at rotation, never with a
SIGBUS mid-write) and filled through a shared memory map: ``recvmsg_into`` copies each datagram
straight into the file's page cache, and the header is written after the payload. Where the
records end, the next header is all zeros. The CRC tells a complete record from one that was
being written: at the tail of the live segment that means "not yet", in a sealed segment it is a
torn record (a crash mid-write, or corruption), which is counted and reported, never decoded.
A segment is sealed by truncating it to its last complete record and fsyncing it.
"""

from __future__ import annotations

import mmap
import os
import re
import socket
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..durable import fsync_dir
from .datagrams import DatagramBatch

MAGIC = b"TLJRNL01"
VERSION = 1
SEG_HEADER = struct.Struct("<8sIIQd")
REC_HEADER = struct.Struct("<IIBBHId16s")
REC_TAIL = struct.Struct("<BBHId16s")  # the CRC-covered part of the header
COUNTERS = struct.Struct("<Qqqq")
KIND_DATAGRAM, KIND_COUNTERS = 0, 1
#: Largest UDP payload; a segment rotates when less than this is left after its last record.
MAX_DATAGRAM = 65535
_SEG_RE = re.compile(r"^seg-(\d{12})\.tlj$")
assert SEG_HEADER.size == 32 and REC_HEADER.size == 40


class JournalError(ValueError):
    """A file that is not a journal segment, or a record that cannot be one."""


def segment_path(folder: Path, number: int) -> Path:
    return Path(folder) / f"seg-{number:012d}.tlj"


def segments(folder: Path) -> list[tuple[int, Path]]:
    """(number, path) of the segments in ``folder``, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        m = _SEG_RE.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


def worker_folder(journal: Path, worker: int) -> Path:
    return Path(journal) / f"w{worker}"


def _addr_bytes(addr: tuple[str, int], cache: dict[str, tuple[int, bytes]]) -> tuple[int, bytes]:
    ip = addr[0]
    hit = cache.get(ip)
    if hit is None:
        if ":" in ip:
            hit = (6, socket.inet_pton(socket.AF_INET6, ip))
        else:
            hit = (4, socket.inet_pton(socket.AF_INET, ip).ljust(16, b"\0"))
        if len(cache) > 65536:
            cache.clear()
        cache[ip] = hit
    return hit


def _addr_text(family: int, raw: bytes) -> str:
    if family == 6:
        return socket.inet_ntop(socket.AF_INET6, raw)
    return socket.inet_ntop(socket.AF_INET, raw[:4])


class JournalWriter:
    """Appends records to the newest segment of one worker's folder (see the module docstring).

    The receive loop asks for :meth:`slot` (a writable view where the next payload goes), has the
    socket fill it, then calls :meth:`commit`. Nothing is buffered in the process: a record is in
    the file's page cache the moment it is committed, so a killed receiver loses nothing it
    committed. :meth:`sync` (on the receiver's timer) and rotation fsync.
    """

    def __init__(self, folder: Path, worker: int = 0, segment_bytes: int = 64 << 20, after: int = 0) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.worker = worker
        self.segment_bytes = max(segment_bytes, 1 << 20)
        self._addr_cache: dict[str, tuple[int, bytes]] = {}
        for stale in self.folder.glob(".seg-*.new"):  # a crash between creating and naming one
            stale.unlink(missing_ok=True)
        existing = segments(self.folder)
        self.number = max(existing[-1][0] if existing else 0, after)
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._view: memoryview | None = None
        self.pos = 0
        self.bytes_written = 0
        self._open_next()

    def _open_next(self) -> None:
        """Create the next segment under a hidden name, header written, then rename it into
        place: a reader never sees a segment without its header."""
        number = self.number + 1  # taken only once the segment exists: a retry reuses it
        path = segment_path(self.folder, number)
        tmp = path.with_name(f".{path.name}.new")
        # O_EXCL|O_NOFOLLOW: a collector running as root never writes through a planted symlink.
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        try:
            os.posix_fallocate(fd, 0, self.segment_bytes)
            os.pwrite(fd, SEG_HEADER.pack(MAGIC, VERSION, self.worker, number, time.time()), 0)
            self._map = mmap.mmap(fd, self.segment_bytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            os.rename(tmp, path)
        except BaseException as e:
            os.close(fd)
            os.unlink(tmp)
            if isinstance(e, OSError):  # a full disk: say which file, not only "No space left"
                raise OSError(
                    e.errno,
                    f"could not make the collector journal's next segment {path} "
                    f"({self.segment_bytes:,} bytes preallocated): {e.strerror or e}",
                    str(path),
                ) from e
            raise
        self.number = number
        self._fd = fd
        self._view = memoryview(self._map)
        self.pos = SEG_HEADER.size
        fsync_dir(self.folder)

    @property
    def path(self) -> Path:
        return segment_path(self.folder, self.number)

    def slot(self) -> memoryview:
        """Where the next payload goes (room for the largest datagram)."""
        if self.pos + REC_HEADER.size + MAX_DATAGRAM > self.segment_bytes:
            self.rotate()
        start = self.pos + REC_HEADER.size
        return self._view[start : start + MAX_DATAGRAM]

    def commit(self, n: int, arrival: float, addr: tuple[str, int], kind: int = KIND_DATAGRAM) -> None:
        """Seal the record whose ``n`` payload bytes :meth:`slot` received: header last."""
        fam, raw = _addr_bytes(addr, self._addr_cache)
        pos = self.pos
        m = self._map
        REC_TAIL.pack_into(m, pos + 8, kind, fam, addr[1], 0, arrival, raw)
        body = self._view[pos + 8 : pos + REC_HEADER.size + n]
        struct.pack_into("<II", m, pos, n, zlib.crc32(body))
        self.pos = pos + REC_HEADER.size + n
        self.bytes_written += REC_HEADER.size + n

    def append(self, payload: bytes, arrival: float, addr: tuple[str, int], kind: int = KIND_DATAGRAM) -> None:
        view = self.slot()
        view[: len(payload)] = payload
        self.commit(len(payload), arrival, addr, kind)

    def counters(self, inode: int, kernel_drops: int, proc_drops: int, disallowed: int, now: float) -> None:
        self.append(COUNTERS.pack(inode, kernel_drops, proc_drops, disallowed), now, ("0.0.0.0", 0), KIND_COUNTERS)

    def sync(self) -> None:
        if self._map is not None:
            self._map.flush()

    def rotate(self) -> None:
        self._seal()
        self._open_next()

    def _seal(self) -> None:
        if self._map is None:
            return
        self._map.flush()
        self._view.release()
        self._map.close()
        self._map = self._view = None
        os.ftruncate(self._fd, self.pos)
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1

    def close(self) -> None:
        """Seal the live segment; the folder then holds only complete segments."""
        self._seal()
        fsync_dir(self.folder)


# ---- reading --------------------------------------------------------------------------------
# The reader uses pread, not a map: a live segment shrinks when it is sealed, and touching a
# mapped page past the new end of file would kill the reader with SIGBUS.

CHUNK = 4 << 20
END, TORN, SHORT = -1, -2, -3


@dataclass
class Counters:
    """A socket counters record as read from the journal."""

    worker: int
    inode: int
    kernel_drops: int
    proc_drops: int
    disallowed: int
    arrival: float


def read_segment_header(buf: bytes, path: Path | str) -> tuple[int, int]:
    """(worker, segment number), or JournalError naming the file."""
    if len(buf) < SEG_HEADER.size:
        raise JournalError(f"{path}: offset 0: segment header truncated ({len(buf)} of 32 bytes)")
    magic, version, worker, number, _ = SEG_HEADER.unpack_from(buf, 0)
    if magic != MAGIC:
        raise JournalError(f"{path}: offset 0: not a tierlens journal segment (magic {magic!r})")
    if version != VERSION:
        raise JournalError(f"{path}: offset 8: journal layout version {version}, this collector reads {VERSION}")
    return worker, number


_ZERO_HEADER = bytes(REC_HEADER.size)


def record_at(buf: bytes, pos: int) -> int:
    """Payload length of the complete record at ``pos``; END (no more data, or a zero header),
    TORN (bad length or CRC) or SHORT (the record runs past the end of ``buf``)."""
    size = len(buf)
    if pos >= size:
        return END
    if pos + REC_HEADER.size > size:
        return SHORT
    n, crc = struct.unpack_from("<II", buf, pos)
    if n == 0 and crc == 0 and buf[pos : pos + REC_HEADER.size] == _ZERO_HEADER:
        return END
    if n > MAX_DATAGRAM:
        return TORN
    end = pos + REC_HEADER.size + n
    if end > size:
        return SHORT
    if zlib.crc32(memoryview(buf)[pos + 8 : end]) != crc:
        return TORN
    return n


@dataclass
class Parsed:
    items: list = field(default_factory=list)  # (arrival, (ip, port), payload)
    offsets: list = field(default_factory=list)  # record offset in the segment, per item
    counters: list = field(default_factory=list)  # Counters
    status: int = 0  # why parsing stopped: 0 (limit reached), END, TORN, SHORT


def parse(buf: bytes, base: int, worker: int, out: Parsed, max_records: int, until: float = float("inf")) -> int:
    """Append the complete records of ``buf`` (read at segment offset ``base``) to ``out``; stop at
    ``max_records`` datagrams or the first arrival after ``until``. Returns bytes consumed."""
    pos = 0
    items, offsets = out.items, out.offsets
    out.status = 0
    while len(items) < max_records:
        n = record_at(buf, pos)
        if n < 0:
            out.status = n
            break
        kind, fam, port, _, arrival, raw = REC_TAIL.unpack_from(buf, pos + 8)
        if arrival > until:
            break
        body = buf[pos + REC_HEADER.size : pos + REC_HEADER.size + n]
        if kind == KIND_DATAGRAM:
            items.append((arrival, (_addr_text(fam, raw), port), body))
            offsets.append(base + pos)
        elif kind == KIND_COUNTERS and n == COUNTERS.size:
            out.counters.append(Counters(worker, *COUNTERS.unpack(body), arrival))
        pos += REC_HEADER.size + n
    return pos


@dataclass
class Position:
    """A point in one worker's journal: the next record to read."""

    segment: int
    offset: int = SEG_HEADER.size


def seal_segment(path: Path) -> tuple[int, str | None]:
    """After a crash: cut a segment at its last complete record (zeros and a torn tail go),
    fsync. Returns (records kept, a message naming the torn record or None)."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        read_segment_header(os.pread(fd, SEG_HEADER.size, 0), path)
        pos, count, torn = SEG_HEADER.size, 0, None
        size = os.fstat(fd).st_size
        while True:
            buf = os.pread(fd, CHUNK, pos)
            out = Parsed()
            used = parse(buf, pos, 0, out, 1 << 62)
            pos += used
            count += len(out.items) + len(out.counters)
            if out.status == SHORT and len(buf) == CHUNK:
                continue
            if (
                out.status == TORN
                or out.status == SHORT
                or (out.status == END and any(os.pread(fd, min(size - pos, 1 << 20), pos)))
            ):
                torn = f"{path}:offset {pos}: torn or corrupt record ({size - pos} bytes cut off)"
            break
        if pos < size:
            os.ftruncate(fd, pos)
        os.fsync(fd)
        return count, torn
    finally:
        os.close(fd)


class WorkerReader:
    """Reads one worker's journal from a position on, while its receiver may still be appending.
    Torn records of sealed segments are skipped with a message in ``torn``."""

    def __init__(self, folder: Path, worker: int, pos: Position | None = None) -> None:
        self.folder = Path(folder)
        self.worker = worker
        self.pos = pos or Position(0)
        self.torn: list[str] = []
        self._fd = -1
        self._number = -1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd, self._number = -1, -1

    def _current(self) -> bool:
        """Open the segment holding ``pos`` (or the next one there is); False when none."""
        if self._fd >= 0 and self._number == self.pos.segment:
            return True
        self.close()
        for number, path in segments(self.folder):
            if number < self.pos.segment:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            read_segment_header(os.pread(fd, SEG_HEADER.size, 0), path)
            if number != self.pos.segment:
                self.pos = Position(number)
            self._fd, self._number = fd, number
            return True
        return False

    def _sealed(self) -> bool:
        return os.path.exists(segment_path(self.folder, self._number + 1))

    def read(self, max_records: int, until: float = float("inf")) -> Parsed:
        """Up to ``max_records`` complete datagrams from ``pos`` with arrival <= ``until`` (and
        the counters records among them). Advances ``pos``."""
        out = Parsed()
        while len(out.items) < max_records and self._current():
            # Sealed is decided before reading: a segment is cut and fsynced before the next exists.
            sealed = self._sealed()
            buf = os.pread(self._fd, CHUNK, self.pos.offset)
            self.pos.offset += parse(buf, self.pos.offset, self.worker, out, max_records, until)
            if out.status == 0:
                break  # limit or ``until`` reached
            if out.status == SHORT and len(buf) == CHUNK:
                continue
            if not sealed:
                break  # the live segment: the rest is not written yet
            if out.status != END or self.pos.offset < os.fstat(self._fd).st_size:
                self.torn.append(
                    f"{segment_path(self.folder, self._number)}:offset {self.pos.offset}: "
                    f"torn or corrupt record, rest of the segment not decoded"
                )
            self.pos = Position(self._number + 1)
        return out

    def next_arrival(self) -> float | None:
        """Arrival time of the next complete record; -inf at the end of a sealed segment (so a
        read moves on); None when nothing is there yet."""
        if not self._current():
            return None
        sealed = self._sealed()
        buf = os.pread(self._fd, REC_HEADER.size + MAX_DATAGRAM, self.pos.offset)
        n = record_at(buf, 0)
        if n >= 0:
            return REC_TAIL.unpack_from(buf, 8)[4]
        return float("-inf") if sealed else None

    def backlog_bytes(self, live: tuple[int, int] | None = None) -> int:
        """Journal bytes past ``pos``; ``live`` = (segment, offset) the receiver has written to
        (its preallocated segment's file size says nothing)."""
        total = 0
        for number, path in segments(self.folder):
            if number < self.pos.segment:
                continue
            if live is not None and number == live[0]:
                size = live[1]
            else:
                try:
                    size = path.stat().st_size
                except FileNotFoundError:
                    continue
            total += max(0, size - (self.pos.offset if number == self.pos.segment else SEG_HEADER.size))
        return total


def to_batch(parsed: Parsed, source: str) -> DatagramBatch:
    return DatagramBatch.pack([(t, a, bytes(p)) for t, a, p in parsed.items], source, parsed.offsets)


def read_file(path: Path, batch: int = 8192) -> Iterator[tuple[DatagramBatch, list[Counters], list[str]]]:
    """Every complete record of one segment file (``--replay``), in batches of datagrams, with
    its counters records and, last, a message naming a torn or corrupt record if one ends it."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        worker, _ = read_segment_header(os.pread(fd, SEG_HEADER.size, 0), path)
        size = os.fstat(fd).st_size
        pos = SEG_HEADER.size
        while True:
            out = Parsed()
            buf = os.pread(fd, CHUNK, pos)
            pos += parse(buf, pos, worker, out, batch)
            torn: list[str] = []
            if out.status in (TORN, SHORT) and not (out.status == SHORT and len(buf) == CHUNK):
                torn = [f"{path}:offset {pos}: torn or corrupt record ({size - pos} bytes not decoded)"]
            if out.items or out.counters or torn:
                yield to_batch(out, str(path)), out.counters, torn
            if out.status in (END, TORN) or torn:
                return
    finally:
        os.close(fd)


def is_segment(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False
