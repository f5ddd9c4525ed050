"""Decode XRootD monitoring packets into file_access rows.

The binary layouts are those of ``XrdXrootdMonData.hh`` (xrootd 5.x), all in network byte
order:

* every binary packet starts with ``XrdXrootdMonHeader``: code, pseq, plen, stod;
* map records (``=`` server identity, ``u`` user login, ``d`` path, ``i`` info, ...) carry a
  dictid and the text ``userid\\ninfo`` where userid is ``[prot/]user.pid:sid@host``;
* the f-stream (code ``f``) is a sequence of ``XrdXrootdMonFileHdr`` records: isTime (with the
  server id ``sID`` in its low 48 bits), isOpen (file size, user dictid and lfn), isClose (bytes
  read/readv/written and, with ``ops``, the op counts), isXfr and isDisc;
* the g-stream of an XCache (``xrootd.mongstream pfc ... send json``) arrives as JSON text: a
  header object with code, pseq, stod, sid, then one ``file_close`` event per line with b_hit,
  b_miss and b_bypass. The binary g header (``XrdXrootdMonGS``) followed by JSON lines is also
  accepted.

State is kept per *server instance* = (sender IP, server id, server start time): dictionary ids
are only unique within one instance, and a restarted server is a new instance. Sequence numbers
(one per stream: map records, f-stream, g-stream) are tracked per instance; a gap is counted as
lost packets, and a late packet that fills a gap takes it back (reordered, not lost).

Nothing in a packet can crash the decoder: a packet that cannot be decoded (or the undecodable
tail of an f-stream packet) is counted and handed to ``quarantine`` with its reason.
"""

from __future__ import annotations

import json
import pickle
import struct
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

HDR = struct.Struct(">BBHi")          # XrdXrootdMonHeader: code, pseq, plen, stod
U32 = struct.Struct(">I")              # map dictid
FREC = struct.Struct(">BBhI")          # XrdXrootdMonFileHdr: recType, recFlag, recSize, fileID/userID
TOD = struct.Struct(">BBhhhiiq")       # XrdXrootdMonFileTOD: hdr (nRecs[2]), tBeg, tEnd, sID
OPN = struct.Struct(">BBhIq")          # XrdXrootdMonFileOPN without the lfn: hdr, fsz
XFR = struct.Struct(">qqq")            # XrdXrootdMonStatXFR: read, readv, write
OPS = struct.Struct(">iiihhqiiiiii")   # XrdXrootdMonStatOPS (48 bytes)
GSH = struct.Struct(">iiq")            # XrdXrootdMonGS after the header: tBeg, tEnd, sID

IS_CLOSE, IS_OPEN, IS_TIME, IS_XFR, IS_DISC = 0, 1, 2, 3, 4
HAS_OPS, HAS_LFN, HAS_SID = 0x02, 0x01, 0x01
SID_MASK = (1 << 48) - 1

#: Column order of a row; the names of records.FILE_ACCESS.
COLUMNS = (
    "server_host", "unique_id", "server_role", "file_lfn", "file_size_bytes", "start_time", "end_time",
    "read_single_average_bytes", "read_vector_average_bytes", "write_average_bytes",
    "read_bytes_at_close", "write_bytes_at_close", "read_bytes", "readv_bytes", "write_bytes",
    "read_ops", "readv_ops", "write_ops", "client_host", "client_pid", "app_name", "job_identity",
    "cache_hit_bytes", "cache_miss_bytes", "cache_bypass_bytes", "close_seen",
)
(C_SERVER, C_UID, C_ROLE, C_LFN, C_SIZE, C_START, C_END, C_RSAVG, C_RVAVG, C_WAVG, C_RCLOSE,
 C_WCLOSE, C_READ, C_READV, C_WRITE, C_ROPS, C_RVOPS, C_WOPS, C_CHOST, C_CPID, C_APP, C_JOB,
 C_HIT, C_MISS, C_BYPASS, C_CLOSED) = range(len(COLUMNS))

