"""XRootD monitoring wire formats: codes and one typed structure per record. No state.

The layouts are those of ``XrdXrootdMonData.hh`` (xrootd 5.x); every integer is in network
byte order. A binary packet is ``XrdXrootdMonHeader`` (code, pseq, plen, stod) followed by either
one map record (dictid + ``userid\\ninfo`` text) or, for the f-stream, a sequence of records that
each start with ``XrdXrootdMonFileHdr`` (type, flags, size, file or user dictid). The XCache
g-stream (``mongstream pfc ... send json``) is JSON text: a header object, then one event per line.

The compiled f-stream loop (:mod:`.fstream`) reads the same offsets from raw bytes; the classes
here are what the Python side, the synthetic packet builder and the tests use.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# ---- packet codes (XrdXrootdMonHeader.code) --------------------------------------------------
CODE_FSTREAM = ord("f")
CODE_GSTREAM = ord("g")
CODE_SERVER_ID = ord("=")
CODE_USER = ord("u")
CODE_PATH = ord("d")
CODE_INFO = ord("i")
MAP_CODES = frozenset((CODE_SERVER_ID, CODE_USER, CODE_PATH, CODE_INFO))
#: Other monitoring streams (redirect, trace, purge, transfer maps): counted, not decoded.
IGNORED_CODES = frozenset(b"rtpx")
#: Map records this collector does not use (``T`` token, ``U`` user experiment/activity): their
#: server is known from the user id, so they are counted per server and kind, not quarantined.
UNUSED_MAP_CODES = frozenset(b"TU")

# ---- g-stream providers (top 8 bits of XrdXrootdMonGS.sID; "gs":{"type":...} in JSON) ----------
GS_PFC = "C"  # XCache monitoring: the file_close events decoded here
GS_PROVIDER_SHIFT = 56

# ---- f-stream record types (XrdXrootdMonFileHdr.recType) --------------------------------------
IS_CLOSE, IS_OPEN, IS_TIME, IS_XFR, IS_DISC = 0, 1, 2, 3, 4
# ---- f-stream record flags (recFlag; meaning depends on the type) ----------------------------
CLOSE_FORCED = 0x01  # close: the file was closed because the client disconnected
CLOSE_HAS_OPS = 0x02  # close: XrdXrootdMonStatOPS follows the transfer counts
CLOSE_HAS_SSQ = 0x04  # close: sums of squares follow the OPS block
OPEN_HAS_LFN = 0x01  # open: user dictid and lfn follow the file size
OPEN_HAS_RW = 0x02  # open: opened for update
TIME_HAS_SID = 0x01  # time: the server id is present

SID_MASK = (1 << 48) - 1  # the server id is the low 48 bits of sID

# ---- byte layouts ----------------------------------------------------------------------------
HDR = struct.Struct(">BBHi")  # XrdXrootdMonHeader: code, pseq, plen, stod
U32 = struct.Struct(">I")  # map dictid; user dictid of an open
FREC = struct.Struct(">BBhI")  # XrdXrootdMonFileHdr: type, flags, size, fileID/userID
TOD = struct.Struct(">BBhhhiiq")  # XrdXrootdMonFileTOD: hdr with nRecs[2], tBeg, tEnd, sID
OPN = struct.Struct(">BBhIq")  # XrdXrootdMonFileOPN without the lfn part: hdr, fsz
XFR = struct.Struct(">qqq")  # XrdXrootdMonStatXFR: read, readv, write bytes
OPS = struct.Struct(">iiihhqiiiiii")  # XrdXrootdMonStatOPS (48 bytes)
GSH = struct.Struct(">iiq")  # XrdXrootdMonGS after the header: tBeg, tEnd, sID


@dataclass(frozen=True)
class Layout:
    """A wire structure with a name per field. Offsets and widths come from the struct format
    itself, so code that reads raw bytes (the compiled f-stream loop) follows a layout edit."""

    fmt: struct.Struct
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        codes = self.fmt.format[1:]
        if self.fmt.format[0] != ">" or not codes.isalpha() or len(codes) != len(self.names):
            raise ValueError(f"layout {self.names}: format {self.fmt.format!r} needs one code per name")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"layout {self.names}: duplicate field name")

    @property
    def size(self) -> int:
        return self.fmt.size

    def offset(self, name: str) -> int:
        """Byte offset of ``name`` from the start of the structure (network order: no padding)."""
        return struct.calcsize(">" + self.fmt.format[1 : 1 + self.names.index(name)])

    def code(self, name: str) -> str:
        """The struct code of ``name`` (its width and signedness)."""
        return self.fmt.format[1 + self.names.index(name)]

    def then(self, other: Layout) -> Layout:
        """This structure followed by ``other`` (e.g. a record header and its body)."""
        return Layout(struct.Struct(">" + self.fmt.format[1:] + other.fmt.format[1:]), self.names + other.names)


#: The named fields of the f-stream structures, as the compiled loop reads them.
FILE_HDR = Layout(FREC, ("rec_type", "rec_flag", "rec_size", "dictid"))
TIME_REC = Layout(TOD, ("rec_type", "rec_flag", "rec_size", "n_xfr", "n_total", "tbeg", "tend", "sid"))
#: An open: the file size, then (with OPEN_HAS_LFN) the user dictid; the lfn follows at ``size``.
OPEN_REC = Layout(OPN, FILE_HDR.names + ("file_size",)).then(Layout(U32, ("user",)))
XFR_BODY = Layout(XFR, ("read", "readv", "write"))
OPS_BODY = Layout(
    OPS,
    (
        "n_read",
        "n_readv",
        "n_write",
        "rs_min",
        "rs_max",
        "rsegs",
        "rd_min",
        "rd_max",
        "rv_min",
        "rv_max",
        "wr_min",
        "wr_max",
    ),
)
#: A transfer update, and a close without its OPS block: header + XrdXrootdMonStatXFR.
XFR_REC = FILE_HDR.then(XFR_BODY)
#: A close with CLOSE_HAS_OPS.
CLOSE_OPS_REC = XFR_REC.then(OPS_BODY)

HEADER_BYTES = HDR.size  # 8
FILE_HDR_BYTES = FILE_HDR.size  # 8
TIME_BYTES = TIME_REC.size  # 24
OPEN_MIN_BYTES = OPN.size  # 16 (20 and more with an lfn)
OPEN_LFN_AT = OPEN_REC.size  # 20: where the lfn starts
CLOSE_BYTES = XFR_REC.size  # 32
CLOSE_OPS_BYTES = CLOSE_OPS_REC.size  # 80
XFR_BYTES = XFR_REC.size  # 32
MAP_MIN_BYTES = HEADER_BYTES + U32.size + 1
GSTREAM_HEADER_BYTES = HEADER_BYTES + GSH.size  # 24


class BadPacket(Exception):
    """A packet or record that cannot be decoded; the message is the reason."""


@dataclass(frozen=True)
class PacketHeader:
    code: int
    pseq: int
    plen: int
    stod: int

    @classmethod
    def unpack(cls, data: bytes) -> PacketHeader:
        if len(data) < HEADER_BYTES:
            raise BadPacket("truncated: shorter than the 8-byte header")
        return cls(*HDR.unpack_from(data, 0))

    def pack(self) -> bytes:
        return HDR.pack(self.code, self.pseq & 0xFF, self.plen, self.stod)


@dataclass(frozen=True)
class UserId:
    """``[prot/]user.pid:sid@host`` as sent in map records."""

    protocol: str
    user: str
    pid: int | None
    sid: int | None
    host: str

    @classmethod
    def parse(cls, text: str) -> UserId:
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
        return cls(prot, user, int(pid) if pid.isdigit() else None, int(sid) if sid.isdigit() else None, _host(host))


def _host(raw: str) -> str:
    h = raw.strip("[]")
    if h.startswith("::ffff:") and "." in h:
        h = h[7:]
    return h


def cgi(text: str) -> dict[str, str]:
    """``&k=v&k2=v2`` -> dict (the info part of map records)."""
    out = {}
    for part in text.split("&"):
        k, eq, v = part.partition("=")
        if eq:
            out[k] = v
    return out


@dataclass(frozen=True)
class MapRecord:
    """``XrdXrootdMonMap``: a dictid and ``userid\\ninfo`` text (codes = u d i ...)."""

    code: int
    dictid: int
    userid: UserId
    raw_userid: str
    info: str

    @classmethod
    def unpack(cls, code: int, data: bytes) -> MapRecord:
        if len(data) < MAP_MIN_BYTES:
            raise BadPacket("truncated: map record")
        (dictid,) = U32.unpack_from(data, HEADER_BYTES)
        text = data[HEADER_BYTES + U32.size :].rstrip(b"\0").decode("utf-8")
        userid, _, info = text.partition("\n")
        return cls(code, dictid, UserId.parse(userid), userid, info)

    def pack(self, pseq: int, stod: int) -> bytes:
        body = U32.pack(self.dictid) + f"{self.raw_userid}\n{self.info}".encode()
        return HDR.pack(self.code, pseq & 0xFF, HEADER_BYTES + len(body), stod) + body


@dataclass(frozen=True)
class TimeRecord:
    """``XrdXrootdMonFileTOD``: the window [tbeg, tend] of the records that follow."""

    tbeg: int
    tend: int
    sid: int
    n_xfr: int = 0
    n_total: int = 0

    def pack(self) -> bytes:
        return TOD.pack(IS_TIME, TIME_HAS_SID, TIME_BYTES, self.n_xfr, self.n_total, self.tbeg, self.tend, self.sid)


@dataclass(frozen=True)
class OpenRecord:
    """``XrdXrootdMonFileOPN`` with its ``XrdXrootdMonFileLFN`` (padded to 4 bytes, NUL ended)."""

    file_id: int
    size: int
    user: int
    lfn: str

    def pack(self) -> bytes:
        raw = self.lfn.encode() + b"\0"
        raw += b"\0" * ((-(OPEN_LFN_AT + len(raw))) % 4)
        return (
            OPEN_REC.fmt.pack(IS_OPEN, OPEN_HAS_LFN, OPEN_LFN_AT + len(raw), self.file_id, self.size, self.user) + raw
        )


@dataclass(frozen=True)
class CloseRecord:
    """``XrdXrootdMonFileCLS``: bytes read/readv/written, with ``XrdXrootdMonStatOPS`` counts."""

    file_id: int
    read: int
    readv: int
    write: int
    ops: tuple[int, int, int] | None = (1, 0, 0)
    forced: bool = False

    def pack(self) -> bytes:
        flags = CLOSE_FORCED if self.forced else 0
        if self.ops is None:
            return FREC.pack(IS_CLOSE, flags, CLOSE_BYTES, self.file_id) + XFR.pack(self.read, self.readv, self.write)
        n_rd, n_rv, n_wr = self.ops
        return (
            FREC.pack(IS_CLOSE, flags | CLOSE_HAS_OPS, CLOSE_OPS_BYTES, self.file_id)
            + XFR.pack(self.read, self.readv, self.write)
            + OPS.pack(n_rd, n_rv, n_wr, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        )


@dataclass(frozen=True)
class DiscRecord:
    """``XrdXrootdMonFileDSC``: the user (login dictid) disconnected."""

    user: int

    def pack(self) -> bytes:
        return FREC.pack(IS_DISC, 0, FILE_HDR_BYTES, self.user)


#: The fields of a pfc ``file_close`` event (XrdPfc.cc, 5.5 to 6.x); ``b_todisk`` and
#: ``b_prefetch`` since 5.7.2. Any other field is counted as unknown.
PFC_FILE_CLOSE_FIELDS = frozenset(
    (
        "event",
        "lfn",
        "size",
        "blk_size",
        "n_blks",
        "n_blks_done",
        "access_cnt",
        "attach_t",
        "detach_t",
        "remotes",
        "b_hit",
        "b_miss",
        "b_bypass",
        "b_todisk",
        "b_prefetch",
        "n_cks_errs",
    )
)


@dataclass(frozen=True)
class PfcFileClose:
    """An XCache ``file_close`` g-stream event: what the cache says about one attach of a file."""

    lfn: str
    b_hit: int
    b_miss: int
    b_bypass: int
    attach_t: float | None = None
    detach_t: float | None = None
    #: Accesses of the file counted by the cache, this one included (1: the file's first).
    access_cnt: int | None = None
    #: Origins contacted during this attach (none: everything came from the cache's disk).
    remotes: tuple[str, ...] | None = None
    n_blks: int | None = None
    n_blks_done: int | None = None
    size: int | None = None
    #: 5.7.2+: bytes the cache fetched from its origin and wrote to its disk while the file was
    #: attached (every block read from the origin, prefetched or asked for), the File object's
    #: own count, not the g-stream's b_miss: a block a first read waited for is in it.
    b_todisk: int | None = None
    #: 5.7.2+: bytes of the blocks fetched by prefetching (a subset of what went to disk).
    b_prefetch: int | None = None

    @classmethod
    def from_json(cls, ev: dict) -> PfcFileClose | None:
        """None when the event lacks the file name or integer byte counts."""
        lfn = ev.get("lfn")
        vals = (ev.get("b_hit"), ev.get("b_miss"), ev.get("b_bypass"))
        if not isinstance(lfn, str) or not all(_is_int(v) for v in vals):
            return None
        remotes = ev.get("remotes")
        return cls(
            lfn,
            *vals,
            attach_t=_num(ev.get("attach_t")),
            detach_t=_num(ev.get("detach_t")),
            access_cnt=_int(ev.get("access_cnt")),
            remotes=tuple(str(r) for r in remotes) if isinstance(remotes, list) else None,
            n_blks=_int(ev.get("n_blks")),
            n_blks_done=_int(ev.get("n_blks_done")),
            size=_int(ev.get("size")),
            b_todisk=_count(ev.get("b_todisk")),
            b_prefetch=_count(ev.get("b_prefetch")),
        )

    @staticmethod
    def unknown_fields(ev: dict) -> list[str]:
        return sorted(k for k in ev if k not in PFC_FILE_CLOSE_FIELDS)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v) -> int | None:
    return v if _is_int(v) else None


def _num(v) -> float | None:
    return float(v) if (_is_int(v) or isinstance(v, float)) else None


def _count(v) -> int | None:
    """A byte count: an integer >= 0 (a negative one is not a count; treat it as absent)."""
    return v if _is_int(v) and v >= 0 else None
