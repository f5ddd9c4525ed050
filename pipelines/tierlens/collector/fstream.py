"""The compiled f-stream loop: walk the records of many f-stream packets, pair opens with closes.

Python decides per packet (header, server instance, sequence number) which packets to walk; this
loop then does the per-record work: the header walk, time windows, opens (copying the lfn bytes
into an arena so they outlive the batch), closes (paired with their open, or kept as an orphan
until the open arrives), transfer updates and disconnects. Finished accesses are written as rows
of two dense matrices (integers and times), so no Python object is made per record.

State lives in :class:`OpenFiles` (numpy arrays plus numba typed dicts from the key
``server slot << 32 | file dictid`` to a row of the arrays), passed into every call.

Before each packet the loop checks that the outputs and tables have room for everything a packet
of that length could produce; when not, it returns the index of that packet and the caller grows
the arrays and calls again from there, so a batch of any size decodes in bounded memory.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .wire import (
    CLOSE_FORCED,
    CLOSE_HAS_OPS,
    CLOSE_OPS_REC,
    FILE_HDR,
    HEADER_BYTES,
    IS_CLOSE,
    IS_DISC,
    IS_OPEN,
    IS_TIME,
    IS_XFR,
    OPEN_HAS_LFN,
    OPEN_REC,
    TIME_REC,
    XFR_REC,
    Layout,
)

#: The reader the loop uses for each struct code it meets.
_READERS = {"B": "byte", "h": "_be16", "I": "_be32u", "i": "_be32s", "q": "_be64"}


def _at(layout: Layout, name: str, reader: str) -> int:
    """Offset of ``name`` in ``layout``, checked against the reader the loop uses for it: a layout
    edit that changes a field's width fails here, at import, instead of reading wrong bytes."""
    code = layout.code(name)
    if _READERS.get(code) != reader:
        raise TypeError(f"{name}: struct code {code!r} needs {_READERS.get(code)}, the loop reads it with {reader}")
    return layout.offset(name)


class Offsets(NamedTuple):
    """Where the loop finds each field it reads, in bytes from the start of a record, and the
    sizes it checks records against: all from wire.py's layouts. Passed to the loop as an
    argument rather than frozen into it as globals, so numba's on-disk cache (which only notices
    edits to this file) can never keep offsets of an older layout."""

    header_bytes: int
    file_hdr_bytes: int
    rec_type: int
    rec_flag: int
    rec_size: int
    rec_id: int
    time_bytes: int
    tod_beg: int
    tod_end: int
    open_min_bytes: int
    open_size: int
    open_user: int
    open_lfn: int
    xfr_bytes: int
    xfr_read: int
    xfr_readv: int
    xfr_write: int
    close_bytes: int
    close_ops_bytes: int
    close_read: int
    close_readv: int
    close_write: int
    close_nread: int
    close_nreadv: int
    close_nwrite: int


def offsets_of(
    packet_header: int,
    file_hdr: Layout,
    time_rec: Layout,
    open_rec: Layout,
    xfr_rec: Layout,
    close_rec: Layout,
    close_ops_rec: Layout,
) -> Offsets:
    """The loop's :class:`Offsets` from the layouts of the records it walks."""
    return Offsets(
        header_bytes=packet_header,
        file_hdr_bytes=file_hdr.size,
        rec_type=_at(file_hdr, "rec_type", "byte"),
        rec_flag=_at(file_hdr, "rec_flag", "byte"),
        rec_size=_at(file_hdr, "rec_size", "_be16"),
        rec_id=_at(file_hdr, "dictid", "_be32u"),
        time_bytes=time_rec.size,
        tod_beg=_at(time_rec, "tbeg", "_be32s"),
        tod_end=_at(time_rec, "tend", "_be32s"),
        open_min_bytes=open_rec.offset("user"),
        open_size=_at(open_rec, "file_size", "_be64"),
        open_user=_at(open_rec, "user", "_be32u"),
        open_lfn=open_rec.size,
        xfr_bytes=xfr_rec.size,
        xfr_read=_at(xfr_rec, "read", "_be64"),
        xfr_readv=_at(xfr_rec, "readv", "_be64"),
        xfr_write=_at(xfr_rec, "write", "_be64"),
        close_bytes=close_rec.size,
        close_ops_bytes=close_ops_rec.size,
        close_read=_at(close_ops_rec, "read", "_be64"),
        close_readv=_at(close_ops_rec, "readv", "_be64"),
        close_write=_at(close_ops_rec, "write", "_be64"),
        close_nread=_at(close_ops_rec, "n_read", "_be32s"),
        close_nreadv=_at(close_ops_rec, "n_readv", "_be32s"),
        close_nwrite=_at(close_ops_rec, "n_write", "_be32s"),
    )


