"""A running collector upgraded: the out folder a collector of the previous tierlens left when it was
killed (its checkpoint's decoder snapshot an unversioned pickle, files still open at the
checkpoint, datagrams journaled after it; written by that code with
tests/data/collector-upgrade/make_fixture.py) is taken over by this collector as a real process:
it resumes the old snapshot, decodes the journal from the checkpoint on, and every access comes
out exactly once, the files open across the upgrade with the bytes of their close."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.collectors import collector_stats, running_collector, start_collector, udp_socket, wait_until
from support.udp_streams import DONE, LATE, OPEN, upgrade_stream

FIXTURE = Path(__file__).parent / "data" / "collector-upgrade" / "out"


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_the_out_folder_of_the_previous_collector_is_resumed_losing_and_duplicating_nothing(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(FIXTURE, out)
    old_files = {p.name for p in out.glob("file_access-*.parquet")}
    state = next(out.glob("checkpoint-g*.state"))
    assert state.read_bytes()[:1] == b"\x80", "the fixture's snapshot is the old pickle"
    before, later, closes = upgrade_stream()
    sock = udp_socket(4 << 20)
    port = sock.getsockname()[1]
    with running_collector(start_collector(sock, out), sock):
        wait_until(lambda: collector_stats(out).get("state") == "listening", "the collector to listen")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
            for p in closes:
                snd.sendto(p, ("127.0.0.1", port))
        total = len(before) + len(later) + len(closes)
        wait_until(lambda: collector_stats(out).get("packets", 0) >= total, "every datagram decoded", timeout=90)
    rows = [r for p in sorted(out.glob("file_access-*.parquet")) for r in pq.read_table(p).to_pylist()]
    keys = [(r["server_host"], r["unique_id"]) for r in rows]
    assert len(keys) == len(set(keys)), "a row was written twice"
    got = sorted((r["file_lfn"], r["read_bytes_at_close"], r["end_reason"]) for r in rows)
    want = sorted(
        [(f"/up/done/{k}", k, "close") for k in range(DONE)]
        + [(f"/up/open/{k}", 100 + k, "close") for k in range(OPEN)]
        + [(f"/up/late/{k}", 10 * k, "close") for k in range(LATE)]
    )
    assert got == want
    old_rows = [
        r
        for p in sorted(out.glob("file_access-*.parquet"))
        if p.name in old_files
        for r in pq.read_table(p).to_pylist()
    ]
    assert 0 < len(old_rows) < len(rows), "the fixture holds some rows committed before the upgrade, not all"
    stats = collector_stats(out)
    assert stats["state"] == "finished" and stats["restored_snapshot_format"] == 0
    assert stats["counters"].get("closes_without_open", 0) == 0
    new_state = next(out.glob("checkpoint-g*.state")).read_bytes()
    assert new_state[:1] == b"{" and b'"format":"tierlens-collector-snapshot","version":1' in new_state
