"""XRootD monitoring streams of known content, built with the collector's own SimServer, that
several collector tests replay, and the order-free comparison of the rows they decode to."""

from __future__ import annotations

from tierlens.collector.synth import SimServer, close_record, disc_record, open_record

#: upgrade_stream(): accesses closed before the upgrade, files open across it, late accesses
DONE, OPEN, LATE = 20, 10, 10


def cache_access(s: SimServer, k: int, t: int):
    """(open packet, close packet, pfc packet, expected cache bytes) of one access of /f<k>."""
    uid, login = s.login(100 + k, "wn01.example.org", "cmsRun", f"slurm.c.{k}")
    fid = s.new_file()
    lfn = f"/store/f{k}.root"
    hit, miss = 1000 * k, 7 + k
    ev = {
        "event": "file_close",
        "lfn": lfn,
        "size": hit + miss,
        "attach_t": t,
        "detach_t": t + 2,
        "access_cnt": 2,
        "remotes": [],
        "n_blks": 3,
        "n_blks_done": 3,
        "b_hit": hit,
        "b_miss": miss,
        "b_bypass": 0,
    }
    opened = s.fpacket(t, t + 1, [open_record(fid, hit + miss, uid, lfn)])
    closed = s.fpacket(t + 1, t + 2, [close_record(fid, hit + miss, 0, 0), disc_record(uid)])
    return login, opened, closed, s.pfc(t + 2, t + 2, [ev]), (lfn, hit, miss)


def mixed_stream() -> list[tuple[float, tuple, bytes]]:
    """An origin and a cache: opens that stay open across any cut, a close before its open, a
    disconnect, transfers, a pfc event before its access."""
    o = SimServer("origin.example.org", 1094, sid=1)
    c = SimServer("xcache.example.org", 1094, sid=2)
    out = [(o, o.ident()), (c, c.ident())]
    uid, login = o.login(11, "wn01", "app", "slurm.c.1")
    out.append((o, login))
    f = [o.new_file() for _ in range(6)]
    out.append((o, o.fpacket(100, 101, [open_record(f[0], 10, uid, "/a"), open_record(f[1], 20, uid, "/b")])))
    out.append((o, o.fpacket(102, 103, [close_record(f[2], 5, 0, 0)])))  # before its open
    out.append((o, o.fpacket(101, 102, [open_record(f[2], 5, uid, "/c"), close_record(f[0], 10, 0, 0)])))
    login_c, opened, closed, pfc, _ = cache_access(c, 4, 110)
    out += [(c, login_c), (c, pfc), (c, opened)]
    out.append((o, o.fpacket(104, 105, [open_record(f[3], 30, uid, "/d"), disc_record(uid)])))
    out.append((c, closed))
    uid2, login2 = o.login(12, "wn02", "app", "slurm.c.2")
    out.append((o, login2))
    out.append((o, o.fpacket(106, 107, [open_record(f[4], 40, uid2, "/e")])))
    addr = {id(o): ("10.0.0.1", 1), id(c): ("10.0.0.2", 1)}
    return [(float(n), addr[id(s)], p) for n, (s, p) in enumerate(out)]


def key_rows(rows):
    return sorted((tuple(sorted(r.items(), key=lambda kv: kv[0])) for r in rows), key=str)


def _closed(s: SimServer, uid: int, t: int, size: int, lfn: str, read: int) -> bytes:
    """One f-stream packet: a new file of ``size`` bytes opened at ``t`` and closed with ``read``."""
    fid = s.new_file()
    return s.fpacket(t, t + 1, [open_record(fid, size, uid, lfn), close_record(fid, read, 0, 0)])


def upgrade_stream() -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(sent before the old collector's checkpoint, sent after it and journaled only, sent to the
    new collector): accesses closed before the upgrade, files open across it, accesses the old
    collector journaled but never committed."""
    s = SimServer("upgrade.example.org", 1094, sid=777, stod=1_700_000_000)
    uid, login = s.login(4242, "wn01.example.org", "cmsRun", "slurm.up.1")
    before = [s.ident(), login]
    before += [_closed(s, uid, 1_700_000_100 + k, 1000 + k, f"/up/done/{k}", k) for k in range(DONE)]
    opened = [s.new_file() for _ in range(OPEN)]
    before.append(
        s.fpacket(
            1_700_000_200, 1_700_000_201, [open_record(f, 5000 + k, uid, f"/up/open/{k}") for k, f in enumerate(opened)]
        )
    )
    later = [_closed(s, uid, 1_700_000_300 + k, 2000 + k, f"/up/late/{k}", 10 * k) for k in range(LATE)]
    closes = [
        s.fpacket(
            1_700_000_400,
            1_700_000_401,
            [close_record(f, 100 + k, 0, 0) for k, f in enumerate(opened)] + [disc_record(uid)],
        )
    ]
    return before, later, closes