#: The offsets of the XRootD 5.x records (wire.py).
WIRE = offsets_of(HEADER_BYTES, FILE_HDR, TIME_REC, OPEN_REC, XFR_REC, XFR_REC, CLOSE_OPS_REC)


# Rows of the integer row matrix (column-major: one contiguous array per field, as Arrow wants).
R_SRV, R_FID, R_SIZE, R_RD, R_RV, R_WR, R_NRD, R_NRV, R_NWR, R_USER, R_REASON, R_LFN_OFF, R_LFN_LEN = range(13)
R_COLS = 13
# Columns of the time row matrix.
T_START, T_END = 0, 1
# Row end reasons written by the loop (the Python side adds timeout, shutdown, server_restart).
REASON_CLOSE, REASON_FORCED = 0, 1
# Columns of the open-file integer table.
O_KEY, O_SIZE, O_USER, O_RD, O_RV, O_WR, O_LFN_OFF, O_LFN_LEN = range(8)
O_COLS = 8
# Columns of the open-file time table.
OT_START, OT_SEEN = 0, 1
# Columns of the orphan-close table (a close that came before its open).
C_RD, C_RV, C_WR, C_NRD, C_NRV, C_NWR, C_FORCED = range(7)
C_COLS = 7
# Columns of the orphan-close time table: the end of the close's time window, its arrival.
CT_END, CT_ARRIVAL = 0, 1
# Per-packet decode errors.
E_NONE, E_SIZE, E_CLOSE, E_OPEN, E_TYPE, E_TRAILING = 0, 1, 2, 3, 4, 5
# Counters.
N_OPENS, N_CLOSES, N_XFRS, N_DISCS, N_REORDERED = range(5)
N_COUNTERS = 5
# Columns of the disconnect output: server slot, user dictid; and its times: arrival, and the end
# of the time window of the packet that carried it (the access it ends ends there).
D_SRV, D_USER = 0, 1
D_ARRIVAL, D_TEND = 0, 1
NO_LFN = -1


class Packets(NamedTuple):
    """The f-stream packets to walk: the batch's bytes with each datagram's start (``offsets``),
    and per packet its datagram, server slot, header start time and arrival time."""

    payload: np.ndarray
    offsets: np.ndarray
    dgram: np.ndarray
    srv: np.ndarray
    stod: np.ndarray
    now: np.ndarray


class Table(NamedTuple):
    """A table the loop keeps rows in (open files; orphan closes): the hash index from key to
    slot, each slot's integers and times, and the stack of free slots."""

    keys: np.ndarray
    vals: np.ndarray
    used: np.ndarray
    ints: np.ndarray
    times: np.ndarray
    free: np.ndarray
    nfree: np.ndarray


class Arena(NamedTuple):
    """The lfn bytes of open files, and how many are in use."""

    data: np.ndarray
    used: np.ndarray


class Output(NamedTuple):
    """What a walk produces: finished accesses (``rows`` by R_*, ``row_times`` by T_*), user
    disconnects (by D_*), per-packet errors ``(code, offset)`` and the counters (by N_*)."""

    rows: np.ndarray
    row_times: np.ndarray
    nrows: np.ndarray
    discs: np.ndarray
    disc_times: np.ndarray
    ndiscs: np.ndarray
    errors: np.ndarray
    counters: np.ndarray


