"""XRootD collector benchmarks.

1. decode: a tcpdump-format capture with N close records (default 1 M; each open+close pair of
   f-stream records, packed into packets of up to --packet-bytes like an xrootd monitor buffer,
   from --servers server instances, with logins, identity records and XCache pfc events) is
   replayed through the collector. Reported: the decoder alone on the payloads in memory, and the
   whole `replay()` (pcap parsing with dpkt, decoding, Parquet batches written atomically).
2. load: `tierlens collect xrootd --listen --workers W` in its own process; a sender process sends
   f-stream packets (one open+close each, 140 bytes) from --senders sockets at --rate packets/s
   for --seconds over loopback. Reported: datagrams sent, taken by the receivers, dropped by the
   kernel (the collector's count, and sent - received as a check), the journal backlog the
   decoder left, peak RSS of every process, the load average.

    .venv/bin/python bench/collector_bench.py decode --closes 1000000
    .venv/bin/python bench/collector_bench.py load --rate 50000 --seconds 60
    .venv/bin/python bench/collector_bench.py load --rate 100000 --seconds 60 --workers 2
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
from tierlens.collector.synth import SimServer, close_record, open_close_stream, open_record  # noqa: E402

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
            ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1 + i]), dst=bytes([10, 0, 0, 254]), p=dpkt.ip.IP_PROTO_UDP, data=udp)
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
import socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
from tierlens.collector.synth import SimServer, close_record, open_record
port, rate, seconds, nsock = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
dest = ("127.0.0.1", port)
# One template f-stream packet per server (time record, open with a 12-digit lfn, close), patched
# in place per send: pseq, the file id in both records, the lfn digits. ~1 us per packet.
tpl = []
for i in range(nsock):
    s = SimServer(f"bench{i:02d}.example.org", 1094, sid=100 + i, stod=int(time.time()))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(dest)
    uid, login = s.login(4242 + i, f"wn{i:03d}.example.org", "bench", f"slurm.t2.{i}")
    sock.send(s.ident()); sock.send(login)
    o = open_record(0, 1000, uid, "/store/bench/000000000000.root")
    c = close_record(0, 1000, 0, 0)
    buf = bytearray(s.fpacket(1700000000, 1700000001, [o, c]))
    tpl.append((sock, buf, 8 + 24 + 4, 8 + 24 + len(o) + 4, 8 + 24 + 20 + len("/store/bench/")))
time.sleep(0.5)
n = int(rate * seconds)
tick = 0.001
per_tick = rate * tick
pack = struct.pack_into
t0 = time.perf_counter()
k = 0
while k < n:
    due = min(n, int((time.perf_counter() - t0) / tick * per_tick) + int(per_tick))
    while k < due:
        sock, buf, fo, fc, lo = tpl[k % nsock]
        fid = k + 1
        buf[1] = (k // nsock) & 0xFF
        pack(">I", buf, fo, fid)
        pack(">I", buf, fc, fid)
        buf[lo:lo + 12] = b"%012d" % fid
        sock.send(buf)
        k += 1
    time.sleep(tick / 2)
elapsed = time.perf_counter() - t0
print(f"{n + 2 * nsock} {elapsed}")
"""


