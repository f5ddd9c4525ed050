"""An XCache access ended by its user's disconnect, in the shape a real 5.5.3 origin + XCache
capture showed: one f-stream packet carries the user's open and disconnect (no close record), and
the cache's file_close event for the file arrives 23 microseconds before that packet. The access
must end in that packet's time window and take the event's bytes, whatever the arrival order of
the packets and however they are cut into batches."""

from __future__ import annotations

import itertools

import pytest

from tierlens.collector.datagrams import DatagramBatch
from tierlens.collector.decoder import Decoder
from tierlens.collector.synth import SimServer, disc_record, open_record

CACHE = ("10.0.0.9", 40009)
T0 = 1_795_324_573  # the packet's time window: [T0, T0 + 2]
SIZE = 1_048_576
LFN = "/store/first-read.bin"


def _packets() -> dict[str, bytes]:
    """The capture's packets: the cache's identity and the user's login (sent before), the pfc
    file_close, the f-stream packet with open + disconnect, and a later f-stream packet of another
    user whose window is two seconds on (what moved the end before)."""
    s = SimServer("xcache.example.org", 1094, sid=62556757042816 & 0xFFFF)
    ident = s.ident()
    uid, login = s.login(1813, "wn07.example.org", "xrdcp", "slurm.t2test.102")
    other, login2 = s.login(1912, "wn08.example.org", "xrdcp", "slurm.t2test.103")
    fid, fid2 = s.new_file(), s.new_file()
    event = {
        "event": "file_close",
        "lfn": LFN,
        "size": SIZE,
        "blk_size": 131072,
        "n_blks": 8,
        "n_blks_done": 8,
        "access_cnt": 1,
        "attach_t": T0 + 1,
        "detach_t": T0 + 2,
        "remotes": ["origin.example.org:1094"],
        "b_hit": SIZE,
        "b_miss": 0,
        "b_bypass": 0,
        "n_cks_errs": 0,
    }
    pfc = s.pfc(T0 + 2, T0 + 2, [event])
    opened_and_gone = s.fpacket(T0, T0 + 2, [open_record(fid, SIZE, uid, LFN), disc_record(uid)])
    later = s.fpacket(T0 + 4, T0 + 4, [open_record(fid2, 10, other, "/store/other.bin")])
    return {"ident": ident, "login": login, "login2": login2, "pfc": pfc, "fstream": opened_and_gone, "later": later}


def _arrivals(order: tuple[str, ...]) -> list[tuple[float, tuple, bytes]]:
    """Arrival times as captured: the event 23 us before the f-stream packet that follows it."""
    p = _packets()
    t = 1_795_324_575.938597
    items = [(t - 1.0, CACHE, p["ident"]), (t - 0.9, CACHE, p["login"]), (t - 0.8, CACHE, p["login2"])]
    for name in order:
        items.append((t, CACHE, p[name]))
        t += 23e-6
    return items


def _run(items: list[tuple[float, tuple, bytes]], cuts: tuple[int, ...]) -> tuple[list[dict], Decoder]:
    rows: list[dict] = []
    d = Decoder(lambda tb: rows.extend(tb.to_pylist()), cache_grace=5.0)
    bounds = [0, *cuts, len(items)]
    for a, b in zip(bounds, bounds[1:]):
        if b > a:
            d.feed_batch(DatagramBatch.pack(items[a:b], "capture"))
    d.sweep(items[-1][0] + 1.0)
    d.finish(items[-1][0] + 2.0)
    return rows, d


def _cuttings(n: int) -> list[tuple[int, ...]]:
    """Every way of cutting n datagrams into consecutive batches."""
    return [c for k in range(n) for c in itertools.combinations(range(1, n), k)]


ORDERS = list(itertools.permutations(("pfc", "fstream", "later")))


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_access_ended_by_disconnect_ends_in_its_packet_window_and_matches_the_event(order):
    items = _arrivals(order)
    for cuts in _cuttings(len(items)):
        rows, d = _run(items, cuts)
        first = [r for r in rows if r["file_lfn"] == LFN]
        assert len(first) == 1, (order, cuts)
        r = first[0]
        assert (r["start_time"].timestamp(), r["end_time"].timestamp()) == (T0, T0 + 2), (order, cuts)
        assert (r["end_reason"], r["close_seen"], r["read_bytes_at_close"]) == ("disconnect", False, 0)
        # the event's figures, not the 0 bytes of the disconnect
        assert (r["cache_hit_bytes"], r["cache_miss_bytes"], r["cache_access_count"]) == (SIZE, 0, 1), (order, cuts)
        assert r["job_identity"] == "slurm.t2test.102"
        assert d.stats["pfc_matched"] == 1 and d.stats["pfc_unmatched"] == 0, (order, cuts)
        assert d.stats["closed_at_disconnect"] == 1


def test_the_capture_order_in_one_batch_and_with_the_event_alone_before():
    """The capture itself: event, then 23 us later the packet, then a later window; the journal
    hands the decoder all three at once, or the event in a batch of its own."""
    items = _arrivals(("pfc", "fstream", "later"))
    for cuts in [(), (4,), (3, 4, 5)]:
        rows, d = _run(items, cuts)
        r = next(r for r in rows if r["file_lfn"] == LFN)
        assert r["end_time"].timestamp() == T0 + 2
        assert r["cache_hit_bytes"] == SIZE and d.stats["pfc_unmatched"] == 0
        assert d.stats["cache_accesses_unmatched"] == 1  # the later access, shut down without an event