EMPTY, TOMB = -1, -2
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class HashIndex:
    """Non-negative int64 key -> int64 value, open addressing in two numpy arrays, so the loop
    looks keys up without leaving compiled code (numba's typed dict costs several times more)."""

    def __init__(self, capacity: int = 1024) -> None:
        cap = 1 << max(4, (capacity - 1).bit_length())
        self.keys = np.full(cap, EMPTY, dtype=np.int64)
        self.vals = np.zeros(cap, dtype=np.int64)
        self.used = np.zeros(2, dtype=np.int64)  # live keys, live + deleted positions

    def __len__(self) -> int:
        return int(self.used[0])

    def ensure(self, inserts: int) -> None:
        """Room for ``inserts`` more keys at a load of at most one half."""
        if 2 * (self.used[1] + inserts) > self.keys.shape[0]:
            cap = self.keys.shape[0]
            while 2 * (self.used[0] + inserts) > cap // 2:
                cap *= 2
            self.keys, self.vals = _rehash(self.keys, self.vals, cap)
            self.used[1] = self.used[0]

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        live = self.keys >= 0
        return self.keys[live], self.vals[live]

    def values(self) -> np.ndarray:
        return self.vals[self.keys >= 0]

    def pop(self, key: int) -> int:
        return int(_h_del(self.keys, self.vals, self.used, np.int64(key)))

    def __setitem__(self, key: int, val: int) -> None:
        self.ensure(1)
        _h_put(self.keys, self.vals, self.used, np.int64(key), np.int64(val))

    def clear(self) -> None:
        self.keys[:] = EMPTY
        self.used[:] = 0


@njit(cache=True, inline="always")
def _h_pos(keys, key):
    """Position of ``key``, or of the first free position on its probe path when absent (as ~pos)."""
    mask = keys.shape[0] - 1
    i = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask
    free = -1
    while True:
        k = keys[i]
        if k == key:
            return i
        if k == EMPTY:
            return ~(free if free >= 0 else i)
        if k == TOMB and free < 0:
            free = i
        i = (i + 1) & mask


@njit(cache=True, inline="always")
def _h_get(keys, vals, key):
    i = _h_pos(keys, key)
    return vals[i] if i >= 0 else -1


@njit(cache=True, inline="always")
def _h_put(keys, vals, used, key, val):
    i = _h_pos(keys, key)
    if i < 0:
        i = ~i
        if keys[i] == EMPTY:
            used[1] += 1
        keys[i] = key
        used[0] += 1
    vals[i] = val


@njit(cache=True, inline="always")
def _h_del(keys, vals, used, key):
    i = _h_pos(keys, key)
    if i < 0:
        return -1
    keys[i] = TOMB
    used[0] -= 1
    return vals[i]


@njit(cache=True)
def _rehash(keys, vals, cap):
    nk = np.full(cap, EMPTY, dtype=np.int64)
    nv = np.zeros(cap, dtype=np.int64)
    used = np.zeros(2, dtype=np.int64)
    for j in range(keys.shape[0]):
        if keys[j] >= 0:
            _h_put(nk, nv, used, keys[j], vals[j])
    return nk, nv