def c_sender(port: int, rate: float, seconds: float, nsock: int) -> list[str]:
    """argv of bench/udp_sender.c (compiled here with cc) and its template file: the same packets
    as SENDER, sent with sendmmsg, so the sender takes little of the 2 cores."""
    import struct

    exe = OUT / "udp_sender"
    src = Path(__file__).with_name("udp_sender.c")
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    parts = [struct.pack("<I", nsock)]
    for i in range(nsock):
        s = SimServer(f"bench{i:02d}.example.org", 1094, sid=100 + i, stod=int(time.time()))
        uid, login = s.login(4242 + i, f"wn{i:03d}.example.org", "bench", f"slurm.t2.{i}")
        o = open_record(0, 1000, uid, "/store/bench/000000000000.root")
        c = close_record(0, 1000, 0, 0)
        tpl = s.fpacket(1700000000, 1700000001, [o, c])
        for blob in (s.ident(), login, tpl):
            parts += [struct.pack("<I", len(blob)), blob]
        parts.append(struct.pack("<IIII", 1, 8 + 24 + 4, 8 + 24 + len(o) + 4, 8 + 24 + 20 + len("/store/bench/")))
    tfile = OUT / f"sender-templates-{os.getpid()}.bin"
    tfile.write_bytes(b"".join(parts))
    return [str(exe), str(tfile), str(port), str(rate), str(seconds)]


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                out.add(link[8:-1])
    except OSError:
        pass
    return out


def _proc_udp(inodes: set[str]) -> tuple[int, int]:
    """(drops, bytes queued) of these sockets, from /proc/net/udp: the kernel's own figures."""
    drops = queued = 0
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        f = line.split()
        if f[9] in inodes:
            drops += int(f[12])
            queued += int(f[4].split(":")[1], 16)
    return drops, queued


