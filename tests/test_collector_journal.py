"""The collector's datagram journal: layout round trip, rotation, sealing after a crash, torn
records, replay of a segment, and a fuzz of the reader over truncated and corrupted segments."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tierlens.collector import journal as jr
from tierlens.collector.replay import udp_packets
from tierlens.collector.service import Options, replay

CAPTURE = Path(__file__).parent / "data" / "xrootd-origin-xcache.pcap"


def _datagrams(n: int, seed: int = 0) -> list[tuple[float, tuple[str, int], bytes]]:
    import random

    rng = random.Random(seed)
    hosts = ["10.1.2.3", "192.168.0.7", "2001:db8::5", "::1"]
    return [
        (
            1_700_000_000.0 + i * 0.001,
            (hosts[i % 4], 1024 + i % 50000),
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300))),
        )
        for i in range(n)
    ]


def _write(folder: Path, items, segment_bytes: int = 1 << 20, close: bool = True) -> jr.JournalWriter:
    w = jr.JournalWriter(folder, worker=3, segment_bytes=segment_bytes)
    for t, addr, data in items:
        w.append(data, t, addr)
    if close:
        w.close()
    return w


def _read_all(reader: jr.WorkerReader) -> list:
    got = []
    while True:
        p = reader.read(1000)
        if not p.items:
            return got
        got += [(t, a, bytes(d)) for t, a, d in p.items]


def test_round_trip_keeps_payload_arrival_and_sender_across_segments(tmp_path):
    items = _datagrams(12_000)
    _write(tmp_path, items, segment_bytes=1 << 20)
    segs = jr.segments(tmp_path)
    payload = sum(40 + len(d) for _, _, d in items) + 32 * len(segs)
    assert len(segs) > 1 and sum(p.stat().st_size for _, p in segs) == payload
    r = jr.WorkerReader(tmp_path, 3)
    assert _read_all(r) == items
    assert r.torn == [] and r.backlog_bytes() == 0


def test_counters_records_come_back_in_order(tmp_path):
    w = jr.JournalWriter(tmp_path, 1)
    w.append(b"a", 1.0, ("10.0.0.1", 5))
    w.counters(inode=77, kernel_drops=12, proc_drops=13, disallowed=4, now=2.0)
    w.append(b"b", 3.0, ("10.0.0.1", 5))
    w.close()
    p = jr.WorkerReader(tmp_path, 1).read(10)
    assert [bytes(d) for _, _, d in p.items] == [b"a", b"b"]
    assert p.counters == [jr.Counters(1, 77, 12, 13, 4, 2.0)]


def test_reader_follows_a_live_writer_and_positions_resume(tmp_path):
    items = _datagrams(3000, seed=2)
    w = jr.JournalWriter(tmp_path, 0, segment_bytes=1 << 20)
    r = jr.WorkerReader(tmp_path, 0)
    got = []
    for k in range(0, 3000, 500):
        for t, a, d in items[k : k + 500]:
            w.append(d, t, a)
        assert r.backlog_bytes((w.number, w.pos)) == sum(40 + len(d) for _, _, d in items[len(got) : k + 500])
        part = r.read(300)
        got += [(t, a, bytes(d)) for t, a, d in part.items]
        # a second reader resumes exactly where the first stopped
        r = jr.WorkerReader(tmp_path, 0, jr.Position(r.pos.segment, r.pos.offset))
    got += _read_all(r)
    assert got == items
    w.close()


def test_a_killed_writer_leaves_a_segment_that_seals_to_its_records(tmp_path):
    items = _datagrams(500, seed=3)
    w = _write(tmp_path, items, segment_bytes=4 << 20, close=False)  # as if SIGKILLed: no seal
    ((number, path),) = jr.segments(tmp_path)
    assert path.stat().st_size == 4 << 20  # preallocated, zeros after the records
    kept, torn = jr.seal_segment(path)
    assert (kept, torn) == (500, None) and path.stat().st_size == w.pos
    assert _read_all(jr.WorkerReader(tmp_path, 3)) == items


def test_a_torn_last_record_is_cut_and_named(tmp_path):
    items = _datagrams(200, seed=4)
    w = _write(tmp_path, items, segment_bytes=4 << 20, close=False)
    ((_, path),) = jr.segments(tmp_path)
    last = w.pos - 40 - len(items[-1][2])
    # The crash came while the last header was being written: its CRC does not match.
    with open(path, "r+b") as fh:
        fh.seek(last + 4)
        fh.write(b"\xde\xad\xbe\xef")
    kept, torn = jr.seal_segment(path)
    assert kept == 199 and torn is not None and f"offset {last}" in torn and str(path) in torn
    assert path.stat().st_size == last
    assert _read_all(jr.WorkerReader(tmp_path, 3)) == items[:199]


def test_a_corrupt_record_in_a_sealed_segment_is_reported_and_the_next_segment_read(tmp_path):
    items = _datagrams(6000, seed=5)
    _write(tmp_path, items, segment_bytes=1 << 20)
    (_, first), (_, second) = jr.segments(tmp_path)[:2]
    raw = bytearray(first.read_bytes())
    whole_first = sum(1 for _ in _iter_records(bytes(raw)))
    # flip a payload byte of the 10th record
    pos = 32
    for _ in range(9):
        pos += 40 + struct.unpack_from("<I", raw, pos)[0]
    raw[pos + 40] ^= 0xFF if struct.unpack_from("<I", raw, pos)[0] else 0
    raw[pos + 16] ^= 0x01  # and its arrival time, so even an empty payload is caught
    first.write_bytes(bytes(raw))
    r = jr.WorkerReader(tmp_path, 3)
    got = _read_all(r)
    in_first = sum(1 for _ in _iter_records(bytes(raw)))  # complete records before the bad one
    assert in_first == 9
    assert got == items[:9] + items[whole_first:]
    assert len(r.torn) == 1 and f"{first}:offset {pos}" in r.torn[0]


def _iter_records(buf: bytes):
    pos = 32
    while True:
        n = jr.record_at(buf, pos)
        if n < 0:
            return
        yield pos
        pos += 40 + n


def test_not_a_segment_is_an_error_naming_the_file(tmp_path):
    bad = tmp_path / "seg-000000000001.tlj"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(jr.JournalError, match=r"seg-000000000001.tlj: offset 0: not a tierlens journal"):
        list(jr.read_file(bad))


def test_replaying_a_segment_gives_the_rows_of_the_capture(tmp_path):
    """A journal written from the capture's datagrams (capture time as arrival) decodes to the
    same rows as the capture itself."""
    folder = tmp_path / "journal"
    _write(folder, list(udp_packets(CAPTURE)), segment_bytes=64 << 20)
    ((_, seg),) = jr.segments(folder)
    a = replay(CAPTURE, Options(tmp_path / "a"))
    b = replay(seg, Options(tmp_path / "b"))
    rows = [
        sorted(
            json.dumps(r, default=str, sort_keys=True)
            for p in sorted(d.glob("file_access-*.parquet"))
            for r in pq.read_table(p).to_pylist()
        )
        for d in (tmp_path / "a", tmp_path / "b")
    ]
    assert rows[0] == rows[1] and len(rows[0]) == a.rows == b.rows == 6
    assert b.stats["packets"] == a.stats["packets"] == sum(1 for _ in udp_packets(CAPTURE))
    assert b.stats["journal_torn"] == [] and b.stats["kernel_drops"] == 0


def test_replaying_a_segment_reports_the_kernel_drops_it_recorded(tmp_path):
    folder = tmp_path / "journal"
    w = jr.JournalWriter(folder, 0)
    w.counters(inode=9, kernel_drops=5, proc_drops=7, disallowed=2, now=1.0)
    w.append(b"garbage!", 1.5, ("10.0.0.1", 9))
    w.counters(inode=9, kernel_drops=11, proc_drops=11, disallowed=1, now=2.0)
    w.close()
    ((_, seg),) = jr.segments(folder)
    res = replay(seg, Options(tmp_path / "out"))
    # the kernel's counters are cumulative per socket: max(7, 5) then 11 -> 11 dropped in all
    assert res.stats["kernel_drops"] == 11 and res.stats["disallowed"] == 3
    assert res.stats["lossless"] is False
    stats = pq.read_table(next((tmp_path / "out").glob("collector_stats-*.parquet"))).to_pylist()
    sock = [r for r in stats if r["server_host"] == ""]
    assert [(r["worker"], r["datagrams"], r["kernel_drops"], r["disallowed"], r["quarantined"]) for r in sock] == [
        (0, 1, 11, 3, 1)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 60), cut=st.floats(0, 1), flip=st.one_of(st.none(), st.floats(0, 1)), seed=st.integers(0, 99))
def test_fuzz_the_reader_on_truncated_and_corrupted_segments(tmp_path_factory, n, cut, flip, seed):
    """Whatever a crash or the disk left, the reader returns a prefix of what was written, names
    the offset where it stopped when that is not a clean end, and never raises."""
    folder = tmp_path_factory.mktemp("j")
    items = _datagrams(n, seed)
    _write(folder, items)
    ((_, seg),) = jr.segments(folder)
    raw = bytearray(seg.read_bytes())
    ends = [32]
    for _, _, d in items:
        ends.append(ends[-1] + 40 + len(d))
    size = 32 + int(cut * (len(raw) - 32))
    raw = raw[:size]
    if flip is not None and size > 32:
        raw[32 + int(flip * (size - 33))] ^= 0x5A
    seg.write_bytes(bytes(raw))
    whole = max(k for k, e in enumerate(ends) if e <= size)  # complete records left after the cut
    got = [(t, a, bytes(d)) for b, _, _ in jr.read_file(seg) for t, a, d in b]
    torn = [m for _, _, t in jr.read_file(seg) for m in t]
    assert got == items[: len(got)] and len(got) <= whole
    if flip is None:
        assert len(got) == whole
        assert bool(torn) == (size != ends[whole])
    else:
        assert len(got) == whole or torn  # a record cut short by the flip is always reported
    if torn:
        assert str(seg) in torn[0] and "offset" in torn[0]
    # sealing then reading gives the same records
    kept, msg = jr.seal_segment(seg)
    assert kept == len(got) and bool(msg) == bool(torn)
    assert _read_all(jr.WorkerReader(folder, 3)) == got


def test_the_writer_takes_arrow_tables_and_rows_alike(tmp_path):
    """The new decoder emits FILE_ACCESS tables, the old one lists; a batch holds both, in order."""
    from tierlens.collector.writer import BatchWriter, rows_to_table
    from tierlens.records import FILE_ACCESS

    row = [None] * len(FILE_ACCESS.names)
    row[0], row[1], row[3], row[5], row[6] = "srv:1094", "u1", "/a", 10.0, 11.0
    row[FILE_ACCESS.get_field_index("close_seen")] = True
    table = rows_to_table([list(row)])
    w = BatchWriter(tmp_path, max_rows=3)
    w.add(table)
    row[1] = "u2"
    w.add(list(row))
    row[1] = "u3"
    w.add(rows_to_table([list(row)]))
    assert w.pending == 3 and w.due()
    out = w.take()
    assert out.schema.equals(FILE_ACCESS) and out.column("unique_id").to_pylist() == ["u1", "u2", "u3"]
    assert w.pending == 0 and not w.due() and list(tmp_path.iterdir()) == []  # nothing written by itself


def test_new_segments_are_numbered_past_the_checkpoint_even_in_an_emptied_folder(tmp_path):
    """If the journal folder was emptied, a reader resuming at the checkpoint's segment 7 must
    still see what is written next (segments below its position count as decoded)."""
    w = jr.JournalWriter(tmp_path, 0, after=7)
    w.append(b"x", 1.0, ("10.0.0.1", 1))
    w.close()
    assert [n for n, _ in jr.segments(tmp_path)] == [8]
    assert [bytes(d) for _, _, d in jr.WorkerReader(tmp_path, 0, jr.Position(7, 4096)).read(5).items] == [b"x"]
