"""XRootD collector benchmarks.

1. decode: a tcpdump-format capture with N close records (default 1 M; each open+close pair of
   f-stream records, packed into packets of up to --packet-bytes like an xrootd monitor buffer,
   from --servers server instances, with logins, identity records and XCache pfc events) is
   replayed through the collector. Reported: the decoder alone on the payloads in memory, and the
   whole `replay()` (pcap parsing with dpkt, decoding, Parquet batches written atomically).
2. loss: `tierlens collect xrootd --listen` in its own process; a sender process sends f-stream
   packets at a fixed rate (default 20 k packets/s) for --seconds (default 60) over loopback.
   Reported: packets sent, received, lost by the collector's own sequence-gap count, and rows.

    .venv/bin/python bench/collector_bench.py decode --closes 1000000
    .venv/bin/python bench/collector_bench.py loss --rate 20000 --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dpkt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))

from tierlens.collector.decoder import Decoder  # noqa: E402
from tierlens.collector.service import Options, replay  # noqa: E402
from tierlens.collector.synth import open_close_stream  # noqa: E402

OUT = Path(__file__).parent / "out" / "collector"


def make_payloads(closes: int, servers: int = 8, packet_bytes: int = 16384, seed: int = 1):
    """[(server index, payload)] in send order (see synth.open_close_stream)."""
    return open_close_stream(closes, servers, packet_bytes, seed)


def write_pcap(payloads, path: Path, dport: int = 9930) -> None:
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=dpkt.pcap.DLT_EN10MB)
        ts = 1_700_000_100.0
        for i, data in payloads:
            udp = dpkt.udp.UDP(sport=40000 + i, dport=dport, data=data)
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1 + i]), dst=bytes([10, 0, 0, 254]), p=dpkt.ip.IP_PROTO_UDP,
                            data=udp)
            ip.len = len(ip)
            eth = dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
            w.writepkt(bytes(eth), ts=ts)
            ts += 0.0001


def bench_decode(args) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    pcap = OUT / f"closes-{args.closes}.pcap"
    payloads = make_payloads(args.closes, args.servers, args.packet_bytes)
    if not pcap.exists():
        write_pcap(payloads, pcap)
    results = {"closes": args.closes, "packets": len(payloads), "pcap_bytes": pcap.stat().st_size}
    # decoder alone
    best = None
    for _ in range(args.repeat):
        rows = []
        d = Decoder(rows.append, unclosed_timeout=1e12, cache_grace=1e12)
        addrs = [(f"10.0.0.{1 + i}", 40000 + i) for i in range(args.servers)]
        t0 = time.perf_counter()
        for i, data in payloads:
            d.feed(data, addrs[i], 0.0)
        d.finish(0.0)
        dt = time.perf_counter() - t0
        n_rows = sum(t.num_rows for t in rows)  # the decoder emits Arrow tables
        assert n_rows == args.closes - args.closes % args.servers, n_rows
        best = dt if best is None else min(best, dt)
    results["decoder_seconds"] = round(best, 3)
    results["decoder_closes_per_s"] = round(n_rows / best)
    del rows
    # whole replay: pcap -> decoder -> Parquet
    best = None
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(dir=OUT) as tmp:
            t0 = time.perf_counter()
            r = replay(pcap, Options(Path(tmp), max_rows=500_000))
            dt = time.perf_counter() - t0
            assert r.rows == results["closes"] - results["closes"] % args.servers
            best = dt if best is None else min(best, dt)
    results["replay_seconds"] = round(best, 3)
    results["replay_closes_per_s"] = round(r.rows / best)
    results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return results


SENDER = r"""
import socket, sys, time
sys.path.insert(0, sys.argv[1])
from tierlens.collector.synth import SimServer, close_record, open_record
port, rate, seconds = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = SimServer("sender.example.org", 1094, sid=77, stod=int(time.time()))
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dest = ("127.0.0.1", port)
uid, login = s.login(4242, "wn001.example.org", "bench", "slurm.t2.1")
sock.sendto(s.ident(), dest); sock.sendto(login, dest)
n = int(rate * seconds)
t0 = time.perf_counter()
period = 1.0 / rate
sent = 0
for k in range(n):
    fid = s.new_file()
    p = s.fpacket(1700000000 + k // 1000, 1700000001 + k // 1000,
                  [open_record(fid, 1000, uid, f"/store/bench/{fid}.root"), close_record(fid, 1000, 0, 0)])
    target = t0 + k * period
    while time.perf_counter() < target:
        pass
    sock.sendto(p, dest)
    sent += 1
elapsed = time.perf_counter() - t0
print(f"{sent} {elapsed}")
"""


def bench_loss(args) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(dir=OUT))
    tierlens = str(Path(sys.executable).parent / "tierlens")
    col = subprocess.Popen([tierlens, "collect", "xrootd", "--listen", f"127.0.0.1:{port}", "--out", str(tmp),
                            "--max-seconds", "10", "--cache-grace", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stats = tmp / "collector-stats.json"
    while not stats.exists():
        time.sleep(0.05)
    pipelines = str(Path(__file__).resolve().parents[1] / "pipelines")
    snd = subprocess.run([sys.executable, "-c", SENDER, pipelines, str(port), str(args.rate), str(args.seconds)],
                         capture_output=True, text=True, check=True)
    sent, elapsed = snd.stdout.split()
    sent = int(sent) + 2
    # let the collector drain, then stop it
    deadline = time.monotonic() + 30
    while json.loads(stats.read_text()).get("packets", 0) < sent and time.monotonic() < deadline:
        time.sleep(0.2)
    col.send_signal(signal.SIGTERM)
    _, status, col_usage = os.wait4(col.pid, 0)
    col.returncode = os.waitstatus_to_exitcode(status)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    st = json.loads(stats.read_text())
    col_cpu = col_usage.ru_utime + col_usage.ru_stime
    return {"rate_target": args.rate, "seconds": args.seconds, "sent": sent,
            "send_elapsed_s": round(float(elapsed), 2), "achieved_rate": round((sent - 2) / float(elapsed)),
            "received": st["packets"], "lost_by_sequence": st["lost_packets"],
            "not_received": sent - st["packets"], "rows": st["rows_written"],
            "collector_cpu_s": round(col_cpu, 1),
            "collector_cpu_us_per_packet": round(1e6 * col_cpu / max(1, st["packets"]), 1),
            "sender_cpu_s": round(usage.ru_utime + usage.ru_stime - col_cpu, 1),
            "load_average_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("decode")
    d.add_argument("--closes", type=int, default=1_000_000)
    d.add_argument("--servers", type=int, default=8)
    d.add_argument("--packet-bytes", type=int, default=16384)
    d.add_argument("--repeat", type=int, default=2)
    lo = sub.add_parser("loss")
    lo.add_argument("--rate", type=float, default=20_000)
    lo.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    res = bench_decode(args) if args.what == "decode" else bench_loss(args)
    print(json.dumps(res, indent=1))
    (OUT / f"{args.what}.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