class OpenFiles:
    """Open files and orphan closes of every server instance, as arrays the loop can use."""

    def __init__(self, capacity: int = 1024) -> None:
        self.index = HashIndex(2 * capacity)
        self.ints = np.zeros((capacity, O_COLS), dtype=np.int64)
        self.times = np.zeros((capacity, 2), dtype=np.float64)
        self.free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
        self.nfree = np.array([capacity], dtype=np.int64)
        self.arena = np.zeros(1 << 16, dtype=np.uint8)
        self.arena_used = np.zeros(1, dtype=np.int64)
        self.orphan_index = HashIndex(128)
        self.orphans = np.zeros((64, C_COLS), dtype=np.int64)
        self.orphan_times = np.zeros((64, 2), dtype=np.float64)  # CT_END, CT_ARRIVAL
        self.orphan_free = np.arange(63, -1, -1, dtype=np.int64)
        self.orphan_nfree = np.array([64], dtype=np.int64)

    # ---- growing ------------------------------------------------------------------------------
    def ensure(self, opens: int, arena: int, orphans: int) -> None:
        self.index.ensure(opens)
        self.orphan_index.ensure(orphans)
        if self.nfree[0] < opens:
            self.ints, self.times, self.free, self.nfree = _grow(self.ints, self.times, self.free, self.nfree, opens)
        if self.orphan_nfree[0] < orphans:
            self.orphans, self.orphan_times, self.orphan_free, self.orphan_nfree = _grow(
                self.orphans, self.orphan_times, self.orphan_free, self.orphan_nfree, orphans
            )
        need = int(self.arena_used[0]) + arena
        if need > self.arena.shape[0]:
            self.compact_arena()
            need = int(self.arena_used[0]) + arena
            if need > self.arena.shape[0]:
                bigger = np.zeros(max(need, 2 * self.arena.shape[0]), dtype=np.uint8)
                bigger[: self.arena_used[0]] = self.arena[: self.arena_used[0]]
                self.arena = bigger

    def compact_arena(self) -> None:
        """Drop the lfn bytes of closed files (call only when no row refers to the arena)."""
        slots = self.active_slots()
        self.arena_used[0] = _compact(self.arena, self.ints, slots)

    def active_slots(self) -> np.ndarray:
        return self.index.values()

    def release(self, slots: np.ndarray) -> None:
        """Forget the open files in ``slots`` (emitted by the caller)."""
        _release(self.index.keys, self.index.vals, self.index.used, self.ints, self.free, self.nfree, slots)

    def release_orphans(self) -> None:
        slots = self.orphan_index.values()
        self.orphan_index.clear()
        self.orphan_free[self.orphan_nfree[0] : self.orphan_nfree[0] + len(slots)] = slots
        self.orphan_nfree[0] += len(slots)

    def open_table(self) -> Table:
        return Table(self.index.keys, self.index.vals, self.index.used, self.ints, self.times, self.free, self.nfree)

    def orphan_table(self) -> Table:
        return Table(
            self.orphan_index.keys,
            self.orphan_index.vals,
            self.orphan_index.used,
            self.orphans,
            self.orphan_times,
            self.orphan_free,
            self.orphan_nfree,
        )

    def lfn_arena(self) -> Arena:
        return Arena(self.arena, self.arena_used)

    def lfn(self, off: int, length: int) -> bytes:
        return self.arena[off : off + length].tobytes()

    # ---- snapshot -------------------------------------------------------------------------------
    def state(self) -> dict:
        slots = self.active_slots()
        okeys, oslots = self.orphan_index.items()
        ints = self.ints[slots].copy()
        lfns = [self.lfn(int(o), int(n)) if n >= 0 else None for o, n in ints[:, [O_LFN_OFF, O_LFN_LEN]]]
        return {
            "ints": ints,
            "times": self.times[slots].copy(),
            "lfns": lfns,
            "orphans": self.orphans[oslots].copy(),
            "orphan_times": self.orphan_times[oslots].copy(),
            "orphan_keys": okeys,
        }

    @classmethod
    def from_state(cls, st: dict) -> OpenFiles:
        n, m = len(st["ints"]), len(st["orphans"])
        of = cls(max(1024, 2 * n))
        of.ensure(0, sum(len(x) for x in st["lfns"] if x), max(64, 2 * m))
        for i in range(n):
            slot = of.free[of.nfree[0] - 1]
            of.nfree[0] -= 1
            row = st["ints"][i].copy()
            raw = st["lfns"][i]
            if raw is not None:
                off = int(of.arena_used[0])
                of.arena[off : off + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
                of.arena_used[0] += len(raw)
                row[O_LFN_OFF] = off
            of.ints[slot] = row
            of.times[slot] = st["times"][i]
            of.index[int(row[O_KEY])] = int(slot)
        for i in range(m):
            slot = of.orphan_free[of.orphan_nfree[0] - 1]
            of.orphan_nfree[0] -= 1
            of.orphans[slot] = st["orphans"][i]
            of.orphan_times[slot] = st["orphan_times"][i]
            of.orphan_index[int(st["orphan_keys"][i])] = int(slot)
        return of


def _grow(ints, times, free, nfree, need):
    cap = ints.shape[0]
    new_cap = max(2 * cap, cap + need)
    ints2 = np.zeros((new_cap, ints.shape[1]), dtype=ints.dtype)
    ints2[:cap] = ints
    times2 = np.zeros((new_cap, times.shape[1]), dtype=times.dtype)
    times2[:cap] = times
    # the free stack must hold every slot: closed files give theirs back
    free2 = np.empty(new_cap, dtype=np.int64)
    k = new_cap - cap
    free2[:k] = np.arange(new_cap - 1, cap - 1, -1, dtype=np.int64)
    free2[k : k + nfree[0]] = free[: nfree[0]]
    return ints2, times2, free2, np.array([k + nfree[0]], dtype=np.int64)


@njit(cache=True)
def _compact(arena, ints, slots):
    order = np.argsort(ints[slots, O_LFN_OFF])
    used = 0
    for j in range(order.shape[0]):
        s = slots[order[j]]
        off, n = ints[s, O_LFN_OFF], ints[s, O_LFN_LEN]
        if n <= 0:
            continue
        if off != used:
            for b in range(n):  # off >= used, so moving down never overwrites bytes still needed
                arena[used + b] = arena[off + b]
        ints[s, O_LFN_OFF] = used
        used += n
    return used


@njit(cache=True)
def _release(hkeys, hvals, hused, ints, free, nfree, slots):
    for j in range(slots.shape[0]):
        s = slots[j]
        if _h_del(hkeys, hvals, hused, ints[s, O_KEY]) >= 0:
            free[nfree[0]] = s
            nfree[0] += 1


@njit(cache=True)
def _be16(b, i):
    v = (np.int64(b[i]) << 8) | np.int64(b[i + 1])
    return v - 65536 if v >= 32768 else v


@njit(cache=True)
def _be32u(b, i):
    return (np.int64(b[i]) << 24) | (np.int64(b[i + 1]) << 16) | (np.int64(b[i + 2]) << 8) | np.int64(b[i + 3])


@njit(cache=True)
def _be32s(b, i):
    v = _be32u(b, i)
    return v - 4294967296 if v >= 2147483648 else v


@njit(cache=True)
def _be64(b, i):
    v = np.uint64(0)
    for k in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[i + k])
    return np.int64(v)