def _cpu_seconds(pid: int) -> float | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _vm_hwm_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def bench_load(args) -> dict:
    """The live collector (`--workers W`) against a paced sender; receive loss from the kernel's
    own count, the journal backlog the slow decoder builds, peak RSS of every process."""
    OUT.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(dir=OUT))
    tierlens = str(Path(sys.executable).parent / "tierlens")
    load_before = os.getloadavg()
    col = subprocess.Popen(
        [
            tierlens,
            "collect",
            "xrootd",
            "--listen",
            f"127.0.0.1:{port}",
            "--out",
            str(tmp),
            "--workers",
            str(args.workers),
            "--max-seconds",
            "10",
            "--max-rows",
            "50000",
            "--cache-grace",
            "1",
            "--journal-retention",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "collector.log", "w"),
    )
    stats_path = tmp / "collector-stats.json"

    def stats() -> dict:
        try:
            return json.loads(stats_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    while stats().get("state") != "listening":
        time.sleep(0.05)
    pids = [int(p) for p in stats()["receivers"].values()]
    inodes = set().union(*(_socket_inodes(p) for p in pids))
    from tierlens.collector.receiver import read_status

    def received_now() -> int:
        return sum((read_status(w) or (0, 0, 0))[2] for w in (tmp / "journal").glob("w*"))

    pipelines = str(Path(__file__).resolve().parents[1] / "pipelines")
    argv = (
        c_sender(port, args.rate, args.seconds, args.senders)
        if args.sender == "c"
        else [sys.executable, "-c", SENDER, pipelines, str(port), str(args.rate), str(args.seconds), str(args.senders)]
    )
    snd = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    peak = {"backlog_bytes": 0, "backlog_seconds": 0.0}
    hwm: dict[int, float] = {}
    cpu: dict[int, float] = {}
    loads = []

    def sample() -> dict:
        st = stats()
        peak["backlog_bytes"] = max(peak["backlog_bytes"], st.get("journal_backlog_bytes", 0))
        peak["backlog_seconds"] = max(peak["backlog_seconds"], st.get("journal_backlog_seconds", 0.0))
        for pid in pids + [col.pid]:
            v = _vm_hwm_mib(pid)
            if v is not None:
                hwm[pid] = max(hwm.get(pid, 0.0), v)
            c = _cpu_seconds(pid)
            if c is not None:
                cpu[pid] = c
        return st

    while snd.poll() is None:
        sample()
        loads.append(os.getloadavg()[0])
        time.sleep(1.0)
    sent, elapsed, _ = snd.stdout.read().split() + [""]
    sent = int(sent)
    # The receivers may still be emptying their sockets (CPU-starved): wait until the kernel's
    # queues are empty. Received and dropped come from the receivers' own status files and the
    # kernel (/proc/net/udp), not from the decoder, which lags.
    while True:
        drops, queued = _proc_udp(inodes)
        if queued == 0:
            break
        sample()
        time.sleep(0.5)
    time.sleep(args.sync + 1.0)  # the receivers' status and last counters record
    drops, _ = _proc_udp(inodes)
    received = received_now()
    st = sample()
    drops_at_send_end = drops
    backlog_at_send_end = st.get("journal_backlog_bytes", 0)
    t_drain = time.monotonic()
    if args.drain:
        while stats().get("packets", 0) + stats().get("kernel_drops", 0) < sent:
            sample()
            time.sleep(1.0)
    drain_s = time.monotonic() - t_drain
    final = sample()
    # Without --drain the decoder's backlog is left in the journal (SIGKILL: a restart would resume).
    col.send_signal(signal.SIGTERM if args.drain else signal.SIGKILL)
    _, status, usage = os.wait4(col.pid, 0)
    col.returncode = os.waitstatus_to_exitcode(status)
    if args.drain:
        final = stats()
    return {
        "rate_target": args.rate,
        "workers": args.workers,
        "senders": args.senders,
        "seconds": args.seconds,
        "sender": args.sender,
        "sent": sent,
        "send_elapsed_s": round(float(elapsed), 2),
        "achieved_rate": round((sent - 2 * args.senders) / float(elapsed)),
        "received_by_receivers": received,
        "kernel_drops_proc_net_udp": drops_at_send_end,
        "sent_minus_received": sent - received,
        "kernel_drops_collector": final["kernel_drops"] if args.drain else None,
        "decoded": final["packets"],
        "rows": final["rows_written"],
        "lossless": final["lossless"] if args.drain else drops_at_send_end == 0 and received == sent,
        "journal_backlog_at_send_end_mib": round(backlog_at_send_end / 2**20, 1),
        "journal_backlog_peak_mib": round(peak["backlog_bytes"] / 2**20, 1),
        "journal_backlog_peak_seconds": round(peak["backlog_seconds"], 1),
        "decode_drain_after_send_s": round(drain_s, 1),
        "receiver_cpu_s": round(sum(cpu.get(p, 0.0) for p in pids), 1),
        "receiver_cpu_us_per_datagram": round(1e6 * sum(cpu.get(p, 0.0) for p in pids) / max(1, received), 2),
        "peak_rss_mib": {"decoder": round(usage.ru_maxrss / 1024), "receivers": [round(hwm.get(p, 0)) for p in pids]},
        "load_average_before": round(load_before[0], 2),
        "load_average_during_send_max": round(max(loads or [0]), 2),
        "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("decode")
    d.add_argument("--closes", type=int, default=1_000_000)
    d.add_argument("--servers", type=int, default=8)
    d.add_argument("--packet-bytes", type=int, default=16384)
    d.add_argument("--repeat", type=int, default=2)
    lo = sub.add_parser("load")
    lo.add_argument("--rate", type=float, default=50_000)
    lo.add_argument("--seconds", type=float, default=60)
    lo.add_argument("--workers", type=int, default=1)
    lo.add_argument("--senders", type=int, default=8, help="sender sockets (servers); SO_REUSEPORT hashes by them")
    lo.add_argument("--sync", type=float, default=1.0)
    lo.add_argument(
        "--sender",
        choices=("c", "python"),
        default="c",
        help="c: bench/udp_sender.c with sendmmsg (default); python: a paced Python loop",
    )
    lo.add_argument(
        "--no-drain",
        dest="drain",
        action="store_false",
        help="measure receiving only: SIGKILL the collector once sending ends, its backlog undecoded",
    )
    args = ap.parse_args()
    res = bench_decode(args) if args.what == "decode" else bench_load(args)
    print(json.dumps(res, indent=1))
    name = args.what if args.what == "decode" else f"load-{int(args.rate)}-w{args.workers}"
    (OUT / f"{name}.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
