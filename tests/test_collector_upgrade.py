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

from test_collector_crash import _collector, _socket, _start, _stats, _wait
from tierlens.collector.synth import SimServer, close_record, disc_record, open_record

FIXTURE = Path(__file__).parent / "data" / "collector-upgrade" / "out"
DONE, OPEN, LATE = 20, 10, 10


def upgrade_stream() -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(sent before the old collector's checkpoint, sent after it and journaled only, sent to the
    new collector): accesses closed before the upgrade, files open across it, accesses the old
    collector journaled but never committed."""
    s = SimServer("upgrade.example.org", 1094, sid=777, stod=1_700_000_000)
    uid, login = s.login(4242, "wn01.example.org", "cmsRun", "slurm.up.1")
    before = [s.ident(), login]
    for k in range(DONE):
        fid = s.new_file()
        before.append(
            s.fpacket(
                1_700_000_100 + k,
                1_700_000_101 + k,
                [open_record(fid, 1000 + k, uid, f"/up/done/{k}"), close_record(fid, k, 0, 0)],
            )
        )
    opened = [s.new_file() for _ in range(OPEN)]
    before.append(
        s.fpacket(
            1_700_000_200, 1_700_000_201, [open_record(f, 5000 + k, uid, f"/up/open/{k}") for k, f in enumerate(opened)]
        )
    )
    later = []
    for k in range(LATE):
        fid = s.new_file()
        later.append(
            s.fpacket(
                1_700_000_300 + k,
                1_700_000_301 + k,
                [open_record(fid, 2000 + k, uid, f"/up/late/{k}"), close_record(fid, 10 * k, 0, 0)],
            )
        )
    closes = [
        s.fpacket(
            1_700_000_400,
            1_700_000_401,
            [close_record(f, 100 + k, 0, 0) for k, f in enumerate(opened)] + [disc_record(uid)],
        )
    ]
    return before, later, closes


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_the_out_folder_of_the_previous_collector_is_resumed_losing_and_duplicating_nothing(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(FIXTURE, out)
    old_files = {p.name for p in out.glob("file_access-*.parquet")}
    state = next(out.glob("checkpoint-g*.state"))
    assert state.read_bytes()[:1] == b"\x80", "the fixture's snapshot is the old pickle"
    before, later, closes = upgrade_stream()
    sock = _socket(4 << 20)
    port = sock.getsockname()[1]
    with _collector(_start(sock, out), sock):
        _wait(lambda: _stats(out).get("state") == "listening", "the collector to listen")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
            for p in closes:
                snd.sendto(p, ("127.0.0.1", port))
        total = len(before) + len(later) + len(closes)
        _wait(lambda: _stats(out).get("packets", 0) >= total, "every datagram decoded", timeout=90)
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
    stats = _stats(out)
    assert stats["state"] == "finished" and stats["restored_snapshot_format"] == 0
    assert stats["counters"].get("closes_without_open", 0) == 0
    new_state = next(out.glob("checkpoint-g*.state")).read_bytes()
    assert new_state[:1] == b"{" and b'"format":"tierlens-collector-snapshot","version":1' in new_state