@njit(cache=True, inline="always")
def _take_slot(t, key):
    """The table row of ``key``: its current one, or a free one now given to it."""
    s = _h_get(t.keys, t.vals, key)
    if s >= 0:
        return s
    s = t.free[t.nfree[0] - 1]
    t.nfree[0] -= 1
    _h_put(t.keys, t.vals, t.used, key, s)
    return s


@njit(cache=True, inline="always")
def _give_slot(t, s):
    t.free[t.nfree[0]] = s
    t.nfree[0] += 1


@njit(cache=True, inline="always")
def _put_row(out, srv, rid, size, user, lfn_off, lfn_len, start, end, closed, c):
    """A finished access: its open's fields, and the close's figures from row ``c`` of ``closed``
    (an orphan-close table's integers, by C_*)."""
    r = out.nrows[0]
    rows = out.rows
    rows[R_SRV, r] = srv
    rows[R_FID, r] = rid
    rows[R_SIZE, r] = size
    rows[R_RD, r] = closed[c, C_RD]
    rows[R_RV, r] = closed[c, C_RV]
    rows[R_WR, r] = closed[c, C_WR]
    rows[R_NRD, r] = closed[c, C_NRD]
    rows[R_NRV, r] = closed[c, C_NRV]
    rows[R_NWR, r] = closed[c, C_NWR]
    rows[R_USER, r] = user
    rows[R_REASON, r] = REASON_FORCED if closed[c, C_FORCED] else REASON_CLOSE
    rows[R_LFN_OFF, r] = lfn_off
    rows[R_LFN_LEN, r] = lfn_len
    out.row_times[r, T_START] = start
    out.row_times[r, T_END] = max(end, start)  # a close reported in the open's window
    out.nrows[0] = r + 1


@njit(cache=True, inline="always")
def _read_close(at, payload, i, rflag, rsize, close):
    """The close record at ``i`` into ``close[0]`` (C_* columns)."""
    close[0, C_RD] = _be64(payload, i + at.close_read)
    close[0, C_RV] = _be64(payload, i + at.close_readv)
    close[0, C_WR] = _be64(payload, i + at.close_write)
    if (rflag & CLOSE_HAS_OPS) and rsize >= at.close_ops_bytes:
        close[0, C_NRD] = _be32s(payload, i + at.close_nread)
        close[0, C_NRV] = _be32s(payload, i + at.close_nreadv)
        close[0, C_NWR] = _be32s(payload, i + at.close_nwrite)
    else:
        close[0, C_NRD] = close[0, C_NRV] = close[0, C_NWR] = -1
    close[0, C_FORCED] = 1 if (rflag & CLOSE_FORCED) else 0