MAP_CODES = frozenset(b"=diu")
#: Packets of other monitoring streams (redirect, trace, purge, transfer maps): counted, not decoded.
IGNORED_CODES = frozenset(b"rtpx")


class BadPacket(Exception):
    """Raised inside the decoder for a packet (or record) it cannot decode; carries the reason."""


@dataclass
class User:
    protocol: str
    name: str
    pid: int | None
    host: str
    app: str | None = None
    job_identity: str | None = None
    info: str | None = None
    userid: str = ""


@dataclass
class Seq:
    last: int
    missing: set[int] = field(default_factory=set)
    #: sequence numbers of the last 128 packets, to tell a duplicate from a late packet
    seen: deque = field(default_factory=lambda: deque(maxlen=128))


@dataclass
class Server:
    """One server instance: (sender IP, sid, start time). Dictionaries live here."""

    ip: str
    sid: int
    stod: int
    host: str | None = None
    port: int | None = None
    inst: str | None = None
    site: str | None = None
    is_cache: bool = False
    retired: bool = False
    users: dict[int, User] = field(default_factory=dict)
    users_by_id: dict[str, User] = field(default_factory=dict)
    paths: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: fileID -> [lfn, size, start, user, last_seen, read, readv, write]
    files: dict[int, list] = field(default_factory=dict)
    #: fileID -> (close row values, arrival time) for a close that came before its open
    orphan_closes: dict[int, tuple] = field(default_factory=dict)
    #: lfn -> rows closed but not yet emitted (a pfc file_close may still add cache bytes)
    waiting: dict[str, list[list]] = field(default_factory=dict)
    #: lfn -> pfc file_close events not yet matched to a close: [deadline, (hit, miss, bypass), attach, detach]
    pfc_pending: dict[str, list[list]] = field(default_factory=dict)
    seqs: dict[str, Seq] = field(default_factory=dict)
    #: user dictid -> arrival time of its disconnect; forgotten a while later
    disconnected: dict[int, float] = field(default_factory=dict)
    #: latest f-stream time window end the server reported (server clock)
    last_tod: float = 0.0
    lost: int = 0
    duplicates: int = 0
    reordered: int = 0
    packets: int = 0
    last_time: float = 0.0

    @property
    def name(self) -> str:
        if self.host is not None:
            return f"{self.host}:{self.port}" if self.port else self.host
        return self.ip


def _host(raw: str) -> str:
    h = raw.strip("[]")
    if h.startswith("::ffff:") and "." in h:
        h = h[7:]
    return h


def parse_userid(text: str) -> tuple[str, str, int | None, int | None, str]:
    """``[prot/]user.pid:sid@host`` -> (prot, user, pid, sid, host)."""
    prot, slash, rest = text.partition("/")
    if not slash:
        prot, rest = "", text
    who, at, host = rest.rpartition("@")
    if not at:
        raise BadPacket("user id without '@host'")
    userpid, _, sid = who.rpartition(":")
    user, dot, pid = userpid.rpartition(".")
    if not dot:
        user, pid = userpid, ""
    return (prot, user, int(pid) if pid.isdigit() else None,
            int(sid) if sid.isdigit() else None, _host(host))


def _cgi(text: str) -> dict[str, str]:
    out = {}
    for part in text.split("&"):
        k, eq, v = part.partition("=")
        if eq:
            out[k] = v
    return out


