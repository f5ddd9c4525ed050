"""Order independence of the decoder: XCache g-stream events delivered before, between and after
the f-stream records of their access, in one batch or many, all match their access; and a
snapshot taken anywhere in a stream, restored into a new decoder, gives the rows of an
uninterrupted run."""

from __future__ import annotations

import itertools

import pytest

from support.udp_streams import cache_access, key_rows, mixed_stream
from tierlens.collector.datagrams import DatagramBatch
from tierlens.collector.decoder import Decoder
from tierlens.collector.synth import SimServer, close_record, open_record

CACHE = ("10.0.0.9", 40009)


def _run(order: list[int], per_batch: int) -> tuple[list[dict], Decoder]:
    rows: list[dict] = []
    d = Decoder(lambda t: rows.extend(t.to_pylist()), cache_grace=30.0)
    s = SimServer("xcache.example.org", 1094, sid=9)
    items = [(0.0, CACHE, s.ident())]
    expected = []
    for k in range(3):
        login, opened, closed, pfc, exp = cache_access(s, k + 1, 1_700_000_100 + 10 * k)
        parts = [opened, closed, pfc]
        items.append((0.0, CACHE, login))
        items += [(0.0, CACHE, parts[i]) for i in order]
        expected.append(exp)
    items = [(float(n) * 0.1, a, p) for n, (_, a, p) in enumerate(items)]
    for j in range(0, len(items), per_batch):
        d.feed_batch(DatagramBatch.pack(items[j : j + per_batch], "test"))
    d.finish(items[-1][0] + 1.0)
    return rows, d, expected


@pytest.mark.parametrize("per_batch", [1, 2, 100])
@pytest.mark.parametrize(
    "order", list(itertools.permutations(range(3))), ids=lambda o: "-".join(("open", "close", "pfc")[i] for i in o)
)
def test_gstream_event_matches_its_access_in_any_order(order, per_batch):
    rows, d, expected = _run(list(order), per_batch)
    got = sorted((r["file_lfn"], r["cache_hit_bytes"], r["cache_miss_bytes"]) for r in rows)
    assert got == sorted(expected)
    assert all(r["server_role"] == "cache" and r["end_reason"] == "close" and r["close_seen"] for r in rows)
    assert all(r["cache_access_count"] == 2 and r["cache_remotes"] == "" for r in rows)
    assert d.stats["pfc_matched"] == 3
    assert d.stats["pfc_unmatched"] == 0 and d.stats["cache_accesses_unmatched"] == 0


def test_unmatched_events_and_accesses_are_counted_on_both_sides():
    rows: list[dict] = []
    d = Decoder(lambda t: rows.extend(t.to_pylist()), cache_grace=5.0)
    s = SimServer("xcache.example.org", 1094, sid=9)
    login, opened, closed, _, _ = cache_access(s, 1, 1_700_000_100)
    stray = s.pfc(
        1_700_000_500,
        1_700_000_500,
        [{"event": "file_close", "lfn": "/elsewhere", "b_hit": 1, "b_miss": 0, "b_bypass": 0}],
    )
    for n, p in enumerate([s.ident(), stray, login, opened, closed]):
        d.feed(p, CACHE, float(n))
    d.sweep(100.0)
    d.finish(101.0)
    assert d.stats["pfc_unmatched"] == 1 and d.stats["cache_accesses_unmatched"] == 1
    assert [(r["file_lfn"], r["cache_hit_bytes"]) for r in rows] == [("/store/f1.root", None)]


@pytest.mark.parametrize("cut", range(1, 13))
def test_snapshot_and_restore_anywhere_gives_the_rows_of_an_uninterrupted_run(cut):
    items = mixed_stream()
    whole: list[dict] = []
    d = Decoder(lambda t: whole.extend(t.to_pylist()), cache_grace=3.0)
    for it in items:
        d.feed_batch(DatagramBatch.pack([it], "s"))
    d.finish(100.0)

    before: list[dict] = []
    a = Decoder(lambda t: before.extend(t.to_pylist()), cache_grace=3.0)
    for it in items[:cut]:
        a.feed_batch(DatagramBatch.pack([it], "s"))
    state = a.snapshot()
    after: list[dict] = []
    b = Decoder(lambda t: after.extend(t.to_pylist()), cache_grace=3.0)
    b.restore(state)
    for it in items[cut:]:
        b.feed_batch(DatagramBatch.pack([it], "s"))
    b.finish(100.0)
    assert len(whole) == 6
    assert key_rows(before + after) == key_rows(whole)
    assert b.stats["rows"] == d.stats["rows"] and b.lost == d.lost


def test_tables_grow_past_their_first_size_and_closes_may_precede_opens():
    """5,000 files open at once, half of them closed before their open arrives: the open-file
    and orphan tables grow several times; every access comes out once, with its own bytes."""
    import random

    rng = random.Random(7)
    s = SimServer()
    uid, login = s.login(1, "wn", "app", "slurm.c.1")
    fids = [s.new_file() for _ in range(5000)]
    opens = [open_record(f, f, uid, f"/g/{f}") for f in fids]
    closes = [close_record(f, 3 * f, 0, 0) for f in fids]
    early = set(rng.sample(range(5000), 2500))
    pkts = [s.fpacket(100, 101, [closes[i] for i in sorted(early)][j : j + 100]) for j in range(0, 2500, 100)]
    pkts += [s.fpacket(101, 102, opens[j : j + 100]) for j in range(0, 5000, 100)]
    late = [i for i in range(5000) if i not in early]
    rng.shuffle(late)
    pkts += [s.fpacket(102, 103, [closes[i] for i in late[j : j + 100]]) for j in range(0, 2500, 100)]
    rows: list[dict] = []
    d = Decoder(lambda t: rows.extend(t.to_pylist()), cache_grace=1e6)
    items = [(0.0, ("10.0.0.1", 1), p) for p in [s.ident(), login] + pkts]
    for j in range(0, len(items), 7):
        d.feed_batch(DatagramBatch.pack(items[j : j + 7], "grow"))
    d.finish(1.0)
    assert sorted((r["file_lfn"], r["read_bytes"]) for r in rows) == sorted((f"/g/{f}", 3 * f) for f in fids)
    assert d.stats["reordered_closes"] == 2500 and d.quarantined == {}
