"""Build XRootD monitoring packets in the layouts of XrdXrootdMonData.hh, for tests and benchmarks.

``SimServer`` plays one server instance: it emits the ``=`` identity, ``u`` logins and f-stream
packets (time, open with lfn, close with ops, disconnect), each packet with its own sequence
number per stream, as xrootd 5 does.
"""

from __future__ import annotations

import json

from .wire import HDR, CloseRecord, DiscRecord, MapRecord, OpenRecord, TimeRecord, UserId


def map_packet(code: str, pseq: int, stod: int, dictid: int, text: str) -> bytes:
    userid, _, info = text.partition("\n")
    return MapRecord(ord(code), dictid, UserId.parse(userid), userid, info).pack(pseq, stod)


def tod_record(tbeg: int, tend: int, sid: int, n_xfr: int = 0, n_total: int = 0) -> bytes:
    return TimeRecord(tbeg, tend, sid, n_xfr, n_total).pack()


def open_record(fileid: int, size: int, user: int, lfn: str) -> bytes:
    return OpenRecord(fileid, size, user, lfn).pack()


def close_record(fileid: int, read: int, readv: int, write: int, ops: tuple[int, int, int] | None = (1, 0, 0)) -> bytes:
    return CloseRecord(fileid, read, readv, write, ops).pack()


def disc_record(userid: int) -> bytes:
    return DiscRecord(userid).pack()


def fstream_packet(pseq: int, stod: int, records: list[bytes]) -> bytes:
    body = b"".join(records)
    return HDR.pack(ord("f"), pseq & 0xFF, 8 + len(body), stod) + body


def pfc_packet(pseq: int, stod: int, sid: int, events: list[dict], tbeg: int, tend: int) -> bytes:
    head = {"code": "g", "pseq": pseq, "stod": stod, "sid": sid, "gs": {"type": "C", "tbeg": tbeg, "tend": tend}}
    return "\n".join([json.dumps(head)] + [json.dumps(e) for e in events]).encode()


class SimServer:
    """One server instance that makes monitoring packets."""

    def __init__(
        self, host: str = "xrd01.example.org", port: int = 1094, sid: int = 123456789, stod: int = 1_700_000_000
    ) -> None:
        self.host, self.port, self.sid, self.stod = host, port, sid, stod
        self.map_seq = 0
        self.f_seq = 0
        self.g_seq = 0
        self.next_id = 1

    def _dictid(self) -> int:
        self.next_id += 1
        return self.next_id

    def ident(self) -> bytes:
        text = f"=/xrootd.4242:{self.sid}@{self.host}\n&site=T2_TEST&port={self.port}&inst=anon&pgm=xrootd&ver=v5.5.3"
        p = map_packet("=", self.map_seq, self.stod, 0, text)
        self.map_seq += 1
        return p

    def login(self, pid: int, client: str, app: str | None = None, job: str | None = None) -> tuple[int, bytes]:
        uid = self._dictid()
        text = f"xroot/user.{pid}:{self.sid}@{client}\n&R=v5.5.3&x={app or ''}&y={job or ''}&I=4"
        p = map_packet("u", self.map_seq, self.stod, uid, text)
        self.map_seq += 1
        return uid, p

    def fpacket(self, t0: int, t1: int, records: list[bytes]) -> bytes:
        p = fstream_packet(self.f_seq, self.stod, [tod_record(t0, t1, self.sid, 0, len(records))] + records)
        self.f_seq += 1
        return p

    def pfc(self, t0: int, t1: int, events: list[dict]) -> bytes:
        self.g_seq += 1
        return pfc_packet(self.g_seq, self.stod, self.sid, events, t0, t1)

    def new_file(self) -> int:
        return self._dictid()


def open_close_stream(
    closes: int, servers: int = 8, packet_bytes: int = 16384, seed: int = 1, logins: int = 50
) -> list[tuple[int, bytes]]:
    """[(server index, payload)] in send order: per server an identity and ``logins`` logins, then
    f-stream packets of up to ``packet_bytes`` full of open+close pairs (closes with op counts),
    ``closes // servers`` accesses per server. For benchmarks and load tests."""
    import random

    rng = random.Random(seed)
    sims = [SimServer(f"xrd{i:02d}.example.org", 1094, sid=1000 + i, stod=1_700_000_000) for i in range(servers)]
    out: list[tuple[int, bytes]] = []
    users = []
    for i, s in enumerate(sims):
        out.append((i, s.ident()))
        us = []
        for k in range(logins):
            uid, p = s.login(10_000 + k, f"wn{k:03d}.example.org", "cmsRun", f"slurm.t2.{i * 1000 + k}")
            us.append(uid)
            out.append((i, p))
        users.append(us)
    t = 1_700_000_100
    for i, s in enumerate(sims):
        recs: list[bytes] = []
        size = 32
        for _ in range(closes // servers):
            fid = s.new_file()
            lfn = f"/store/data/run{rng.randrange(100000):06d}/file{fid}.root"
            o = open_record(fid, rng.randrange(1, 4 << 30), rng.choice(users[i]), lfn)
            c = close_record(fid, rng.randrange(1 << 30), rng.randrange(1 << 20), 0, (rng.randrange(1, 500), 1, 0))
            if size + len(o) + len(c) > packet_bytes:
                out.append((i, s.fpacket(t, t + 1, recs)))
                t += 1
                recs, size = [], 32
            recs += [o, c]
            size += len(o) + len(c)
        if recs:
            out.append((i, s.fpacket(t, t + 1, recs)))
    return out
