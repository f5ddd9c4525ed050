"""Replay of a committed tcpdump capture of real xrootd 5.5.3 monitoring (an origin and an XCache,
made by tests/test_collector_live.py), the collector's SIGTERM flush and atomic batches, and the
import of OSG collector JSON records."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dpkt
import duckdb
import pyarrow.parquet as pq
import pytest

from support.collectors import listen_command
from support.processes import free_port
from tierlens.collector.osg import osg_batches
from tierlens.collector.service import Options, replay
from tierlens.collector.synth import SimServer, close_record, open_record
from tierlens.pipeline import ingest

DATA = Path(__file__).parent / "data"
CAPTURE = DATA / "xrootd-origin-xcache.pcap"
TIERLENS = str(Path(sys.executable).parent / "tierlens")

# What the capture's session did (see test_collector_live.py): files of 3,000,017 and 1,500,005
# bytes; xrdcp of big.bin from the origin; xrdcp of cached.bin twice through the cache (the cache
# fetched it once from the origin); a 5,000-byte read and a 3-segment vector read of big.bin.
EXPECTED = sorted(
    [
        # (server port, lfn, size, read, readv, read ops, readv ops, app, job identity, hit, miss, bypass)
        (42187, "/big.bin", 3_000_017, 3_000_017, 0, 1, 0, "xrdcp-test", "slurm.t2test.101", None, None, None),
        (42187, "/cached.bin", 1_500_005, 1_503_232, 0, 12, 0, "xrootd", None, None, None, None),
        (59029, "/cached.bin", 1_500_005, 2_213_578, 0, 176, 0, "xrdcp-test", "slurm.t2test.102", 2_213_578, 0, 0),
        (42187, "/big.bin", 3_000_017, 5_000, 0, 1, 0, "pyxrootd-test", "htcondor.pool1.7.0", None, None, None),
        (42187, "/big.bin", 3_000_017, 0, 4_117, 0, 1, "pyxrootd-test", "htcondor.pool1.8.0", None, None, None),
        (59029, "/cached.bin", 1_500_005, 1_500_005, 0, 1, 0, "xrdcp-test", "slurm.t2test.103", 1_500_005, 0, 0),
    ],
    key=str,
)


def _summary(rows):
    return sorted(
        [
            (
                int(r["server_host"].rsplit(":", 1)[1]),
                r["file_lfn"],
                r["file_size_bytes"],
                r["read_bytes"],
                r["readv_bytes"],
                r["read_ops"],
                r["readv_ops"],
                r["app_name"],
                r["job_identity"],
                r["cache_hit_bytes"],
                r["cache_miss_bytes"],
                r["cache_bypass_bytes"],
            )
            for r in rows
        ],
        key=str,
    )


def _rows(folder: Path) -> list[dict]:
    return [r for p in sorted(folder.glob("file_access-*.parquet")) for r in pq.read_table(p).to_pylist()]


def test_replay_of_a_real_capture(tmp_path):
    result = replay(CAPTURE, Options(tmp_path))
    rows = _rows(tmp_path)
    assert _summary(rows) == EXPECTED
    assert all(r["close_seen"] and r["client_host"] == "127.0.0.1" for r in rows)
    assert {r["server_role"] for r in rows if r["server_host"].endswith(":59029")} == {"cache"}
    assert result.stats["lost_packets"] == 0 and result.stats["quarantined"] == {}
    assert not list(tmp_path.glob(".*.tmp"))


def test_pcapng_gives_the_same_rows(tmp_path):
    ng = tmp_path / "capture.pcapng"
    with open(CAPTURE, "rb") as fh, open(ng, "wb") as out:
        reader = dpkt.pcap.Reader(fh)
        writer = dpkt.pcapng.Writer(out, linktype=reader.datalink())
        for ts, buf in reader:
            writer.writepkt(buf, ts=ts)
    replay(CAPTURE, Options(tmp_path / "a"))
    replay(ng, Options(tmp_path / "b"))
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")


def test_cli_replay_and_load(tmp_path):
    out = tmp_path / "out"
    wh = tmp_path / "wh.duckdb"
    subprocess.run(
        [TIERLENS, "collect", "xrootd", "--replay", str(CAPTURE), "--out", str(out), "--load", "-w", str(wh)],
        check=True,
        capture_output=True,
    )
    con = duckdb.connect(str(wh), read_only=True)
    try:
        assert con.execute("select count(*), count(job_identity) from raw_file_access").fetchone() == (6, 5)
    finally:
        con.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_flushes_everything_decoded(tmp_path, sig):
    """Rows still waiting (closed, and still open) are all written when the collector is stopped."""
    port = free_port(socket.SOCK_DGRAM)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        listen_command(port, out, "--max-seconds", "3600", "--cache-grace", "3600"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        stats_path = out / "collector-stats.json"
        deadline = time.monotonic() + 60
        while not stats_path.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        s = SimServer()
        uid, login = s.login(11, "wn07", "app", "slurm.c.9")
        f1, f2 = s.new_file(), s.new_file()
        pkts = [
            s.ident(),
            login,
            s.fpacket(
                100,
                101,
                [open_record(f1, 10, uid, "/closed"), close_record(f1, 10, 0, 0), open_record(f2, 20, uid, "/open")],
            ),
        ]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
            for p in pkts:
                snd.sendto(p, ("127.0.0.1", port))
        while json.loads(stats_path.read_text()).get("packets", 0) < len(pkts):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = _rows(out)
    assert sorted((r["file_lfn"], r["close_seen"], r["job_identity"]) for r in rows) == [
        ("/closed", True, "slurm.c.9"),
        ("/open", False, "slurm.c.9"),
    ]
    assert json.loads((out / "collector-stats.json").read_text())["state"] == "finished"


def test_osg_collector_records_import(tmp_path):
    recs = [
        {
            "start_time": 1_700_000_000_000,
            "end_time": 1_700_000_060_000,
            "filename": "/store/x.root",
            "filesize": 1000,
            "read": 600,
            "readv": 100,
            "write": 0,
            "read_single_operations": 3,
            "read_vector_operations": 1,
            "write_operations": 0,
            "read_single_average": 200,
            "read_vector_average": 100,
            "read_bytes_at_close": 700,
            "write_bytes_at_close": 0,
            "host": "wn01.example.org",
            "server_hostname": "xrd01.example.org",
            "server_ip": "10.0.0.1",
            "serverID": "1700#10.0.0.1#1094",
            "user": "cms001",
            "appinfo": "cmsRun",
        },
    ]
    f = tmp_path / "osg.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\nnot json\n")
    wh = tmp_path / "wh.duckdb"
    summary = ingest(osg_batches([f]), wh)
    assert (summary.rows_loaded["file_access"], summary.rows_rejected["file_access"]) == (1, 1)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        row = con.execute(
            "select server_host, file_lfn, file_size_bytes, read_bytes, readv_bytes, read_ops, "
            "client_host, app_name, epoch(end_time) - epoch(start_time), close_seen "
            "from raw_file_access"
        ).fetchone()
        reject = con.execute("select location from raw_rejects").fetchone()[0]
    finally:
        con.close()
    assert row == ("xrd01.example.org", "/store/x.root", 1000, 600, 100, 3, "wn01.example.org", "cmsRun", 60.0, True)
    assert reject.endswith("osg.jsonl:line 2")
    # Importing the same file again changes nothing (same natural keys).
    again = ingest(osg_batches([f]), wh)
    assert again.already_loaded >= 1 or again.rows_loaded["file_access"] == 1
