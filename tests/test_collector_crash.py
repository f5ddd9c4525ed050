"""The collector as a real process: killed with SIGKILL mid-stream and restarted (every access
sent arrives exactly once), and made to lose datagrams (the kernel's count is reported, exactly).

The UDP socket is held outside the collector and handed over with the systemd socket-activation
protocol (LISTEN_FDS), as deploy/collector/tierlens-collector.socket does in production: while
the collector is dead the kernel keeps queueing datagrams, and the restarted collector takes
them. A real collector process, a paced stream over loopback, two kills.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.collectors import (
    TIERLENS,
    collector_stats,
    listen_command,
    running_collector,
    start_collector,
    udp_socket,
    wait_until,
)
from support.processes import free_port
from tierlens.collector.synth import SimServer, close_record, open_record


def _proc_drops(sock: socket.socket) -> int:
    inode = str(os.fstat(sock.fileno()).st_ino)
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        f = line.split()
        if f[9] == inode:
            return int(f[12])
    raise AssertionError("socket not in /proc/net/udp")


def _send(port: int, accesses: int, rate: float, sent: list[int]) -> None:
    s = SimServer("crash.example.org", 1094, sid=4242, stod=1_700_000_000)
    uid, login = s.login(77, "wn01.example.org", "app", "slurm.crash.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
        snd.sendto(s.ident(), ("127.0.0.1", port))
        snd.sendto(login, ("127.0.0.1", port))
        t0 = time.perf_counter()
        for k in range(accesses):
            fid = s.new_file()
            p = s.fpacket(
                1_700_000_100 + k // 100,
                1_700_000_101 + k // 100,
                [open_record(fid, 1000 + k, uid, f"/crash/{k}.root"), close_record(fid, k, 0, 0)],
            )
            while time.perf_counter() < t0 + k / rate:
                time.sleep(0.0005)
            snd.sendto(p, ("127.0.0.1", port))
            sent[0] = k + 1


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_sigkill_and_restart_lose_nothing_and_write_nothing_twice(tmp_path):
    out = tmp_path / "out"
    # What ReceiveBuffer= in the socket unit does: room for the datagrams sent during a restart.
    sock = udp_socket(32 << 20)
    port = sock.getsockname()[1]
    accesses, rate = 8000, 1000.0
    sent = [0]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(start_collector(sock, out, "--journal-retention", "0"))
        wait_until(lambda: collector_stats(out).get("state") == "listening", "the collector to listen")
        sender = threading.Thread(target=_send, args=(port, accesses, rate, sent))
        sender.start()
        started = time.time()
        for kill_at in (1500, 3500):
            # killed while it is decoding the stream (its own stats say so), mid-interval
            wait_until(
                lambda k=kill_at, t=started: (
                    collector_stats(out).get("packets", 0) >= k and collector_stats(out).get("updated_at", 0) > t
                ),
                f"{kill_at} datagrams decoded",
            )
            time.sleep(0.23)  # mid-interval: rows decoded since the last commit are in memory only
            procs[-1].send_signal(signal.SIGKILL)
            procs[-1].wait()
            started = time.time()
            procs.append(start_collector(sock, out, "--journal-retention", "0"))
        sender.join()
        # the last collector's own stats (the killed one's may already count every datagram)
        wait_until(
            lambda t=started: (
                collector_stats(out).get("packets", 0) >= accesses + 2
                and collector_stats(out).get("state") == "listening"
                and collector_stats(out).get("updated_at", 0) > t
            ),
            "every datagram decoded",
            timeout=90,
        )
        procs[-1].send_signal(signal.SIGTERM)
        assert procs[-1].wait(timeout=60) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        sock.close()
    rows = [r for p in sorted(out.glob("file_access-*.parquet")) for r in pq.read_table(p).to_pylist()]
    keys = [(r["server_host"], r["unique_id"]) for r in rows]
    assert len(keys) == len(set(keys)), "a row was written twice"
    assert sorted(r["file_lfn"] for r in rows) == sorted(f"/crash/{k}.root" for k in range(accesses))
    assert all(r["close_seen"] and r["read_bytes_at_close"] == int(r["file_lfn"][7:-5]) for r in rows)
    stats = collector_stats(out)
    # A segment per start; with --journal-retention 0 the decoded ones are gone.
    assert [p.name for p in (out / "journal" / "w0").glob("seg-*.tlj")] == ["seg-000000000003.tlj"]
    assert stats["state"] == "finished" and stats["kernel_drops"] == 0 and stats["lost_packets"] == 0
    assert stats["rows_written"] == accesses
    # collector_stats: the datagrams of every interval add up to what was sent, once
    cs = [r for p in out.glob("collector_stats-*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sum(r["datagrams"] for r in cs if r["server_host"] == "") == accesses + 2
    assert sum(r["rows_written"] for r in cs if r["server_host"] != "") == accesses


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_kernel_drops_are_counted_exactly_and_the_run_is_not_called_lossless(tmp_path):
    """The receiver is stopped (SIGSTOP) while a burst overflows a small socket buffer: the
    kernel drops datagrams. What the collector reports must be the kernel's own count, read here
    independently from /proc/net/udp, and received + dropped must be what was sent."""
    out = tmp_path / "out"
    wh = tmp_path / "wh.duckdb"
    sock = udp_socket(256 << 10)
    port = sock.getsockname()[1]
    s = SimServer("loss.example.org", 1094, sid=99, stod=1_700_000_000)
    uid, login = s.login(5, "wn02.example.org", "app", "slurm.loss.1")
    burst = 3000
    with running_collector(start_collector(sock, out, "--load", "--warehouse", str(wh)), sock):
        wait_until(lambda: collector_stats(out).get("state") == "listening", "the collector to listen")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
            for p in (s.ident(), login):
                snd.sendto(p, ("127.0.0.1", port))
            wait_until(lambda: collector_stats(out).get("packets", 0) >= 2, "the identity and the login")
            receiver = int(collector_stats(out)["receivers"]["0"])
            os.kill(receiver, signal.SIGSTOP)
            try:
                for k in range(burst):
                    fid = s.new_file()
                    snd.sendto(
                        s.fpacket(
                            1_700_000_100,
                            1_700_000_101,
                            [open_record(fid, 10, uid, f"/loss/{k}"), close_record(fid, 10, 0, 0)],
                        ),
                        ("127.0.0.1", port),
                    )
                dropped = _proc_drops(sock)
            finally:
                os.kill(receiver, signal.SIGCONT)
        assert 0 < dropped < burst
        wait_until(
            lambda: (
                collector_stats(out).get("packets", 0) == 2 + burst - dropped
                and collector_stats(out).get("kernel_drops") == dropped
            ),
            "the rest decoded and the drops counted",
        )
    stats = collector_stats(out)
    assert (stats["kernel_drops"], stats["rows_written"], stats["lossless"]) == (dropped, burst - dropped, False)
    assert stats["lost_packets"] <= dropped  # pseq gaps: a lower bound only (8 bits wrap)
    assert "not lossless" in (tmp_path / "collector.log").read_text().replace("\n", " ")
    cs = [r for p in out.glob("collector_stats-*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sum(r["kernel_drops"] or 0 for r in cs) == dropped
    assert all(r["kernel_drops"] == 0 for r in cs if r["server_host"] != "")
    import duckdb

    con = duckdb.connect(str(wh), read_only=True)
    try:
        assert con.execute(
            "select sum(kernel_drops), sum(datagrams) from raw_collector_stats where server_host = ''"
        ).fetchone() == (dropped, 2 + burst - dropped)
        assert con.execute("select count(*) from raw_file_access").fetchone()[0] == burst - dropped
    finally:
        con.close()


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """One collector with --workers 2 (SO_REUSEPORT) and --allow 127.0.0.1/32; 16 servers send
    from their own sockets, and an outsider (127.0.0.2) sends too."""
    root = tmp_path_factory.mktemp("workers")
    out = root / "out"
    port, metrics_port = free_port(socket.SOCK_DGRAM), free_port()
    log = open(root / "collector.log", "w")
    proc = subprocess.Popen(
        listen_command(
            port,
            out,
            "--workers",
            "2",
            "--allow",
            "127.0.0.1/32",
            "--max-seconds",
            "0.5",
            "--metrics",
            f"127.0.0.1:{metrics_port}",
            "--cache-grace",
            "1",
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    servers, per_server, outsider = 16, 200, 37
    with running_collector(proc):
        wait_until(lambda: collector_stats(out).get("state") == "listening", "the collector to listen")
        socks = []
        for i in range(servers):
            s = SimServer(f"xrd{i:02d}.example.org", 1094, sid=500 + i, stod=1_700_000_000)
            snd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            snd.connect(("127.0.0.1", port))
            uid, login = s.login(10 + i, "wn.example.org", "app", f"slurm.w.{i}")
            snd.send(s.ident())
            snd.send(login)
            socks.append((s, snd, uid))
        for k in range(per_server):
            if k == per_server // 2:
                # A receiver that exits is restarted by the collector on the same socket, whose
                # queue keeps what arrives meanwhile.
                os.kill(int(collector_stats(out)["receivers"]["0"]), signal.SIGTERM)
            for i, (s, snd, uid) in enumerate(socks):
                fid = s.new_file()
                snd.send(
                    s.fpacket(
                        1_700_000_100,
                        1_700_000_101,
                        [open_record(fid, 10, uid, f"/w/{i}/{k}"), close_record(fid, k, 0, 0)],
                    )
                )
            time.sleep(0.002)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as bad:
            bad.bind(("127.0.0.2", 0))
            for _ in range(outsider):
                bad.sendto(b"written by anyone who can reach the port", ("127.0.0.1", port))
        for _, snd, _ in socks:
            snd.close()
        sent = servers * (per_server + 2)
        wait_until(
            lambda: (
                collector_stats(out).get("packets", 0) >= sent
                and collector_stats(out).get("disallowed", 0) >= outsider
                and collector_stats(out).get("rows_written", 0) >= servers * per_server
            ),
            "every datagram decoded, every row written and the outsider counted",
        )
        time.sleep(1.2)  # one more stats tick: the metrics read the latest stats
        running = collector_stats(out)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
    yield {
        "out": out,
        "servers": servers,
        "per_server": per_server,
        "outsider": outsider,
        "sent": sent,
        "running": running,
        "metrics": metrics,
        "log": root / "collector.log",
    }


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_two_workers_share_the_port_each_with_its_journal(two_workers):
    out, sent = two_workers["out"], two_workers["sent"]
    stats = collector_stats(out)
    assert stats["workers"] == 2 and stats["packets"] == sent and stats["kernel_drops"] == 0
    assert stats["receiver_restarts"] == 1
    rows = [r for p in sorted(out.glob("file_access-*.parquet")) for r in pq.read_table(p).to_pylist()]
    assert sorted(r["file_lfn"] for r in rows) == sorted(
        f"/w/{i}/{k}" for i in range(two_workers["servers"]) for k in range(two_workers["per_server"])
    )
    assert len({(r["server_host"], r["unique_id"]) for r in rows}) == len(rows)
    cs = [r for p in out.glob("collector_stats-*.parquet") for r in pq.read_table(p).to_pylist()]
    per_worker = {w: sum(r["datagrams"] for r in cs if r["worker"] == w and r["server_host"] == "") for w in (0, 1)}
    # The kernel spread 16 senders over both sockets (all on one: probability 2**-15).
    assert per_worker[0] > 0 and per_worker[1] > 0 and sum(per_worker.values()) == sent
    assert len(list((out / "journal" / "w0").glob("seg-*.tlj"))) == 2  # one per receiver start
    assert len(list((out / "journal" / "w1").glob("seg-*.tlj"))) == 1
    # A server's datagrams all went to one worker, and its per-server row says which.
    by_server: dict[str, set[int]] = {}
    for r in cs:
        if r["server_host"] and r["datagrams"]:
            by_server.setdefault(r["server_host"], set()).add(r["worker"])
    assert len(by_server) == two_workers["servers"] and all(len(w) == 1 for w in by_server.values())


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_senders_outside_allow_are_counted_and_never_journaled(two_workers):
    out = two_workers["out"]
    stats = collector_stats(out)
    assert stats["disallowed"] == two_workers["outsider"] and stats["quarantined"] == {}
    cs = [r for p in out.glob("collector_stats-*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sum(r["disallowed"] for r in cs) == two_workers["outsider"]
    journaled = b"".join(p.read_bytes() for p in (out / "journal").glob("w*/seg-*.tlj"))
    assert b"written by anyone" not in journaled


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_metrics_are_served_for_prometheus(two_workers):
    from prometheus_client.parser import text_string_to_metric_families

    samples = {}
    for fam in text_string_to_metric_families(two_workers["metrics"]):
        for smp in fam.samples:
            samples[(smp.name, tuple(sorted(smp.labels.items())))] = smp.value
    sent = two_workers["sent"]
    assert samples[("tierlens_collector_datagrams_total", ())] == sent
    received = sum(v for (n, _), v in samples.items() if n == "tierlens_collector_received_datagrams_total")
    assert received == sent
    assert samples[("tierlens_collector_kernel_drops_total", ())] == 0
    assert samples[("tierlens_collector_disallowed_total", ())] == two_workers["outsider"]
    assert samples[("tierlens_collector_rows_written_total", ())] == two_workers["servers"] * two_workers["per_server"]
    assert samples[("tierlens_collector_journal_backlog_bytes", ())] == 0
    assert samples[("tierlens_collector_workers", ())] == 2
    gaps = {dict(k[1]).get("server") for k in samples if k[0] == "tierlens_collector_sequence_gaps_total"}
    assert len(gaps) == two_workers["servers"]


@pytest.mark.timeout(60)
def test_systemd_units_verify(tmp_path):
    """deploy/collector's socket and service units pass systemd-analyze verify (with ExecStart
    pointed at this checkout's tierlens, since /opt/tierlens is where a site installs it)."""
    import shutil

    assert shutil.which("systemd-analyze"), "systemd is not installed: see deploy/ci/system-packages.txt"
    src = Path(__file__).resolve().parents[1] / "deploy" / "collector"
    for unit in ("tierlens-collector.socket", "tierlens-collector.service"):
        text = (src / unit).read_text().replace("/opt/tierlens/.venv/bin/tierlens", TIERLENS)
        (tmp_path / unit).write_text(text)
    service = (src / "tierlens-collector.service").read_text()
    assert "Restart=on-failure" in service and "ExecStart=/opt/tierlens/.venv/bin/tierlens collect xrootd" in service
    r = subprocess.run(
        ["systemd-analyze", "verify", "tierlens-collector.socket", "tierlens-collector.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert r.returncode == 0 and "tierlens-collector" not in r.stdout + r.stderr, r.stdout + r.stderr
