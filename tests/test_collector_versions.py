"""What newer XRootD releases send, on packets built to XrdXrootdMonData.hh and JSON as the servers
write it (XrdPfc.cc, XrdXrootdGSReal.cc, XrdHttpMon.cc):

* 5.7.2+ (5.8, 6.2): the cache's file_close carries b_todisk and b_prefetch; they reach the row
  (split by bytes read when accesses share an attach).
* 6.x: an HTTP g-stream (provider 'H'), map records this collector does not use, fields it does
  not know: counted per server and kind (collector_stats.unknown_records / unknown_kinds), never a
  crash, never a lost row.
"""

from __future__ import annotations

import json

import pyarrow as pa

from tierlens.collector.datagrams import DatagramBatch
from tierlens.collector.decoder import Decoder
from tierlens.collector.service import Engine, Options
from tierlens.collector.synth import SimServer, close_record, disc_record, map_packet, open_record
from tierlens.collector.wire import GSH, HDR
from tierlens.records import COLLECTOR_STATS

CACHE = ("10.0.0.9", 40009)
T = 1_795_324_567
MB = 1_048_576


def _pfc_json(s: SimServer, events: list[str], gtype: str = "C") -> bytes:
    """A g-stream packet as XrdXrootdGSReal writes it with 'send json': the header line (pseq
    right-aligned in 3 characters), one event per line, a NUL at the end."""
    s.g_seq += 1
    head = (
        f'{{"code":"g","pseq":{s.g_seq:3d},"stod":{s.stod},"sid":{s.sid},'
        f'"gs":{{"type":"{gtype}","tbeg":{T},"tend":{T + 1}}}}}'
    )
    return ("\n".join([head, *events]) + "\0").encode()


def _file_close_58(
    lfn: str, hit: int, miss: int, todisk: int, prefetch: int, access_cnt: int = 1, extra: str = ""
) -> str:
    """file_close in the layout of XrdPfc.cc from 5.7.2 on (b_todisk, b_prefetch after b_bypass)."""
    return (
        '{"event":"file_close",'
        f'"lfn":"{lfn}","size":{MB},"blk_size":131072,"n_blks":8,"n_blks_done":8,'
        f'"access_cnt":{access_cnt},"attach_t":{T},"detach_t":{T + 1},"remotes":["origin.example.org:1094"],'
        f'"b_hit":{hit},"b_miss":{miss},"b_bypass":0,'
        f'"b_todisk":{todisk},"b_prefetch":{prefetch},"n_cks_errs":0{extra}}}'
    )


def _gstream_binary(s: SimServer, provider: str, body: bytes) -> bytes:
    """A binary XrdXrootdMonGS packet: header, tBeg, tEnd, sID (provider in the top 8 bits)."""
    sid = (ord(provider) << 56) | s.sid
    payload = GSH.pack(T, T + 1, sid) + body
    s.g_seq += 1
    return HDR.pack(ord("g"), s.g_seq & 0xFF, 8 + len(payload), s.stod) + payload


def _decode(items: list[bytes], per_batch: int = 100, **kw):
    rows: list[dict] = []
    quarantined: list[str] = []
    d = Decoder(
        lambda t: rows.extend(t.to_pylist()), lambda reason, *a: quarantined.append(reason), cache_grace=5.0, **kw
    )
    timed = [(100.0 + k * 0.01, CACHE, p) for k, p in enumerate(items)]
    for j in range(0, len(timed), per_batch):
        d.feed_batch(DatagramBatch.pack(timed[j : j + per_batch], "test"))
    d.finish(1e9)
    return rows, d, quarantined


