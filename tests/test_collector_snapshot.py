"""The decoder snapshot across upgrades: format 1 is versioned JSON of plain records; a snapshot in
the unversioned pickle of the previous collector (fixtures written by that code, main at 01b5f9a,
at every cut of the reorder test's stream) is resumed and gives the rows of an uninterrupted run;
what this tierlens cannot read is refused with a message that says why."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from support.udp_streams import key_rows, mixed_stream
from tierlens.collector.datagrams import DatagramBatch
from tierlens.collector.decoder import Decoder
from tierlens.collector.snapshot import FORMAT, VERSION, SnapshotError

LEGACY = Path(__file__).parent / "data" / "collector-snapshot-pickle"
CUTS = sorted(int(p.stem[4:]) for p in LEGACY.glob("cut-*.pickle"))


def _rows_of(items, state: bytes | None = None, finish: float = 100.0):
    rows: list[dict] = []
    d = Decoder(lambda t: rows.extend(t.to_pylist()), cache_grace=3.0)
    if state is not None:
        d.restore(state)
    for it in items:
        d.feed_batch(DatagramBatch.pack([it], "s"))
    d.finish(finish)
    return rows, d


def _before(items, cut):
    rows: list[dict] = []
    a = Decoder(lambda t: rows.extend(t.to_pylist()), cache_grace=3.0)
    for it in items[:cut]:
        a.feed_batch(DatagramBatch.pack([it], "s"))
    return rows, a


def test_there_is_a_legacy_snapshot_at_every_cut():
    assert CUTS == list(range(1, len(mixed_stream())))


@pytest.mark.parametrize("cut", CUTS)
def test_a_pickle_snapshot_of_the_previous_collector_is_resumed_losing_and_duplicating_nothing(cut):
    items = mixed_stream()
    whole, d = _rows_of(items)
    before, _ = _before(items, cut)  # what the previous collector had written by the cut
    state = (LEGACY / f"cut-{cut:02d}.pickle").read_bytes()
    assert state[:1] == b"\x80"
    after, b = _rows_of(items[cut:], state)
    assert b.restored_format == 0
    assert key_rows(before + after) == key_rows(whole)
    assert b.stats["rows"] == d.stats["rows"] and b.lost == d.lost
    # and the resumed decoder's own snapshot is format 1
    doc = json.loads(b.snapshot())
    assert (doc["format"], doc["version"]) == (FORMAT, VERSION)


@pytest.mark.parametrize("cut", [3, 6, 9])
def test_format_1_is_json_of_plain_records_and_restores_to_the_same_document(cut):
    items = mixed_stream()
    _, a = _before(items, cut)
    state = a.snapshot()
    doc = json.loads(state)  # plain JSON: no pickle anywhere
    assert (doc["format"], doc["version"]) == ("tierlens-collector-snapshot", 1)
    assert {"servers", "users", "open", "pending", "cache_queue", "stats"} <= set(doc)
    b = Decoder(lambda t: None, cache_grace=3.0)
    b.restore(state)
    assert b.restored_format == 1
    again = b.snapshot()
    # the same document, but for where names sit in the restored (compacted) name arena
    assert {k: v for k, v in json.loads(again).items() if k != "open"} == {k: v for k, v in doc.items() if k != "open"}
    c = Decoder(lambda t: None, cache_grace=3.0)
    c.restore(again)
    assert c.snapshot() == again


def test_a_newer_format_is_refused_with_a_clear_message():
    _, a = _before(mixed_stream(), 6)
    doc = json.loads(a.snapshot())
    doc["version"] = VERSION + 1
    with pytest.raises(SnapshotError, match=r"format version 2 is newer than this tierlens reads \(1\).*checkpoint"):
        Decoder(lambda t: None).restore(json.dumps(doc).encode())


@pytest.mark.parametrize("blob", [b"", b"garbage", b'{"format": "something else", "version": 1}', b"[1, 2]"])
def test_what_is_not_a_snapshot_is_refused(blob):
    with pytest.raises(SnapshotError, match="not a collector snapshot"):
        Decoder(lambda t: None).restore(blob)


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("true",))


def test_an_old_snapshot_may_only_hold_the_collectors_own_classes():
    with pytest.raises(SnapshotError, match="posix.system|os.system"):
        Decoder(lambda t: None).restore(pickle.dumps(_Evil(), protocol=pickle.HIGHEST_PROTOCOL))