@njit(cache=True)
def walk(pk, start, opens, arena, orphans, srv_last_tod, out, at):
    """Walk packets ``start..`` of ``pk`` (:class:`Packets`) with the open files ``opens``, their
    lfn ``arena`` and the closes waiting for their open ``orphans`` (:class:`Table`), writing to
    ``out`` (:class:`Output`) and reading each field where ``at`` (:class:`Offsets`) says; return
    the index of the first packet not walked (``len(pk.dgram)`` when all were).
    ``out.errors[k] = (code, offset)`` for a packet whose walk stopped at a bad record (the
    records before it count)."""
    payload = pk.payload
    o_ints, o_times = opens.ints, opens.times
    c_ints, c_times = orphans.ints, orphans.times
    counters = out.counters
    close = np.empty((1, C_COLS), dtype=np.int64)
    n_pk = pk.dgram.shape[0]
    row_cap = out.rows.shape[1]
    disc_cap = out.discs.shape[0]
    for k in range(start, n_pk):
        d = pk.dgram[k]
        p0 = pk.offsets[d]
        plen = pk.offsets[d + 1] - p0
        # room for the worst case of this packet: every 8 bytes a row / an open / a disconnect
        worst = plen // at.file_hdr_bytes + 1
        if (
            row_cap - out.nrows[0] < worst
            or disc_cap - out.ndiscs[0] < worst
            or opens.nfree[0] < worst
            or orphans.nfree[0] < worst
            or arena.data.shape[0] - arena.used[0] < plen
            or 2 * (opens.used[1] + worst) > opens.keys.shape[0]
            or 2 * (orphans.used[1] + worst) > orphans.keys.shape[0]
        ):
            return k
        srv = pk.srv[k]
        now = pk.now[k]
        tbeg = np.float64(pk.stod[k])
        tend = tbeg
        skey = np.int64(srv) << 32
        off = at.header_bytes
        err = E_NONE
        while off + at.file_hdr_bytes <= plen:
            i = p0 + off
            rtype = payload[i + at.rec_type]
            rflag = payload[i + at.rec_flag]
            rsize = _be16(payload, i + at.rec_size)
            rid = _be32u(payload, i + at.rec_id)
            if rsize < at.file_hdr_bytes or off + rsize > plen:
                err = E_SIZE
                break
            if rtype == IS_CLOSE:
                if rsize < at.close_bytes:
                    err = E_CLOSE
                    break
                key = skey | rid
                s = _h_del(opens.keys, opens.vals, opens.used, key)
                if s >= 0:
                    _read_close(at, payload, i, rflag, rsize, close)
                    _put_row(
                        out,
                        srv,
                        rid,
                        o_ints[s, O_SIZE],
                        o_ints[s, O_USER],
                        o_ints[s, O_LFN_OFF],
                        o_ints[s, O_LFN_LEN],
                        o_times[s, OT_START],
                        tend,
                        close,
                        0,
                    )
                    _give_slot(opens, s)
                else:
                    c = _take_slot(orphans, key)
                    _read_close(at, payload, i, rflag, rsize, c_ints[c : c + 1])
                    c_times[c, CT_END] = tend
                    c_times[c, CT_ARRIVAL] = now
                counters[N_CLOSES] += 1
            elif rtype == IS_OPEN:
                if rsize < at.open_min_bytes:
                    err = E_OPEN
                    break
                fsz = _be64(payload, i + at.open_size)
                user = np.int64(0)
                lfn_off = np.int64(0)
                lfn_len = np.int64(NO_LFN)
                if (rflag & OPEN_HAS_LFN) and rsize >= at.open_lfn:
                    user = _be32u(payload, i + at.open_user)
                    lfn_len = 0
                    while lfn_len < rsize - at.open_lfn and payload[i + at.open_lfn + lfn_len] != 0:
                        lfn_len += 1
                    lfn_off = arena.used[0]
                    for b in range(lfn_len):
                        arena.data[lfn_off + b] = payload[i + at.open_lfn + b]
                    arena.used[0] = lfn_off + lfn_len
                key = skey | rid
                counters[N_OPENS] += 1
                c = _h_del(orphans.keys, orphans.vals, orphans.used, key) if orphans.used[0] > 0 else -1
                if c >= 0:
                    _put_row(out, srv, rid, fsz, user, lfn_off, lfn_len, tbeg, c_times[c, CT_END], c_ints, c)
                    _give_slot(orphans, c)
                    counters[N_REORDERED] += 1
                else:
                    # (an open of a file id already open replaces it: the newer one counts)
                    s = _take_slot(opens, key)
                    o_ints[s, O_KEY] = key
                    o_ints[s, O_SIZE] = fsz
                    o_ints[s, O_USER] = user
                    o_ints[s, O_RD] = o_ints[s, O_RV] = o_ints[s, O_WR] = 0
                    o_ints[s, O_LFN_OFF] = lfn_off
                    o_ints[s, O_LFN_LEN] = lfn_len
                    o_times[s, OT_START] = tbeg
                    o_times[s, OT_SEEN] = now
            elif rtype == IS_TIME:
                if rsize >= at.time_bytes:
                    tbeg = np.float64(_be32s(payload, i + at.tod_beg))
                    tend = np.float64(_be32s(payload, i + at.tod_end))
                    if tend > srv_last_tod[srv]:
                        srv_last_tod[srv] = tend
            elif rtype == IS_XFR:
                key = skey | rid
                s = _h_get(opens.keys, opens.vals, key) if rsize >= at.xfr_bytes else -1
                if s >= 0:
                    o_ints[s, O_RD] = _be64(payload, i + at.xfr_read)
                    o_ints[s, O_RV] = _be64(payload, i + at.xfr_readv)
                    o_ints[s, O_WR] = _be64(payload, i + at.xfr_write)
                    o_times[s, OT_SEEN] = now
                counters[N_XFRS] += 1
            elif rtype == IS_DISC:
                q = out.ndiscs[0]
                out.discs[q, D_SRV] = srv
                out.discs[q, D_USER] = rid
                out.disc_times[q, D_ARRIVAL] = now
                out.disc_times[q, D_TEND] = tend
                out.ndiscs[0] = q + 1
                counters[N_DISCS] += 1
            else:
                err = E_TYPE
                break
            off += rsize
        if err == E_NONE and off != plen:
            err = E_TRAILING
        if err != E_NONE:
            out.errors[k, 0] = err
            out.errors[k, 1] = off
    return n_pk


