"""The stateful side of decoding: server instances, users, open files, cache events -> rows.

:class:`Correlator` is the collector's :class:`~.datagrams.DatagramSink`. Per datagram, Python
reads the header, finds the server instance and checks the sequence number; map records (``=``,
``u``, ``d``, ``i``) and the XCache g-stream (JSON) are decoded here, since they are few and
carry text. The f-stream packets of a batch, the bulk, are walked by the compiled loop in
:mod:`.fstream`, which pairs opens with closes and hands back finished accesses as integer
matrices; :mod:`.rows` turns them into Arrow columns. No Python object is made per f-stream
record, except for accesses on an XCache, which wait for the cache's own ``file_close`` event.

State is kept per *server instance* = (sender IP, server id, server start time): dictionary ids
are only unique within one instance, and a restarted server is a new instance. Sequence numbers
(one per stream: map records, f-stream, g-stream) are tracked per instance; a gap is counted as
lost packets, and a late packet that fills a gap takes it back (reordered, not lost).

How an access ends (``end_reason``): ``close`` (its close record), ``disconnect`` (a close the
server forced because the client went away, or the client's disconnect record while the file was
still open: closed at once with the bytes of its last transfer record), ``timeout`` (no record for
``unclosed_timeout`` seconds), ``shutdown`` (the collector stopped), ``server_restart``.

Nothing in a packet can crash the decoder: a packet that cannot be decoded (or the undecodable
tail of an f-stream packet) is counted and handed to ``quarantine`` with its reason.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections import Counter, deque
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from . import fstream as fs, rows as rowlib, snapshot
from .datagrams import DatagramBatch
from .state import Pending, Seq, Server, User
from .wire import (
    CODE_FSTREAM,
    CODE_GSTREAM,
    CODE_INFO,
    CODE_PATH,
    CODE_SERVER_ID,
    CODE_USER,
    GS_PFC,
    GS_PROVIDER_SHIFT,
    GSH,
    GSTREAM_HEADER_BYTES,
    HDR,
    HEADER_BYTES,
    IGNORED_CODES,
    IS_TIME,
    MAP_CODES,
    SID_MASK,
    TIME_BYTES,
    TIME_HAS_SID,
    TOD,
    UNUSED_MAP_CODES,
    BadPacket,
    MapRecord,
    PfcFileClose,
    cgi,
)

#: Distinct unknown kinds kept per server (and of senders): names come from the packets, so a
#: sender must not grow the counters without bound; past it they are counted as "other".
MAX_UNKNOWN_KINDS = 256


def _count_unknown(counter: Counter, kind) -> None:
    if isinstance(kind, str):
        kind = kind[:80]
    if kind not in counter and len(counter) >= MAX_UNKNOWN_KINDS:
        kind = "other" if isinstance(kind, str) else (kind[0], "other")
    counter[kind] += 1


_ERRORS = {
    fs.E_SIZE: "size {size} at offset {off}",
    fs.E_CLOSE: "close of {size} bytes",
    fs.E_OPEN: "open of {size} bytes",
    fs.E_TYPE: "type {type}",
    fs.E_TRAILING: "{left} trailing bytes",
}


class Correlator:
    """Datagrams in, ``emit(pa.Table)`` out (records.FILE_ACCESS schema).

    Arrival times only drive the timeouts, never a row's content, so a replay gives the rows of
    the live run.
    """

    def __init__(
        self,
        emit: Callable[[pa.Table], None],
        quarantine: Callable[[str, tuple, bytes, float], None] | None = None,
        unclosed_timeout: float = 24 * 3600.0,
        cache_grace: float = 5.0,
    ) -> None:
        self.emit = emit
        self.quarantine_sink = quarantine
        self.unclosed_timeout = unclosed_timeout
        self.cache_grace = cache_grace
        self.servers: dict[tuple, Server] = {}
        self._slots: list[Server] = []
        self._last_tod = np.zeros(16, dtype=np.float64)
        self._by_addr: dict[tuple, Server] = {}
        self._open = fs.OpenFiles()
        self._pending: deque[Pending] = deque()
        self._cache_queue: deque = deque()  # (deadline, server, row dict) waiting for a pfc event
        self.stats: Counter = Counter()
        self.quarantined: Counter = Counter()
        #: (sender ip, kind) -> count, for what arrives from no known server
        self.unknown_senders: Counter = Counter()
        self._last_sweep = 0.0
        #: format version of the snapshot restored (0: the unversioned pickle); None: none
        self.restored_format: int | None = None
        self._counters = np.zeros(fs.N_COUNTERS, dtype=np.int64)

    # ---- DatagramSink ---------------------------------------------------------------------------
    def feed_batch(self, batch: DatagramBatch) -> None:
        n = len(batch)
        if n == 0:
            return
        self.stats["packets"] += n
        payload = batch.payload
        offs = batch.offsets
        pk_dgram: list[int] = []
        pk_srv: list[int] = []
        pk_stod: list[int] = []
        raw = payload.data if payload.flags.c_contiguous else payload.tobytes()
        mv = memoryview(raw)
        for i in range(n):
            a, b = int(offs[i]), int(offs[i + 1])
            now = float(batch.arrival[i])
            addr = batch.senders[int(batch.sender[i])]
            try:
                srv = self._datagram(mv, a, b, addr, now)
            except BadPacket as e:
                self._quarantine(str(e), addr, bytes(mv[a:b]), now, batch, i)
                continue
            except (
                struct.error,
                ValueError,
                UnicodeDecodeError,
                KeyError,
                TypeError,
                IndexError,
                AttributeError,
                OverflowError,
                RecursionError,
            ) as e:
                self._quarantine(f"undecodable: {type(e).__name__}: {e}", addr, bytes(mv[a:b]), now, batch, i)
                continue
            if srv is not None:
                pk_dgram.append(i)
                pk_srv.append(srv.slot)
                pk_stod.append(srv.stod)
        if pk_dgram:
            self._walk(
                batch,
                np.asarray(pk_dgram, dtype=np.int64),
                np.asarray(pk_srv, dtype=np.int64),
                np.asarray(pk_stod, dtype=np.int64),
            )
        now = float(batch.arrival[-1])
        self._release(now)
        if now - self._last_sweep >= 1.0:
            self.sweep(now)

    def feed(self, data: bytes, addr: tuple, now: float) -> None:
        """Decode one datagram (tests and simple callers; batches are much faster)."""
        self.feed_batch(DatagramBatch.pack([(now, addr, data)], "feed"))

    def sweep(self, now: float) -> None:
        """Give up opens idle for longer than ``unclosed_timeout``; release rows past their grace."""
        self._last_sweep = now
        of = self._open
        slots = of.active_slots()
        if len(slots):
            stale = slots[of.times[slots, fs.OT_SEEN] < now - self.unclosed_timeout]
            if len(stale):
                self._close_open(stale, "timeout", now)
        okeys, oslots = of.orphan_index.items()
        for fid_key in okeys[of.orphan_times[oslots, fs.CT_ARRIVAL] < now - self.cache_grace].tolist():
            c = of.orphan_index.pop(fid_key)
            of.orphan_free[of.orphan_nfree[0]] = c
            of.orphan_nfree[0] += 1
            self.stats["closes_without_open"] += 1
            self.quarantined["close without open"] += 1
        self._forget_users(now)
        for srv in list(self.servers.values()):
            for lfn in list(srv.pfc_pending):
                keep = [ev for ev in srv.pfc_pending[lfn] if ev[0] > now]
                self.stats["pfc_unmatched"] += len(srv.pfc_pending[lfn]) - len(keep)
                if keep:
                    srv.pfc_pending[lfn] = keep
                else:
                    del srv.pfc_pending[lfn]
        self._release(now)

    def finish(self, now: float) -> None:
        """Shutdown: emit every open file as unclosed and every waiting row."""
        slots = self._open.active_slots()
        if len(slots):
            self._close_open(slots, "shutdown", now)
        n_orphans = len(self._open.orphan_index)
        if n_orphans:
            self.stats["closes_without_open"] += n_orphans
            self.quarantined["close without open"] += n_orphans
            self._open.release_orphans()
        self._release(float("inf"))
        for srv in self.servers.values():
            if srv.pfc_pending:
                self.stats["pfc_unmatched"] += sum(len(v) for v in srv.pfc_pending.values())
                srv.pfc_pending.clear()

    def snapshot(self) -> bytes:
        """The decoder's state as a versioned JSON document (:mod:`.snapshot` documents it)."""
        return snapshot.dump(self)

    def restore(self, state: bytes) -> None:
        """Continue from a :meth:`snapshot` of this or an earlier tierlens (the unversioned pickle
        included); :class:`~.snapshot.SnapshotError` for one it cannot read."""
        self.restored_format = snapshot.load(state, self)

    # ---- what the receiving side reports ----------------------------------------------------------
    def server_stats(self) -> list[dict]:
        per: Counter = Counter()
        slots = self._open.active_slots()
        if len(slots):
            for s, c in zip(*np.unique(self._open.ints[slots, fs.O_KEY] >> 32, return_counts=True)):
                per[int(s)] = int(c)
        return [
            {
                "server": s.name,
                "ip": s.ip,
                "sid": s.sid,
                "stod": s.stod,
                "role": s.role,
                "packets": s.packets,
                "lost": s.lost,
                "duplicates": s.duplicates,
                "reordered": s.reordered,
                "open_files": per[s.slot],
            }
            for s in self.servers.values()
        ]

    def unknown_counts(self) -> dict[tuple[str, str], int]:
        """(server name, kind) -> records not decoded, since the start (cumulative). Kinds:
        ``map:<code>`` (map records not used), ``code:<code>`` (packet codes not known),
        ``json:<code>`` (JSON packets not known), ``gstream:<type>`` (g-stream packets of a
        provider other than the cache's), ``gstream_event:<name>`` (cache events other than
        file_close), ``field:file_close.<name>`` (fields of a file_close not known)."""
        out: Counter = Counter()
        for srv in self.servers.values():
            for kind, n in srv.unknown.items():
                out[(srv.name, kind)] += n
        for (ip, kind), n in self.unknown_senders.items():
            out[(ip, kind)] += n
        return dict(out)

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.servers.values()) + self.stats["lost_retired"]

    # ---- per datagram -----------------------------------------------------------------------------
    def _quarantine(
        self, reason: str, addr: tuple, data: bytes, now: float, batch: DatagramBatch | None = None, i: int = -1
    ) -> None:
        key = reason.split(":")[0]
        self.quarantined[key] += 1
        if batch is not None and i >= 0 and batch.positions[i] >= 0:
            reason = f"{reason} (datagram at {batch.source}:{int(batch.positions[i])})"
        if self.quarantine_sink is not None:
            self.quarantine_sink(reason, addr, data, now)

    def _server(self, ip: str, sid: int, stod: int) -> Server:
        key = (ip, sid, stod)
        srv = self.servers.get(key)
        if srv is None:
            srv = self.servers[key] = Server(ip, sid, stod, len(self._slots))
            self._slots.append(srv)
            if srv.slot >= self._last_tod.shape[0]:
                self._last_tod = np.concatenate([self._last_tod, np.zeros_like(self._last_tod)])
            self.stats["server_instances"] += 1
        return srv

    def _sequence(self, srv: Server, stream: str, pseq: int, payload) -> bool:
        """Track the stream's sequence number; False for a duplicate packet (to be ignored)."""
        srv.packets += 1
        # The header (with plen and stod), the time window and the last records (newest dictids)
        # tell two packets apart; hashing the whole payload would cost the decoder a tenth.
        key = (pseq, zlib.crc32(payload[-64:], zlib.crc32(payload[:64])))
        seq = srv.seqs.get(stream)
        if seq is None:
            seq = srv.seqs[stream] = Seq(pseq)
            seq.seen.append(key)
            return True
        if key in seq.seen:
            srv.duplicates += 1
            return False
        diff = (pseq - seq.last) & 0xFF
        if diff in (0, 1):  # 0 with new bytes: the number wrapped (256+ lost; the kernel counts them)
            seq.last = pseq
        elif diff < 128:
            for k in range(1, diff):
                seq.missing.add((seq.last + k) & 0xFF)
            srv.lost += diff - 1
            seq.last = pseq
            if len(seq.missing) > 128:
                seq.missing.clear()
        elif pseq in seq.missing:
            seq.missing.discard(pseq)
            srv.lost -= 1
            srv.reordered += 1
        else:
            srv.reordered += 1  # older than the first packet seen of this stream
        seq.seen.append(key)
        return True

    def _datagram(self, mv: memoryview, a: int, b: int, addr: tuple, now: float) -> Server | None:
        """Decode a datagram, except f-stream records: for an f-stream packet to walk, its server."""
        n = b - a
        if n and mv[a] == 0x7B:  # '{'
            self._json_packet(bytes(mv[a:b]), addr, now)
            return None
        if n < HEADER_BYTES:
            raise BadPacket("truncated: shorter than the 8-byte header")
        code, pseq, plen, stod = HDR.unpack_from(mv, a)
        if plen != n:
            if plen > n:
                raise BadPacket(f"truncated: plen {plen} > {n} bytes received")
            raise BadPacket(f"oversized: {n} bytes received, plen {plen}")
        if code == CODE_FSTREAM:
            return self._fstream_server(mv, a, n, addr, pseq, stod, now)
        if code in MAP_CODES:
            self._map(code, bytes(mv[a:b]), addr, pseq, stod, now)
        elif code == CODE_GSTREAM:
            if n < GSTREAM_HEADER_BYTES:
                raise BadPacket("truncated: g-stream header")
            _, _, sid = GSH.unpack_from(mv, a + HEADER_BYTES)
            srv = self._server(addr[0], sid & SID_MASK, stod)
            provider = (sid >> GS_PROVIDER_SHIFT) & 0xFF
            # each provider's g-stream numbers its packets on its own
            stream = "g" if provider in (0, ord(GS_PFC)) else f"g{provider}"
            if self._sequence(srv, stream, pseq, mv[a:b]):
                if provider in (0, ord(GS_PFC)):
                    self._gstream_events(srv, bytes(mv[a + GSTREAM_HEADER_BYTES : b]), now)
                else:  # another provider's g-stream (HTTP, TCP, throttle...): counted, not decoded
                    _count_unknown(srv.unknown, f"gstream:{chr(provider) if 32 < provider < 127 else provider}")
        elif code in UNUSED_MAP_CODES:
            rec = MapRecord.unpack(code, bytes(mv[a:b]))
            if rec.userid.sid is None:
                raise BadPacket("bad map record: no server id in the user id")
            _count_unknown(self._server(addr[0], rec.userid.sid, stod).unknown, f"map:{chr(code)}")
        elif code in IGNORED_CODES:
            self.stats[f"ignored_{chr(code)}"] += 1
        else:
            srv = self._by_addr.get((addr[0], addr[1], stod))
            kind = f"code:{chr(code) if 32 < code < 127 else hex(code)}"
            if srv is not None:
                _count_unknown(srv.unknown, kind)
            else:
                _count_unknown(self.unknown_senders, (addr[0], kind))
            raise BadPacket(f"unknown code: {code:#04x}")
        return None

    def _fstream_server(self, mv, a: int, n: int, addr: tuple, pseq: int, stod: int, now: float) -> Server | None:
        srv = None
        if n >= HEADER_BYTES + TIME_BYTES:
            rtype, rflag, _, _, _, _, _, sid = TOD.unpack_from(mv, a + HEADER_BYTES)
            if rtype == IS_TIME and rflag & TIME_HAS_SID:
                srv = self._server(addr[0], sid & SID_MASK, stod)
                self._by_addr[(addr[0], addr[1], stod)] = srv
        if srv is None:
            srv = self._by_addr.get((addr[0], addr[1], stod))
            if srv is None:
                raise BadPacket("unknown server: f-stream packet without a server id")
        if not self._sequence(srv, "f", pseq, mv[a : a + n]):
            return None
        srv.last_time = max(srv.last_time, now)
        return srv

    def _map(self, code: int, data: bytes, addr: tuple, pseq: int, stod: int, now: float) -> None:
        rec = MapRecord.unpack(code, data)
        uid = rec.userid
        if uid.sid is None:
            raise BadPacket("bad map record: no server id in the user id")
        srv = self._server(addr[0], uid.sid, stod)
        self._by_addr[(addr[0], addr[1], stod)] = srv
        if not self._sequence(srv, "map", pseq, data):
            return
        srv.last_time = max(srv.last_time, now)
        if code == CODE_SERVER_ID:
            info = cgi(rec.info)
            srv.host = uid.host
            srv.pid = uid.pid
            port = info.get("port", "")
            srv.port = int(port) if port.isdigit() else None
            srv.inst, srv.site = info.get("inst"), info.get("site") or None
            self.stats["server_ids"] += 1
            self._retire_others(srv, now)
        elif code == CODE_USER:
            info = cgi(rec.info)
            u = User(
                uid.protocol,
                uid.user,
                uid.pid,
                uid.host,
                info.get("x") or None,
                info.get("y") or None,
                None,
                rec.raw_userid,
            )
            srv.users[rec.dictid] = u
            srv.users_by_id[rec.raw_userid] = u
            self.stats["user_logins"] += 1
        elif code == CODE_PATH:
            srv.paths[rec.dictid] = (rec.info, rec.raw_userid)
            self.stats["path_maps"] += 1
        elif code == CODE_INFO:
            u = srv.users_by_id.get(rec.raw_userid)
            if u is not None:
                u.info = rec.info
            self.stats["info_maps"] += 1

    def _retire_others(self, srv: Server, now: float) -> None:
        """A server that identifies itself with a newer start time has restarted: its earlier
        instance's open files will never close."""
        for other in list(self.servers.values()):
            if (
                other is not srv
                and other.ip == srv.ip
                and other.port == srv.port
                and other.host == srv.host
                and other.stod < srv.stod
                and not other.retired
            ):
                other.retired = True
                self.stats["server_restarts"] += 1
                slots = self._open.active_slots()
                mine = slots[(self._open.ints[slots, fs.O_KEY] >> 32) == other.slot]
                if len(mine):
                    self._close_open(mine, "server_restart", now)

    # ---- f-stream: the compiled walk --------------------------------------------------------------
    def _walk(self, batch: DatagramBatch, pk_dgram: np.ndarray, pk_srv: np.ndarray, pk_stod: np.ndarray) -> None:
        of = self._open
        pk_now = batch.arrival[pk_dgram].astype(np.float64)
        f_bytes = int((batch.offsets[pk_dgram + 1] - batch.offsets[pk_dgram]).sum())
        cap = max(64, f_bytes // 64)
        rows = np.empty((fs.R_COLS, cap), dtype=np.int64)
        row_times = np.empty((cap, 2), dtype=np.float64)
        discs = np.empty((max(16, f_bytes // 256), 2), dtype=np.int64)
        disc_times = np.empty((discs.shape[0], 2), dtype=np.float64)
        errors = np.zeros((len(pk_dgram), 2), dtype=np.int64)
        nrows = np.zeros(1, dtype=np.int64)
        ndiscs = np.zeros(1, dtype=np.int64)
        counters = self._counters
        counters[:] = 0
        packets = fs.Packets(
            batch.payload, batch.offsets.astype(np.int64, copy=False), pk_dgram, pk_srv, pk_stod, pk_now
        )
        k = 0
        while True:
            # room for this packet's worst case, and (the tables growing geometrically) the next ones
            worst = int((batch.offsets[pk_dgram[k] + 1] - batch.offsets[pk_dgram[k]]) // fs.WIRE.file_hdr_bytes + 1)
            of.ensure(4 * worst, 32 * worst * 8, 4 * worst)
            k = fs.walk(
                packets,
                k,
                of.open_table(),
                of.lfn_arena(),
                of.orphan_table(),
                self._last_tod,
                fs.Output(rows, row_times, nrows, discs, disc_times, ndiscs, errors, counters),
                fs.WIRE,
            )
            if nrows[0]:
                self._closed_rows(rows[:, : nrows[0]], row_times[: nrows[0]], float(pk_now[min(k, len(pk_now)) - 1]))
                nrows[0] = 0
            if k >= len(pk_dgram):
                break
            worst = int((batch.offsets[pk_dgram[k] + 1] - batch.offsets[pk_dgram[k]]) // fs.WIRE.file_hdr_bytes + 1)
            if rows.shape[1] < worst or ndiscs[0] + worst > discs.shape[0]:
                rows = np.empty((fs.R_COLS, max(worst, rows.shape[1])), dtype=np.int64)
                row_times = np.empty((rows.shape[1], 2), dtype=np.float64)
                if ndiscs[0] + worst > discs.shape[0]:
                    discs = np.concatenate([discs, np.empty((discs.shape[0] + worst, 2), dtype=np.int64)])
                    disc_times = np.concatenate([disc_times, np.empty((disc_times.shape[0] + worst, 2))])
        for name, idx in (
            ("opens", fs.N_OPENS),
            ("closes", fs.N_CLOSES),
            ("xfrs", fs.N_XFRS),
            ("disconnects", fs.N_DISCS),
            ("reordered_closes", fs.N_REORDERED),
        ):
            if counters[idx]:
                self.stats[name] += int(counters[idx])
        for j in np.flatnonzero(errors[:, 0]):
            self._walk_error(batch, int(pk_dgram[j]), int(errors[j, 0]), int(errors[j, 1]))
        if ndiscs[0]:
            self._disconnects(discs[: ndiscs[0]], disc_times[: ndiscs[0]])

    def _walk_error(self, batch: DatagramBatch, i: int, code: int, off: int) -> None:
        data = batch.datagram(i)
        rtype = data[off] if off < len(data) else -1
        size = struct.unpack_from(">h", data, off + 2)[0] if off + 4 <= len(data) else -1
        what = _ERRORS[code].format(size=size, off=off, type=rtype, left=len(data) - off)
        self._quarantine(f"bad f-stream record: {what}", batch.addr(i), data, float(batch.arrival[i]), batch, i)

    def _disconnects(self, discs: np.ndarray, times: np.ndarray) -> None:
        """A user's disconnect ends the accesses it left open: close them now with their bytes.

        Each ends in the time window of the packet that carried its user's disconnect, not at the
        server's latest window: the walk has by now read the batch's later packets, whose windows
        would put the end after the cache's detach and lose the match with its file_close."""
        keys_gone = (discs[:, fs.D_SRV] << 32) | discs[:, fs.D_USER]
        for (slot, uid), t in zip(discs.tolist(), times[:, fs.D_ARRIVAL].tolist()):
            self._slots[slot].disconnected[uid] = t
        of = self._open
        slots = of.active_slots()
        if not len(slots):
            return
        keys = (of.ints[slots, fs.O_KEY] >> 32 << 32) | of.ints[slots, fs.O_USER]
        hit = np.isin(keys, keys_gone)
        gone = slots[hit]
        if len(gone):
            # a user dictid is disconnected once; should it repeat, its first window counts
            order = np.argsort(keys_gone, kind="stable")
            first = order[np.searchsorted(keys_gone[order], keys[hit])]
            self._close_open(gone, "disconnect", float(times[:, fs.D_ARRIVAL].max()), ends=times[first, fs.D_TEND])

    def _close_open(self, slots: np.ndarray, reason: str, now: float, ends: np.ndarray | None = None) -> None:
        """Emit open files as ended without a close record (``reason``) with their last bytes,
        ending at ``ends`` (per slot) or else at their server's latest time window."""
        of = self._open
        ints = of.ints[slots]
        srv = ints[:, fs.O_KEY] >> 32
        rows = np.empty((fs.R_COLS, len(slots)), dtype=np.int64)
        rows[fs.R_SRV] = srv
        rows[fs.R_FID] = ints[:, fs.O_KEY] & 0xFFFFFFFF
        rows[fs.R_SIZE] = ints[:, fs.O_SIZE]
        rows[fs.R_RD], rows[fs.R_RV], rows[fs.R_WR] = ints[:, fs.O_RD], ints[:, fs.O_RV], ints[:, fs.O_WR]
        rows[fs.R_NRD] = rows[fs.R_NRV] = rows[fs.R_NWR] = -1
        rows[fs.R_USER] = ints[:, fs.O_USER]
        rows[fs.R_REASON] = -1
        rows[fs.R_LFN_OFF], rows[fs.R_LFN_LEN] = ints[:, fs.O_LFN_OFF], ints[:, fs.O_LFN_LEN]
        times = np.empty((len(slots), 2), dtype=np.float64)
        times[:, 0] = of.times[slots, fs.OT_START]
        times[:, 1] = np.maximum(times[:, 0], self._last_tod[srv] if ends is None else ends)
        self.stats["unclosed" if reason != "disconnect" else "closed_at_disconnect"] += len(slots)
        self._closed_rows(rows, times, now, reason)
        of.release(slots)

    # ---- rows -------------------------------------------------------------------------------------
    def _closed_rows(self, rows: np.ndarray, times: np.ndarray, now: float, reason: str | None = None) -> None:
        """Finished accesses from the walk (or from the open table) -> Arrow, then wait for the grace."""
        users = self._users_of(rows)
        lfns = None
        no_lfn = rows[fs.R_LFN_LEN] < 0
        if no_lfn.any():
            lfns, keep = self._path_lfns(rows, no_lfn, users, reason)
            rows, times = rows[:, keep], times[keep]
            lfns = [x for x, k in zip(lfns, keep.tolist()) if k]
            users = (users[0], users[1][keep])
            if not rows.shape[1]:
                return
        ch = rowlib.chunk(rows, times, self._open.arena, users, reason, lfns)
        deadline = now + self.cache_grace
        if any(s.is_cache for s in self._slots):
            slots = ch.ints[fs.R_SRV]
            cache = np.fromiter((self._slots[s].is_cache for s in slots.tolist()), dtype=bool, count=len(slots))
            if cache.any():
                self._to_cache_wait(ch.select(cache), deadline)
                ch = ch.select(~cache)
        if len(ch):
            self._pending.append(Pending(deadline, ch))

    def _path_lfns(self, rows: np.ndarray, no_lfn: np.ndarray, users: tuple, reason: str | None):
        """Opens without an lfn (monitoring without ``lfn``): the name (and user) of a ``d`` path map."""
        lfns: list[str | None] = [None] * rows.shape[1]
        keep = np.ones(rows.shape[1], dtype=bool)
        for j in np.flatnonzero(no_lfn).tolist():
            srv = self._slots[int(rows[fs.R_SRV, j])]
            p = srv.paths.pop(int(rows[fs.R_FID, j]), None)
            if p is None:
                keep[j] = False
                if reason in (None, "disconnect"):
                    self.stats["closes_without_lfn"] += 1
                    self.quarantined["close without file name"] += 1
                else:
                    self.stats["unclosed_without_lfn"] += 1
                continue
            lfns[j] = p[0]
            objs, idx = users
            if objs[idx[j]] is None:
                objs.append(srv.users_by_id.get(p[1]))
                idx[j] = len(objs) - 1
        return lfns, keep

    def _users_of(self, rows: np.ndarray) -> tuple[list[User | None], np.ndarray]:
        """The login of each row, looked up once per distinct (server, user dictid): the distinct
        logins and, per row, an index into them."""
        keys = (rows[fs.R_SRV] << 32) | rows[fs.R_USER]
        uniq, inv = np.unique(keys, return_inverse=True)
        found = [
            self._slots[key >> 32].users.get(key & 0xFFFFFFFF) if key & 0xFFFFFFFF else None for key in uniq.tolist()
        ]
        return found, inv.astype(np.int64)

    def _forget_users(self, now: float) -> None:
        forget = now - max(60.0, 2 * self.cache_grace)
        slots = self._open.active_slots()
        in_use = (
            set(((self._open.ints[slots, fs.O_KEY] >> 32 << 32) | self._open.ints[slots, fs.O_USER]).tolist())
            if len(slots)
            else set()
        )
        for srv in self._slots:
            for uid in [u for u, t in srv.disconnected.items() if t < forget]:
                if (srv.slot << 32 | uid) in in_use:
                    continue
                del srv.disconnected[uid]
                u = srv.users.pop(uid, None)
                if u is not None and srv.users_by_id.get(u.userid) is u:
                    del srv.users_by_id[u.userid]

    def _release(self, now: float) -> None:
        out: list[pa.Table] = []
        due = []
        while self._pending and self._pending[0].deadline <= now:
            due.append(self._pending.popleft().chunk)
        if due:
            out.append(rowlib.build(rowlib.concat(due), self._slots))
        q = self._cache_queue
        cache_rows = []
        while q and q[0][0] <= now:
            _, srv, row = q.popleft()
            lst = srv.waiting.get(row["file_lfn"])
            if lst is not None:
                try:
                    lst.remove(row)
                except ValueError:
                    pass
                if not lst:
                    del srv.waiting[row["file_lfn"]]
            row.update(server_host=srv.name, server_role=srv.role, server_pid=srv.pid, server_addr=srv.ip)
            if row["cache_hit_bytes"] is None:
                self.stats["cache_accesses_unmatched"] += 1
            cache_rows.append(row)
        if cache_rows:
            out.append(rowlib.from_dicts(cache_rows))
        for t in out:
            self.stats["rows"] += t.num_rows
            self.emit(t)

    # ---- XCache g-stream ----------------------------------------------------------------------------
    def _to_cache_wait(self, ch: rowlib.Chunk, deadline: float) -> None:
        for row, slot in zip(rowlib.build(ch, self._slots).to_pylist(), ch.ints[fs.R_SRV].tolist()):
            srv = self._slots[slot]
            self._match_waiting_row(srv, row)
            srv.waiting.setdefault(row["file_lfn"], []).append(row)
            self._cache_queue.append((deadline, srv, row))

    def _became_cache(self, srv: Server) -> None:
        """The first g-stream event of a server: its accesses still waiting may get cache bytes."""
        srv.is_cache = True
        for p in self._pending:
            mine = p.chunk.ints[fs.R_SRV] == srv.slot
            if mine.any():
                self._to_cache_wait(p.chunk.select(mine), p.deadline)
                p.chunk = p.chunk.select(~mine)

    def _json_packet(self, data: bytes, addr: tuple, now: float) -> None:
        text = data.decode("utf-8")
        head_line, _, rest = text.partition("\n")
        try:
            head = json.loads(head_line.strip().strip("\0"))
        except json.JSONDecodeError as e:
            raise BadPacket(f"bad json: {e.msg}") from e
        if not isinstance(head, dict):
            raise BadPacket("bad json: header is not an object")
        code = head.get("code")
        sid, stod = head.get("sid"), head.get("stod")
        if not isinstance(sid, int) or not isinstance(stod, int):
            raise BadPacket("bad json: header without integer sid and stod")
        srv = self._server(addr[0], sid & SID_MASK, stod)
        gs = head.get("gs") or {}
        provider = gs.get("type") if isinstance(gs, dict) else None
        pseq = head.get("pseq")
        stream = f"json{code}" if provider in (None, GS_PFC) else f"json{code}{provider}"
        if isinstance(pseq, int) and not self._sequence(srv, stream, pseq & 0xFF, data):
            return
        srv.last_time = max(srv.last_time, now)
        if code not in ("=", "g"):  # e.g. the g-stream's own 'd'/'i' dictionary packets
            _count_unknown(srv.unknown, f"json:{code}")
            return
        if code == "=":
            src = head.get("src") or {}
            if isinstance(src, dict) and srv.host is None and isinstance(src.get("host"), str):
                srv.host = src["host"]
                srv.port = src.get("port") if isinstance(src.get("port"), int) else None
                srv.inst = src.get("inst")
            self.stats["gstream_ids"] += 1
        else:
            if provider not in (None, GS_PFC):  # another provider's g-stream (6.x: HTTP 'H')
                _count_unknown(srv.unknown, f"gstream:{provider}")
                return
            if provider == GS_PFC and not srv.is_cache:
                self._became_cache(srv)
            self._gstream_events(srv, rest, now)

    def _gstream_events(self, srv: Server, payload, now: float) -> None:
        if isinstance(payload, bytes):
            payload = payload.rstrip(b"\0").decode("utf-8")
        for line in payload.splitlines():
            line = line.strip().rstrip("\0")
            if not line:
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                self.quarantined["bad json event"] += 1
                continue
            if not isinstance(ev, dict):
                self.quarantined["bad json event"] += 1
                continue
            if ev.get("event") == "file_close":
                if not srv.is_cache:
                    self._became_cache(srv)
                for name in PfcFileClose.unknown_fields(ev):
                    _count_unknown(srv.unknown, f"field:file_close.{name}")
                self._pfc_close(srv, ev, now)
            else:
                self.stats["gstream_other_events"] += 1
                _count_unknown(srv.unknown, f"gstream_event:{ev.get('event')}")

    @staticmethod
    def _covers(ev: PfcFileClose, row: dict) -> bool:
        """Whether a cache file attached at ``attach`` and detached at ``detach`` (whole seconds)
        can hold an access seen in the f-stream window [start, end] (flush-interval resolution)."""
        start, end = row["start_time"].timestamp(), row["end_time"].timestamp()
        return (ev.attach_t is None or start >= ev.attach_t - 1) and (ev.detach_t is None or end <= ev.detach_t + 2)

    def _match_waiting_row(self, srv: Server, row: dict) -> None:
        """An access that closed after its file_close event arrived."""
        events = srv.pfc_pending.get(row["file_lfn"])
        if not events:
            return
        for ev in events:
            if self._covers(ev[1], row):
                rowlib.set_cache(
                    row, ev[1], ev[1].b_hit, ev[1].b_miss, ev[1].b_bypass, ev[1].b_todisk, ev[1].b_prefetch
                )
                events.remove(ev)
                if not events:
                    del srv.pfc_pending[row["file_lfn"]]
                self.stats["pfc_matched"] += 1
                return

    def _pfc_close(self, srv: Server, raw: dict, now: float) -> None:
        self.stats["pfc_file_close"] += 1
        ev = PfcFileClose.from_json(raw)
        if ev is None:
            self.quarantined["bad pfc file_close"] += 1
            return
        rows = [r for r in srv.waiting.get(ev.lfn, ()) if r["cache_hit_bytes"] is None and self._covers(ev, r)]
        if not rows:
            # The f-stream close may still be on its way: wait for it as long as rows wait for us.
            srv.pfc_pending.setdefault(ev.lfn, []).append([now + self.cache_grace, ev])
            return
        # Accesses that shared one attach of the cache file share its bytes, by bytes read.
        total_read = sum(r["read_bytes_at_close"] or 0 for r in rows)
        parts = []
        for v in (ev.b_hit, ev.b_miss, ev.b_bypass, ev.b_todisk, ev.b_prefetch):
            if v is None:
                parts.append([None] * len(rows))
                continue
            left, split = v, []
            for j, r in enumerate(rows):
                if j == len(rows) - 1:
                    part = left
                elif total_read:
                    part = v * (r["read_bytes_at_close"] or 0) // total_read
                else:
                    part = v // len(rows)
                left -= part
                split.append(part)
            parts.append(split)
        for j, r in enumerate(rows):
            rowlib.set_cache(r, ev, *(p[j] for p in parts))
        self.stats["pfc_matched"] += 1