def test_b_todisk_and_b_prefetch_of_58_reach_the_row_split_by_bytes_read():
    s = SimServer("xcache.example.org", 1094, sid=9)
    a, login_a = s.login(11, "wn01.example.org", "xrdcp", "slurm.c.1")
    b, login_b = s.login(12, "wn02.example.org", "xrdcp", "slurm.c.2")
    fa, fb, fc = s.new_file(), s.new_file(), s.new_file()
    # two readers share one attach of /shared (3:1 by bytes read); /alone is read once
    opened = s.fpacket(
        T, T, [open_record(fa, MB, a, "/shared"), open_record(fb, MB, b, "/shared"), open_record(fc, MB, a, "/alone")]
    )
    closed = s.fpacket(
        T + 1,
        T + 1,
        [
            close_record(fa, 3 * MB // 4, 0, 0),
            close_record(fb, MB // 4, 0, 0),
            close_record(fc, 4096, 0, 0),
            disc_record(a),
            disc_record(b),
        ],
    )
    pfc = _pfc_json(
        s, [_file_close_58("/shared", MB, 0, MB, 786432), _file_close_58("/alone", 4096, 0, 131072, 131072 - 4096)]
    )
    # one datagram per batch: the event is decoded after both closes (in one batch, the walk of
    # the f-stream packets comes after the event, which then goes whole to the first close)
    rows, d, q = _decode([s.ident(), login_a, login_b, opened, closed, pfc], per_batch=1)
    assert q == [] and d.stats["pfc_unmatched"] == 0
    got = sorted(
        (
            r["file_lfn"],
            r["read_bytes_at_close"],
            r["cache_hit_bytes"],
            r["cache_miss_bytes"],
            r["cache_todisk_bytes"],
            r["cache_prefetch_bytes"],
        )
        for r in rows
    )
    assert got == [
        ("/alone", 4096, 4096, 0, 131072, 126976),
        ("/shared", MB // 4, MB // 4, 0, MB // 4, 786432 // 4),
        ("/shared", 3 * MB // 4, 3 * MB // 4, 0, 3 * MB // 4, 3 * 786432 // 4),
    ]
    assert d.unknown_counts() == {}


def test_a_55_file_close_leaves_the_new_fields_null():
    s = SimServer("xcache.example.org", 1094, sid=9)
    u, login = s.login(11, "wn01.example.org", "xrdcp", "slurm.c.1")
    f = s.new_file()
    ev = (
        '{"event":"file_close","lfn":"/old","size":10,"blk_size":131072,"n_blks":1,"n_blks_done":1,'
        f'"access_cnt":1,"attach_t":{T},"detach_t":{T + 1},"remotes":[],"b_hit":10,"b_miss":0,"b_bypass":0,'
        '"n_cks_errs":0}'
    )
    rows, d, q = _decode(
        [
            s.ident(),
            login,
            s.fpacket(T, T + 1, [open_record(f, 10, u, "/old"), close_record(f, 10, 0, 0)]),
            _pfc_json(s, [ev]),
        ]
    )
    assert q == [] and [(r["cache_hit_bytes"], r["cache_todisk_bytes"], r["cache_prefetch_bytes"]) for r in rows] == [
        (10, None, None)
    ]


def _unknown_stream(s: SimServer) -> tuple[list[bytes], dict[tuple[str, str], int]]:
    """One access on a 6.2 cache amid everything this collector does not decode, and what each
    unknown thing must be counted as."""
    u, login = s.login(11, "wn01.example.org", "xrdcp", "slurm.c.1")
    f = s.new_file()
    http_event = json.dumps(
        {"HTTP_GET_200": {"count": 3, "errors_network": 0, "errors_xrootd": 0, "success": 3, "duration_seconds": 0.25}},
        separators=(",", ":"),
    )
    items = [
        s.ident(),
        login,
        map_packet("U", 0, s.stod, 40, f"xroot/user.11:{s.sid}@wn01.example.org\n&Uc=1&Ec=2&Ac=3"),
        map_packet("T", 1, s.stod, 41, f"xroot/user.11:{s.sid}@wn01.example.org\n&Uc=1&s=abc&n=x&o=y&r=z&g=w"),
        s.fpacket(T, T, [open_record(f, MB, u, "/new")]),
        _pfc_json(s, [http_event], gtype="H"),  # 6.x HTTP g-stream, JSON
        _gstream_binary(s, "H", http_event.encode() + b"\0"),  # and as a binary g-stream
        _pfc_json(s, [_file_close_58("/new", MB, 0, MB, 0, extra=',"n_new":7'), '{"event":"dir_stats","dir":"/"}']),
        (f'{{"code":"d","pseq":1,"stod":{s.stod},"sid":{s.sid},"gs":{{"type":"C"}},"did":5,"data":"/new"}}').encode()
        + b"\0",
        s.fpacket(T + 1, T + 1, [close_record(f, MB, 0, 0), disc_record(u)]),
    ]
    name = "xcache.example.org:1094"
    expected = {
        (name, "map:U"): 1,
        (name, "map:T"): 1,
        (name, "gstream:H"): 2,
        (name, "field:file_close.n_new"): 1,
        (name, "gstream_event:dir_stats"): 1,
        (name, "json:d"): 1,
    }
    return items, expected


def test_unknown_kinds_are_counted_per_server_and_kind_and_the_access_still_decodes():
    s = SimServer("xcache.example.org", 1094, sid=9)
    items, expected = _unknown_stream(s)
    rows, d, q = _decode(items)
    assert q == []
    assert d.unknown_counts() == expected
    assert [(r["file_lfn"], r["cache_hit_bytes"], r["cache_todisk_bytes"], r["end_reason"]) for r in rows] == [
        ("/new", MB, MB, "close")
    ]
    assert d.lost == 0  # the HTTP g-stream's own packet numbers are not the cache's


def test_an_unknown_packet_code_is_quarantined_and_counted_for_its_sender():
    s = SimServer("xcache.example.org", 1094, sid=9)
    stray = HDR.pack(ord("Z"), 0, 12, s.stod) + b"abcd"
    rows, d, q = _decode([stray])
    assert len(q) == 1 and q[0].startswith("unknown code")
    assert d.unknown_counts() == {("10.0.0.9", "code:Z"): 1}


def test_collector_stats_rows_carry_the_unknown_counts(tmp_path):
    s = SimServer("xcache.example.org", 1094, sid=9)
    items, expected = _unknown_stream(s)
    eng = Engine(Options(out_dir=tmp_path), journaled=False)
    eng.feed(DatagramBatch.pack([(100.0 + k * 0.01, CACHE, p) for k, p in enumerate(items)], "test"), 0)
    half = DatagramBatch.pack([(200.0, CACHE, _pfc_json(s, ['{"event":"dir_stats"}'], gtype="C"))], "test")
    eng.feed(half, 0)
    table: pa.Table = eng.tally.table("collector.example.org", 300.0, [0])
    assert table.schema.equals(COLLECTOR_STATS)
    by_server = {r["server_host"]: r for r in table.to_pylist()}
    row = by_server["xcache.example.org:1094"]
    want = dict((k, v) for (_, k), v in expected.items())
    want["gstream_event:dir_stats"] += 1
    assert row["unknown_records"] == sum(want.values())
    assert row["unknown_kinds"] == ";".join(f"{k}={v}" for k, v in sorted(want.items()))
    assert by_server[""]["unknown_records"] == 0 and by_server[""]["unknown_kinds"] == ""