@njit(cache=True)
def _concat(src, starts, lengths):
    """``src[starts[r]:starts[r] + lengths[r]]`` for every r, back to back, with Arrow offsets."""
    n = starts.shape[0]
    total = 0
    for r in range(n):
        if lengths[r] > 0:
            total += lengths[r]
    out = np.empty(total, dtype=np.uint8)
    offs = np.empty(n + 1, dtype=np.int32)
    pos = 0
    offs[0] = 0
    for r in range(n):
        ln = lengths[r]
        a = starts[r]
        for b in range(ln):  # a byte loop: faster than a slice copy for names this short
            out[pos + b] = src[a + b]
        if ln > 0:
            pos += ln
        offs[r + 1] = pos
    return out, offs


def concat_slices(src, starts, lengths):
    """``src[starts[r]:starts[r] + lengths[r]]`` back to back: (bytes, Arrow offsets)."""
    return _concat(src, starts, lengths)


def gather_lfns(arena, rows, n):
    """The lfn bytes of rows ``0..n`` back to back, with Arrow-style offsets."""
    return _concat(arena, rows[R_LFN_OFF, :n], rows[R_LFN_LEN, :n])


def take_strings(offsets, data, idx):
    """Strings ``idx`` of a small table of strings (Arrow-style ``offsets``/``data``), back to back."""
    out, offs = _concat(data, offsets[idx], offsets[idx + 1] - offsets[idx])
    return offs, out


@njit(cache=True)
def unique_ids(prefix_offsets, prefix_data, slots, fids):
    """``<prefix of the row's server><file dictid>`` per row (the SLAC record's unique_id)."""
    n = slots.shape[0]
    offs = np.empty(n + 1, dtype=np.int32)
    out = np.empty(n * 32 + prefix_data.shape[0] * 0 + 16, dtype=np.uint8)
    digits = np.empty(20, dtype=np.uint8)
    pos = 0
    offs[0] = 0
    for r in range(n):
        a = prefix_offsets[slots[r]]
        ln = prefix_offsets[slots[r] + 1] - a
        if pos + ln + 20 > out.shape[0]:
            bigger = np.empty(2 * out.shape[0] + ln + 20, dtype=np.uint8)
            bigger[:pos] = out[:pos]
            out = bigger
        for b in range(ln):
            out[pos + b] = prefix_data[a + b]
        pos += ln
        v = fids[r]
        nd = 0
        while True:
            digits[nd] = 48 + v % 10
            nd += 1
            v //= 10
            if v == 0:
                break
        for b in range(nd):
            out[pos + b] = digits[nd - 1 - b]
        pos += nd
        offs[r + 1] = pos
    return offs, out[:pos]
