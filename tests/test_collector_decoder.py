"""The XRootD monitoring decoder on packets built to XrdXrootdMonData.hh: state per server
instance, restarts, sequence gaps and reordering, unclosed files, XCache events, bad input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tierlens.collector.datagrams import DatagramBatch
from tierlens.collector.decoder import HDR, Decoder
from tierlens.collector.synth import SimServer, close_record, disc_record, open_record
from tierlens.records import FILE_ACCESS

ADDR = ("10.0.0.1", 40000)


def _plain(table) -> list[dict]:
    """Rows of an emitted table, times as epoch seconds."""
    assert table.schema.equals(FILE_ACCESS)
    out = table.to_pylist()
    for r in out:
        for k in ("start_time", "end_time"):
            r[k] = r[k].timestamp() if r[k] is not None else None
    return out


def _decoder(**kw):
    rows, quarantined = [], []
    d = Decoder(lambda t: rows.extend(_plain(t)), lambda reason, addr, data, now: quarantined.append(reason), **kw)
    return d, rows, quarantined


def _one_access(
    s: SimServer,
    pid=777,
    job="slurm.c1.42",
    lfn="/store/a.root",
    size=10_000,
    read=4_000,
    readv=600,
    ops=(2, 1, 0),
    t=1_700_000_100,
):
    uid, login = s.login(pid, "wn01.example.org", "cmsRun", job)
    fid = s.new_file()
    return [
        login,
        s.fpacket(t, t + 1, [open_record(fid, size, uid, lfn)]),
        s.fpacket(t + 5, t + 6, [close_record(fid, read, readv, 0, ops), disc_record(uid)]),
    ]


def test_open_close_becomes_one_row_with_the_login_fields():
    d, rows, q = _decoder()
    s = SimServer()
    for p in [s.ident()] + _one_access(s):
        d.feed(p, ADDR, 100.0)
    d.finish(200.0)
    assert q == [] and len(rows) == 1
    r = rows[0]
    assert r["server_host"] == "xrd01.example.org:1094" and r["server_role"] == "origin"
    assert (r["file_lfn"], r["file_size_bytes"], r["read_bytes"], r["readv_bytes"]) == (
        "/store/a.root",
        10_000,
        4_000,
        600,
    )
    assert (r["read_bytes_at_close"], r["read_ops"], r["readv_ops"]) == (4_600, 2, 1)
    assert (r["read_single_average_bytes"], r["read_vector_average_bytes"]) == (2_000.0, 600.0)
    assert (r["client_host"], r["client_pid"], r["app_name"], r["job_identity"]) == (
        "wn01.example.org",
        777,
        "cmsRun",
        "slurm.c1.42",
    )
    assert (r["start_time"], r["end_time"], r["close_seen"]) == (1_700_000_100.0, 1_700_000_106.0, True)
    assert r["end_reason"] == "close" and r["server_pid"] == 4242 and r["server_addr"] == "10.0.0.1"


def test_dictionary_ids_are_per_server_instance():
    d, rows, _ = _decoder()
    a = SimServer("a.example.org", sid=1)
    b = SimServer("b.example.org", sid=2)
    # Both servers hand out the same dictids; rows must not mix their users or files.
    pa_ = [a.ident()] + _one_access(a, pid=1, job="slurm.c1.1", lfn="/a")
    pb = [b.ident()] + _one_access(b, pid=2, job="slurm.c1.2", lfn="/b")
    for p, q in zip(pa_, pb):
        d.feed(p, ("10.0.0.1", 1), 1.0)
        d.feed(q, ("10.0.0.2", 1), 1.0)
    d.finish(2.0)
    got = sorted((r["server_host"], r["file_lfn"], r["client_pid"], r["job_identity"]) for r in rows)
    assert got == [("a.example.org:1094", "/a", 1, "slurm.c1.1"), ("b.example.org:1094", "/b", 2, "slurm.c1.2")]


def test_restart_is_a_new_instance_and_gives_up_the_old_opens():
    d, rows, _ = _decoder()
    old = SimServer(stod=1_700_000_000)
    uid, login = old.login(5, "wn01", "app", "j.1")
    fid = old.new_file()
    for p in (old.ident(), login, old.fpacket(1_700_000_010, 1_700_000_011, [open_record(fid, 9, uid, "/x")])):
        d.feed(p, ADDR, 10.0)
    new = SimServer(stod=1_700_000_500)  # same host and port, same dictids from 1 again
    for p in [new.ident()] + _one_access(new, lfn="/y", t=1_700_000_600):
        d.feed(p, ADDR, 20.0)
    d.finish(30.0)
    by_lfn = {r["file_lfn"]: r for r in rows}
    assert by_lfn["/x"]["close_seen"] is False and by_lfn["/x"]["job_identity"] == "j.1"
    assert by_lfn["/y"]["close_seen"] is True
    assert by_lfn["/x"]["unique_id"] != by_lfn["/y"]["unique_id"]
    assert d.stats["server_restarts"] == 1


def test_sequence_gaps_count_lost_packets_and_late_packets_take_them_back():
    d, rows, _ = _decoder()
    s = SimServer()
    uid, login = s.login(1, "wn", "a", "j")
    d.feed(login, ADDR, 1.0)
    fids = [s.new_file() for _ in range(6)]
    pkts = [
        s.fpacket(100 + i, 101 + i, [open_record(f, 10, uid, f"/f{i}"), close_record(f, 10, 0, 0)])
        for i, f in enumerate(fids)
    ]
    for i in (0, 1, 4, 5):  # 2 and 3 missing: two lost
        d.feed(pkts[i], ADDR, 2.0)
    assert d.lost == 2
    d.feed(pkts[3], ADDR, 3.0)  # 3 arrives late: reordered, not lost
    assert d.lost == 1
    d.feed(pkts[3], ADDR, 3.0)  # a duplicate changes nothing
    assert d.lost == 1
    d.finish(4.0)
    assert sorted(r["file_lfn"] for r in rows) == ["/f0", "/f1", "/f3", "/f4", "/f5"]
    st_ = d.server_stats()[0]
    assert (st_["lost"], st_["reordered"], st_["duplicates"]) == (1, 1, 1)


def test_after_a_burst_of_loss_new_packets_with_recent_numbers_are_decoded():
    """pseq has 8 bits: after 200 lost packets, the next ones carry numbers seen among the last
    128. They hold new accesses and must be decoded; only the same number with the same bytes is
    a duplicate."""
    d, rows, _ = _decoder()
    s = SimServer()
    uid, login = s.login(1, "wn", "a", "j")
    d.feed(login, ADDR, 1.0)

    def packet(i: int) -> bytes:
        f = s.new_file()
        return s.fpacket(100 + i, 101 + i, [open_record(f, 10, uid, f"/f{i}"), close_record(f, 10, 0, 0)])

    sent = [packet(i) for i in range(300)]
    received = sent[:50] + sent[250:]  # packets 50..249 lost in the network
    for p in received:
        d.feed(p, ADDR, 2.0)
    d.feed(sent[260], ADDR, 2.0)  # one true duplicate: same number, same bytes
    d.finish(3.0)
    expected = sorted(f"/f{i}" for i in list(range(50)) + list(range(250, 300)))
    assert sorted(r["file_lfn"] for r in rows) == expected
    assert d.server_stats()[0]["duplicates"] == 1


def test_sequence_numbers_wrap_at_256():
    d, _, _ = _decoder()
    s = SimServer()
    s.f_seq = 250
    uid, login = s.login(1, "wn", "a", "j")
    d.feed(login, ADDR, 1.0)
    for i in range(12):
        f = s.new_file()
        d.feed(s.fpacket(100, 101, [open_record(f, 1, uid, "/w"), close_record(f, 1, 0, 0)]), ADDR, 1.0)
    assert d.lost == 0


def test_close_before_open_is_joined_when_the_open_arrives():
    d, rows, _ = _decoder()
    s = SimServer()
    uid, login = s.login(3, "wn", "a", "j")
    fid = s.new_file()
    p_open = s.fpacket(100, 101, [open_record(fid, 50, uid, "/late")])
    p_close = s.fpacket(102, 103, [close_record(fid, 50, 0, 0)])
    for p in (login, p_close, p_open):
        d.feed(p, ADDR, 1.0)
    d.finish(2.0)
    assert [(r["file_lfn"], r["read_bytes_at_close"], r["close_seen"]) for r in rows] == [("/late", 50, True)]


def test_unclosed_after_timeout_and_at_shutdown():
    d, rows, _ = _decoder(unclosed_timeout=60.0, cache_grace=0.0)
    s = SimServer()
    uid, login = s.login(3, "wn", "a", "j")
    f1, f2 = s.new_file(), s.new_file()
    d.feed(login, ADDR, 0.0)
    d.feed(s.fpacket(100, 101, [open_record(f1, 5, uid, "/idle")]), ADDR, 0.0)
    d.feed(s.fpacket(150, 151, [open_record(f2, 5, uid, "/recent")]), ADDR, 50.0)
    d.sweep(61.0)
    assert [(r["file_lfn"], r["close_seen"]) for r in rows] == [("/idle", False)]
    # given up at the latest time the server had reported (its clock, so a replay agrees)
    assert (rows[0]["start_time"], rows[0]["end_time"]) == (100.0, 151.0)
    d.finish(70.0)
    assert [(r["file_lfn"], r["close_seen"]) for r in rows] == [("/idle", False), ("/recent", False)]


def test_disconnect_ends_the_open_files_of_its_user_at_once_with_their_bytes():
    d, rows, _ = _decoder(cache_grace=0.0)
    s = SimServer()
    uid, login = s.login(3, "wn", "a", "job.7")
    other, login2 = s.login(4, "wn", "a", "job.8")
    fid, kept = s.new_file(), s.new_file()
    d.feed(login, ADDR, 0.0)
    d.feed(login2, ADDR, 0.0)
    xfr = struct.pack(">BBhI", 3, 0, 32, fid) + struct.pack(">qqq", 700, 20, 0)
    d.feed(s.fpacket(100, 101, [open_record(fid, 5000, uid, "/f"), open_record(kept, 5, other, "/g"), xfr]), ADDR, 0.0)
    d.feed(s.fpacket(102, 103, [disc_record(uid)]), ADDR, 1.0)
    d.sweep(2.0)
    assert [
        (
            r["file_lfn"],
            r["job_identity"],
            r["end_reason"],
            r["close_seen"],
            r["read_bytes"],
            r["readv_bytes"],
            r["end_time"],
        )
        for r in rows
    ] == [("/f", "job.7", "disconnect", False, 700, 20, 103.0)]
    d.sweep(1000.0)
    srv = next(iter(d.servers.values()))
    assert uid not in srv.users and other in srv.users  # the other login still has a file open
    d.finish(1001.0)
    assert [(r["file_lfn"], r["end_reason"]) for r in rows[1:]] == [("/g", "shutdown")]


def test_a_close_forced_by_a_disconnect_says_so():
    d, rows, _ = _decoder(cache_grace=0.0)
    s = SimServer()
    uid, login = s.login(3, "wn", "a", "job.7")
    fid = s.new_file()
    forced = bytearray(close_record(fid, 50, 0, 0))
    forced[1] |= 0x01
    d.feed(login, ADDR, 0.0)
    d.feed(s.fpacket(100, 101, [open_record(fid, 50, uid, "/f"), bytes(forced), disc_record(uid)]), ADDR, 0.0)
    d.finish(1.0)
    assert [(r["end_reason"], r["close_seen"], r["read_bytes"]) for r in rows] == [("disconnect", True, 50)]


def test_pfc_events_give_cache_bytes_in_either_order():
    d, rows, _ = _decoder()
    s = SimServer()
    uid, login = s.login(9, "wn", "a", "j")
    f1, f2 = s.new_file(), s.new_file()
    d.feed(login, ADDR, 0.0)
    ev = {
        "event": "file_close",
        "lfn": "/c",
        "size": 100,
        "attach_t": 100,
        "detach_t": 101,
        "b_hit": 30,
        "b_miss": 70,
        "b_bypass": 0,
    }
    # pfc event after the f-stream close
    d.feed(s.fpacket(100, 101, [open_record(f1, 100, uid, "/c"), close_record(f1, 100, 0, 0)]), ADDR, 1.0)
    d.feed(s.pfc(101, 101, [ev]), ADDR, 1.5)
    # pfc event before the f-stream close
    ev2 = dict(ev, attach_t=200, detach_t=200, b_hit=100, b_miss=0)
    d.feed(s.pfc(200, 200, [ev2]), ADDR, 2.0)
    d.feed(s.fpacket(200, 201, [open_record(f2, 100, uid, "/c"), close_record(f2, 100, 0, 0)]), ADDR, 2.5)
    d.finish(3.0)
    got = sorted((r["start_time"], r["server_role"], r["cache_hit_bytes"], r["cache_miss_bytes"]) for r in rows)
    assert got == [(100.0, "cache", 30, 70), (200.0, "cache", 100, 0)]
    assert d.stats["pfc_matched"] == 2 and d.stats["pfc_unmatched"] == 0


def _bad_inputs():
    s = SimServer()
    good = s.ident()
    return {
        "empty": b"",
        "short": b"f\x00\x00",
        "truncated": good[:-5],
        "oversized": good + b"\x00" * 40,
        "unknown code": HDR.pack(ord("Z"), 0, 12, 1) + b"abcd",
        "garbage map": HDR.pack(ord("u"), 0, 20, 1) + b"\xff" * 12,
        "bad f record": HDR.pack(ord("f"), 0, 16, 1) + struct.pack(">BBhI", 0, 0, 3, 1),
        "bad json": b'{"code": "g", "sid": ',
        "json not object": b"{]",
    }


@pytest.mark.parametrize("name", list(_bad_inputs()))
def test_bad_packets_are_counted_and_quarantined_with_a_reason(name):
    d, rows, q = _decoder()
    d.feed(_bad_inputs()[name], ADDR, 1.0)
    assert len(q) == 1 and q[0], name
    assert sum(d.quarantined.values()) == 1
    assert rows == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_fuzz_the_decoder_never_raises(blobs, data):
    """Random bytes, random mutations of real packets, and reordered real packets."""
    s = SimServer()
    real = (
        [s.ident()]
        + _one_access(s)
        + [s.pfc(1, 2, [{"event": "file_close", "lfn": "/store/a.root", "b_hit": 1, "b_miss": 2, "b_bypass": 0}])]
    )
    packets = list(blobs)
    for p in real:
        if data.draw(st.booleans()):
            i = data.draw(st.integers(0, max(0, len(p) - 1)))
            p = p[:i] + data.draw(st.binary(max_size=8)) + p[i + data.draw(st.integers(0, 8)) :]
        packets.append(p)
    packets = data.draw(st.permutations(packets))
    d, rows, _ = _decoder(unclosed_timeout=1.0, cache_grace=0.5)
    for k, p in enumerate(packets):
        d.feed(p, ADDR, float(k))
    d.sweep(1e9)
    d.finish(1e9)
    assert all(r["end_reason"] in ("close", "disconnect", "timeout", "shutdown", "server_restart") for r in rows)
    # the same datagrams in one batch: the compiled loop walks them together
    b, batch_rows, _ = _decoder(unclosed_timeout=1.0, cache_grace=0.5)
    b.feed_batch(DatagramBatch.pack([(float(k), ADDR, p) for k, p in enumerate(packets)], "fuzz"))
    b.finish(1e9)
    assert sum(b.quarantined.values()) >= 0 and len(batch_rows) <= len(packets)