class Decoder:
    """Turns packets into rows; ``emit(row)`` receives each finished row (a list in COLUMNS order).

    ``now`` passed to :meth:`feed` is the arrival time (wall clock live, capture time in a replay);
    it only drives the timeouts, never a row's content, so a replay gives the rows of the live run.
    """

    def __init__(self, emit: Callable[[list], None],
                 quarantine: Callable[[str, tuple, bytes, float], None] | None = None,
                 unclosed_timeout: float = 24 * 3600.0, cache_grace: float = 5.0) -> None:
        self.emit = emit
        self.quarantine_sink = quarantine
        self.unclosed_timeout = unclosed_timeout
        self.cache_grace = cache_grace
        self.servers: dict[tuple, Server] = {}
        self._by_addr: dict[tuple, Server] = {}
        self._queue: deque = deque()      # (deadline, server, row) waiting for a pfc event
        self.stats: Counter = Counter()
        self.quarantined: Counter = Counter()
        self._last_sweep = 0.0

    # ---- entry points -------------------------------------------------------------------
    def feed(self, data: bytes, addr: tuple, now: float) -> None:
        """Decode one UDP payload from ``addr`` (ip, port) that arrived at ``now``."""
        self.stats["packets"] += 1
        try:
            if data[:1] == b"{":
                self._json_packet(data, addr, now)
            else:
                self._binary_packet(data, addr, now)
        except BadPacket as e:
            self._quarantine(str(e), addr, data, now)
        except (struct.error, ValueError, UnicodeDecodeError, KeyError, TypeError, IndexError,
                AttributeError, OverflowError, RecursionError) as e:
            self._quarantine(f"undecodable: {type(e).__name__}: {e}", addr, data, now)
        if self._queue and self._queue[0][0] <= now:
            self._release(now)
        if now - self._last_sweep >= 1.0:
            self.sweep(now)

    def feed_batch(self, batch) -> None:
        """Decode every datagram of a DatagramBatch in order (DatagramSink)."""
        for now, addr, data in batch:
            self.feed(data, addr, now)

    def snapshot(self) -> bytes:
        """The decoder's state without its callbacks and settings (DatagramSink)."""
        skip = ("emit", "quarantine_sink", "unclosed_timeout", "cache_grace")
        return pickle.dumps({k: v for k, v in self.__dict__.items() if k not in skip}, pickle.HIGHEST_PROTOCOL)

    def restore(self, state: bytes) -> None:
        """Continue from a :meth:`snapshot` (DatagramSink)."""
        self.__dict__.update(pickle.loads(state))

    def sweep(self, now: float) -> None:
        """Give up opens idle for longer than ``unclosed_timeout``; release rows past their grace."""
        self._last_sweep = now
        limit = now - self.unclosed_timeout
        for srv in list(self.servers.values()):
            stale = [fid for fid, f in srv.files.items() if f[4] < limit]
            for fid in stale:
                self._emit_unclosed(srv, fid, srv.files.pop(fid))
            for fid in [fid for fid, (_, t) in srv.orphan_closes.items() if t < now - self.cache_grace]:
                srv.orphan_closes.pop(fid)
                self.stats["closes_without_open"] += 1
                self.quarantined["close without open"] += 1
            forget = now - max(60.0, 2 * self.cache_grace)
            for uid in [u for u, t in srv.disconnected.items() if t < forget]:
                del srv.disconnected[uid]
                u = srv.users.pop(uid, None)
                if u is not None and srv.users_by_id.get(u.userid) is u:
                    del srv.users_by_id[u.userid]
            for lfn in list(srv.pfc_pending):
                keep = [ev for ev in srv.pfc_pending[lfn] if ev[0] > now]
                self.stats["pfc_unmatched"] += len(srv.pfc_pending[lfn]) - len(keep)
                if keep:
                    srv.pfc_pending[lfn] = keep
                else:
                    del srv.pfc_pending[lfn]
            if srv.retired and not srv.files and not srv.waiting:
                self.servers.pop((srv.ip, srv.sid, srv.stod), None)
                self.stats["lost_retired"] += srv.lost
        self._release(now)

    def finish(self, now: float) -> None:
        """Shutdown: emit every open file as unclosed and every waiting row."""
        for srv in self.servers.values():
            for fid in list(srv.files):
                self._emit_unclosed(srv, fid, srv.files.pop(fid))
            if srv.orphan_closes:
                self.stats["closes_without_open"] += len(srv.orphan_closes)
                self.quarantined["close without open"] += len(srv.orphan_closes)
                srv.orphan_closes.clear()
        self._release(float("inf"))
        for srv in self.servers.values():
            if srv.pfc_pending:
                self.stats["pfc_unmatched"] += sum(len(v) for v in srv.pfc_pending.values())
                srv.pfc_pending.clear()

    def server_stats(self) -> list[dict]:
        return [{"server": s.name, "ip": s.ip, "sid": s.sid, "stod": s.stod, "role": self._role(s),
                 "packets": s.packets, "lost": s.lost, "duplicates": s.duplicates,
                 "reordered": s.reordered, "open_files": len(s.files)}
                for s in self.servers.values()]

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.servers.values()) + self.stats["lost_retired"]

    # ---- helpers ------------------------------------------------------------------------
    def _quarantine(self, reason: str, addr: tuple, data: bytes, now: float) -> None:
        key = reason.split(":")[0]
        self.quarantined[key] += 1
        if self.quarantine_sink is not None:
            self.quarantine_sink(reason, addr, data, now)

    def _server(self, ip: str, sid: int, stod: int) -> Server:
        key = (ip, sid, stod)
        srv = self.servers.get(key)
        if srv is None:
            srv = self.servers[key] = Server(ip, sid, stod)
            self.stats["server_instances"] += 1
        return srv

    def _sequence(self, srv: Server, stream: str, pseq: int) -> bool:
        """Track the stream's sequence number; False for a duplicate packet (to be ignored)."""
        srv.packets += 1
        seq = srv.seqs.get(stream)
        if seq is None:
            seq = srv.seqs[stream] = Seq(pseq)
            seq.seen.append(pseq)
            return True
        diff = (pseq - seq.last) & 0xFF
        if diff == 1:
            seq.last = pseq
        elif diff == 0 or pseq in seq.seen:
            srv.duplicates += 1
            return False
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
        seq.seen.append(pseq)
        return True

    def _role(self, srv: Server) -> str:
        return "cache" if srv.is_cache else "origin"

    # ---- binary packets -----------------------------------------------------------------
    def _binary_packet(self, data: bytes, addr: tuple, now: float) -> None:
        n = len(data)
        if n < 8:
            raise BadPacket("truncated: shorter than the 8-byte header")
        code, pseq, plen, stod = HDR.unpack_from(data, 0)
        if plen != n:
            if plen > n:
                raise BadPacket(f"truncated: plen {plen} > {n} bytes received")
            raise BadPacket(f"oversized: {n} bytes received, plen {plen}")
        if code == 102:  # 'f'
            self._fstream(data, addr, pseq, stod, now)
        elif code in MAP_CODES:
            self._map(code, data, addr, pseq, stod, now)
        elif code == 103:  # 'g'
            if n < 24:
                raise BadPacket("truncated: g-stream header")
            _, _, sid = GSH.unpack_from(data, 8)
            srv = self._server(addr[0], sid & SID_MASK, stod)
            if self._sequence(srv, "g", pseq):
                self._gstream_events(srv, data[24:], now)
        elif code in IGNORED_CODES:
            self.stats[f"ignored_{chr(code)}"] += 1
        else:
            raise BadPacket(f"unknown code: {code:#04x}")

    def _map(self, code: int, data: bytes, addr: tuple, pseq: int, stod: int, now: float) -> None:
        if len(data) < 13:
            raise BadPacket("truncated: map record")
        (dictid,) = U32.unpack_from(data, 8)
        text = data[12:].rstrip(b"\0").decode("utf-8")
        userid, nl, info = text.partition("\n")
        prot, user, pid, sid, host = parse_userid(userid)
        if sid is None:
            raise BadPacket("bad map record: no server id in the user id")
        srv = self._server(addr[0], sid, stod)
        self._by_addr[(addr[0], addr[1], stod)] = srv
        if not self._sequence(srv, "map", pseq):
            return
        srv.last_time = max(srv.last_time, now)
        if code == 61:  # '=' server identity
            cgi = _cgi(info)
            srv.host = host
            port = cgi.get("port", "")
            srv.port = int(port) if port.isdigit() else None
            srv.inst, srv.site = cgi.get("inst"), cgi.get("site") or None
            self.stats["server_ids"] += 1
            self._retire_others(srv)
        elif code == 117:  # 'u' user login
            cgi = _cgi(info)
            u = User(prot, user, pid, host, cgi.get("x") or None, cgi.get("y") or None, None, userid)
            srv.users[dictid] = u
            srv.users_by_id[userid] = u
            self.stats["user_logins"] += 1
        elif code == 100:  # 'd' path
            srv.paths[dictid] = (info, userid)
            self.stats["path_maps"] += 1
        elif code == 105:  # 'i' info
            u = srv.users_by_id.get(userid)
            if u is not None:
                u.info = info
            self.stats["info_maps"] += 1
        else:
            self.stats[f"ignored_map_{chr(code)}"] += 1

    def _retire_others(self, srv: Server) -> None:
        """A server that identifies itself with a newer start time has restarted: its earlier
        instance's open files will never close."""
        for other in list(self.servers.values()):
            if (other is not srv and other.ip == srv.ip and other.port == srv.port
                    and other.host == srv.host and other.stod < srv.stod and not other.retired):
                other.retired = True
                self.stats["server_restarts"] += 1
                for fid in list(other.files):
                    self._emit_unclosed(other, fid, other.files.pop(fid))

    def _fstream(self, data: bytes, addr: tuple, pseq: int, stod: int, now: float) -> None:
        n = len(data)
        off = 8
        srv = None
        if n >= 32:
            rtype, rflag, rsize, _, _, tbeg, tend, sid = TOD.unpack_from(data, 8)
            if rtype == IS_TIME and rflag & HAS_SID:
                srv = self._server(addr[0], sid & SID_MASK, stod)
                self._by_addr[(addr[0], addr[1], stod)] = srv
        if srv is None:
            srv = self._by_addr.get((addr[0], addr[1], stod))
            if srv is None:
                raise BadPacket("unknown server: f-stream packet without a server id")
        if not self._sequence(srv, "f", pseq):
            return
        srv.last_time = max(srv.last_time, now)
        tbeg = tend = float(stod)
        files = srv.files
        users = srv.users
        stats = self.stats
        unpack_rec = FREC.unpack_from
        while off + 8 <= n:
            rtype, rflag, rsize, rid = unpack_rec(data, off)
            if rsize < 8 or off + rsize > n:
                self._quarantine(f"bad f-stream record: size {rsize} at offset {off}", addr, data, now)
                return
            if rtype == IS_CLOSE:
                if rsize < 32:
                    self._quarantine(f"bad f-stream record: close of {rsize} bytes", addr, data, now)
                    return
                rd, rv, wr = XFR.unpack_from(data, off + 8)
                ops = OPS.unpack_from(data, off + 32) if (rflag & HAS_OPS and rsize >= 80) else None
                f = files.pop(rid, None)
                if srv.paths:
                    srv.paths.pop(rid, None)
                if f is None:
                    srv.orphan_closes[rid] = ((rd, rv, wr, ops, tend), now)
                else:
                    self._emit_close(srv, rid, f, rd, rv, wr, ops, tend)
                stats["closes"] += 1
            elif rtype == IS_OPEN:
                if rsize < 16:
                    self._quarantine(f"bad f-stream record: open of {rsize} bytes", addr, data, now)
                    return
                fsz = OPN.unpack_from(data, off)[4]
                user = 0
                if rflag & HAS_LFN and rsize >= 20:
                    (user,) = U32.unpack_from(data, off + 16)
                    user = users.get(user, user)  # the User when known, else its dictid for later
                    raw = data[off + 20:off + rsize]
                    z = raw.find(b"\0")
                    lfn = (raw if z < 0 else raw[:z]).decode("utf-8", "replace")
                else:
                    p = srv.paths.get(rid)
                    lfn = p[0] if p else None
                    if p is not None:
                        u = srv.users_by_id.get(p[1])
                        user = u  # a User object instead of a dictid
                f = [lfn, fsz, tbeg, user, now, 0, 0, 0]
                orphan = srv.orphan_closes.pop(rid, None)
                if orphan is not None:
                    rd, rv, wr, ops, t_close = orphan[0]
                    self._emit_close(srv, rid, f, rd, rv, wr, ops, t_close)
                    self.stats["reordered_closes"] += 1
                else:
                    files[rid] = f
                stats["opens"] += 1
            elif rtype == IS_TIME:
                if rsize >= 24:
                    _, _, _, _, _, tb, te, _ = TOD.unpack_from(data, off)
                    tbeg, tend = float(tb), float(te)
                    if tend > srv.last_tod:
                        srv.last_tod = tend
            elif rtype == IS_XFR:
                f = files.get(rid)
                if f is not None and rsize >= 32:
                    f[5], f[6], f[7] = XFR.unpack_from(data, off + 8)
                    f[4] = now
                stats["xfrs"] += 1
            elif rtype == IS_DISC:
                srv.disconnected[rid] = now
                stats["disconnects"] += 1
            else:
                self._quarantine(f"bad f-stream record: type {rtype}", addr, data, now)
                return
            off += rsize
        if off != n:
            self._quarantine(f"bad f-stream record: {n - off} trailing bytes", addr, data, now)

    # ---- rows ---------------------------------------------------------------------------
    @staticmethod
    def _user(srv: Server, user) -> User | None:
        if type(user) is int:
            return srv.users.get(user) if user else None
        return user

    def _emit_close(self, srv: Server, fid: int, f: list, rd: int, rv: int, wr: int, ops, t_close: float) -> None:
        u = self._user(srv, f[3])
        if ops is not None:
            n_rd, n_rv, n_wr = ops[0], ops[1], ops[2]
            rs_avg = rd / n_rd if n_rd else None
            rv_avg = rv / n_rv if n_rv else None
            w_avg = wr / n_wr if n_wr else None
        else:
            n_rd = n_rv = n_wr = rs_avg = rv_avg = w_avg = None
        if f[0] is None:
            self.stats["closes_without_lfn"] += 1
            self.quarantined["close without file name"] += 1
            return
        row = [None, f"{srv.stod}.{srv.sid}.{fid}", None, f[0], f[1], f[2], max(t_close, f[2]),
               rs_avg, rv_avg, w_avg, rd + rv, wr, rd, rv, wr, n_rd, n_rv, n_wr,
               u.host if u else None, u.pid if u else None, u.app if u else None,
               u.job_identity if u else None, None, None, None, True]
        self._wait(srv, row)

    def _emit_unclosed(self, srv: Server, fid: int, f: list) -> None:
        if f[0] is None:
            self.stats["unclosed_without_lfn"] += 1
            return
        u = self._user(srv, f[3])
        rd, rv, wr = f[5], f[6], f[7]
        row = [None, f"{srv.stod}.{srv.sid}.{fid}", None, f[0], f[1], f[2], max(f[2], srv.last_tod),
               None, None, None, rd + rv, wr, rd, rv, wr, None, None, None,
               u.host if u else None, u.pid if u else None, u.app if u else None,
               u.job_identity if u else None, None, None, None, False]
        self.stats["unclosed"] += 1
        self._wait(srv, row)

    def _wait(self, srv: Server, row: list) -> None:
        events = srv.pfc_pending.get(row[C_LFN])
        if events:
            for ev in events:
                if self._covers(ev[2], ev[3], row):
                    row[C_HIT], row[C_MISS], row[C_BYPASS] = ev[1]
                    events.remove(ev)
                    if not events:
                        del srv.pfc_pending[row[C_LFN]]
                    self.stats["pfc_matched"] += 1
                    break
        lst = srv.waiting.get(row[C_LFN])
        if lst is None:
            srv.waiting[row[C_LFN]] = [row]
        else:
            lst.append(row)
        self._queue.append((srv.last_time + self.cache_grace, srv, row))

    def _release(self, now: float) -> None:
        q = self._queue
        emit = self.emit
        while q and q[0][0] <= now:
            _, srv, row = q.popleft()
            lst = srv.waiting.get(row[C_LFN])
            if lst is not None:
                try:
                    lst.remove(row)
                except ValueError:
                    pass
                if not lst:
                    del srv.waiting[row[C_LFN]]
            row[C_SERVER] = srv.name
            row[C_ROLE] = "cache" if srv.is_cache else "origin"
            self.stats["rows"] += 1
            emit(row)

    # ---- g-stream (JSON) ----------------------------------------------------------------
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
        pseq = head.get("pseq")
        if isinstance(pseq, int) and not self._sequence(srv, f"json{code}", pseq & 0xFF):
            return
        srv.last_time = max(srv.last_time, now)
        if code == "=":
            src = head.get("src") or {}
            if isinstance(src, dict):
                if srv.host is None and isinstance(src.get("host"), str):
                    srv.host = src["host"]
                    srv.port = src.get("port") if isinstance(src.get("port"), int) else None
                    srv.inst = src.get("inst")
            self.stats["gstream_ids"] += 1
        elif code == "g":
            gs = head.get("gs") or {}
            if isinstance(gs, dict) and gs.get("type") == "C":
                srv.is_cache = True
            self._gstream_events(srv, rest, now)
        else:
            raise BadPacket(f"bad json: unknown code {code!r}")

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
                srv.is_cache = True
                self._pfc_close(srv, ev)
            else:
                self.stats["gstream_other_events"] += 1

    @staticmethod
    def _covers(attach, detach, row: list) -> bool:
        """Whether a cache file attached at ``attach`` and detached at ``detach`` (whole seconds)
        can hold an access seen in the f-stream window [start, end] (flush-interval resolution)."""
        return ((attach is None or row[C_START] >= attach - 1)
                and (detach is None or row[C_END] <= detach + 2))

    def _pfc_close(self, srv: Server, ev: dict) -> None:
        self.stats["pfc_file_close"] += 1
        lfn = ev.get("lfn")
        vals = [ev.get("b_hit"), ev.get("b_miss"), ev.get("b_bypass")]
        if not isinstance(lfn, str) or not all(isinstance(v, int) for v in vals):
            self.quarantined["bad pfc file_close"] += 1
            return
        attach = ev.get("attach_t") if isinstance(ev.get("attach_t"), (int, float)) else None
        detach = ev.get("detach_t") if isinstance(ev.get("detach_t"), (int, float)) else None
        rows = [r for r in srv.waiting.get(lfn, ()) if r[C_HIT] is None and self._covers(attach, detach, r)]
        if not rows:
            # The f-stream close may still be on its way: wait for it as long as rows wait for us.
            srv.pfc_pending.setdefault(lfn, []).append([srv.last_time + self.cache_grace, vals, attach, detach])
            return
        # Accesses that shared one attach of the cache file share its bytes, by bytes read.
        total_read = sum(r[C_RCLOSE] or 0 for r in rows)
        for i, v in enumerate(vals):
            left = v
            for j, r in enumerate(rows):
                if j == len(rows) - 1:
                    part = left
                elif total_read:
                    part = v * (r[C_RCLOSE] or 0) // total_read
                else:
                    part = v // len(rows)
                left -= part
                r[C_HIT + i] = part
        self.stats["pfc_matched"] += 1
