"""Real XRootD: an origin and an XCache on loopback, monitoring sent to `tierlens collect xrootd`.

The test writes files of known sizes, reads them with xrdcp (whole file, through the origin and
twice through the cache) and with the XRootD Python bindings (a partial read and a vector read),
with XRD_MONINFO and XRD_APPNAME set, while tcpdump captures the monitoring packets. It checks
the decoded rows against what it did, then replays the capture and checks it gives the same rows,
and loads the batches into a warehouse through the ordinary loader.

Needs root (to start xrootd as the xrootd user and to run tcpdump); skipped otherwise, and a skip
fails the run in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from slurm_fixtures import GENERATIONS, enter_generation
from support.collectors import listen_command
from support.processes import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run xrootd (as user xrootd) and tcpdump"),
]

VENV_BIN = Path(sys.executable).parent
TIERLENS = str(VENV_BIN / "tierlens")
DATA = Path(__file__).parent / "data"
SYSTEM_PYTHON = "/usr/bin/python3"  # python3-xrootd is built for Debian's Python


def _wait_for(predicate, what: str, timeout: float = 60.0, detail=lambda: ""):
    """Poll until ``predicate()`` is truthy; the bound only stops a broken run hanging."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} {detail()}")
        time.sleep(0.1)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Site:
    """An origin and an XCache on loopback, the collector, and tcpdump; all stopped in close().

    The servers are the generation's (tests/slurm_fixtures.py: the host's xrootd, or Debian 13's or
    unstable's from their root filesystem); the collector, tcpdump and the clients are the host's."""

    def __init__(self, generation: str = "host") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"tierlens-xrd-{generation}-", dir="/tmp"))
        os.chmod(self.root, 0o755)
        self.servers = enter_generation(generation, [self.root])
        self.procs: list[subprocess.Popen] = []
        self.udp = free_port(socket.SOCK_DGRAM)
        self.origin_port = free_port()
        self.cache_port = free_port()
        self.out = self.root / "batches"
        self.pcap = self.root / "monitoring.pcap"
        for d in ("origin", "cache", "cache/data"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
            os.chown(self.root / d, *self.servers.ids("xrootd"))

    def start_collector(self) -> None:
        self.collector = self._spawn(
            listen_command(self.udp, self.out, "--max-seconds", "1", "--cache-grace", "3"),
            "collector",
        )
        _wait_for(lambda: self.stats().get("state") == "listening", "the collector to listen")

    def start_tcpdump(self) -> None:
        log = self.root / "tcpdump.log"
        self.tcpdump = self._spawn(
            [
                "tcpdump",
                "-i",
                "lo",
                "-n",
                "-U",
                "-Z",
                "root",
                "-w",
                str(self.pcap),
                "udp",
                "and",
                "dst",
                "port",
                str(self.udp),
            ],
            "tcpdump",
        )
        _wait_for(lambda: "listening on" in log.read_text(), "tcpdump to listen")

    def start_servers(self) -> None:
        mon = (
            f"xrootd.monitor all flush 1s ident 60s fstat 1s lfn ops xfr 5 dest fstat info user 127.0.0.1:{self.udp}\n"
        )
        origin = f"xrd.port {self.origin_port}\nall.export /\noss.localroot {self.root / 'origin'}\n" + mon
        cache = (
            f"xrd.port {self.cache_port}\nall.export /\nofs.osslib libXrdPss.so\n"
            f"pss.origin localhost:{self.origin_port}\npss.cachelib libXrdPfc.so\n"
            f"oss.localroot {self.root / 'cache' / 'data'}\n"
            + mon
            + f"xrootd.mongstream pfc use flush 1s send json 127.0.0.1:{self.udp}\n"
        )
        for name, cfg, port in (("origin", origin, self.origin_port), ("cache", cache, self.cache_port)):
            path = self.root / f"{name}.cfg"
            path.write_text(cfg)
            os.chmod(path, 0o644)
            self._spawn(
                self.servers.argv(
                    ["xrootd", "-R", "xrootd", "-c", str(path), "-n", name, "-l", str(self.root / name / f"{name}.log")]
                ),
                name,
            )
            _wait_for(lambda p=port: _port_open(p), f"xrootd {name} on port {port}")

    def write_file(self, name: str, size: int) -> bytes:
        data = os.urandom(size)
        path = self.root / "origin" / name
        path.write_bytes(data)
        os.chmod(path, 0o644)
        return data

    def _spawn(self, argv: list[str], name: str, **kw) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, **kw)
        self.procs.append(p)
        return p

    def stats(self) -> dict:
        try:
            return json.loads((self.out / "collector-stats.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def close(self) -> None:
        for p in reversed(self.procs):
            _stop(p, signal.SIGINT if p.args[0] == "tcpdump" else signal.SIGTERM)
        self.servers.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _run_client(argv: list[str], job: str, app: str, **kw) -> int:
    env = dict(os.environ, XRD_MONINFO=job, XRD_APPNAME=app)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    out, errout = p.communicate(timeout=120)
    assert p.returncode == 0, (argv, out[-2000:], errout[-2000:])
    return p.pid


PY_READS = """
import sys
from XRootD import client
url, mode = sys.argv[1], sys.argv[2]
f = client.File()
st, _ = f.open(url)
assert st.ok, st
if mode == "partial":
    st, data = f.read(int(sys.argv[3]), int(sys.argv[4]))
    assert st.ok and len(data) == int(sys.argv[4]), st
else:
    chunks = [tuple(int(x) for x in c.split(":")) for c in sys.argv[3:]]
    st, res = f.vector_read(chunks)
    assert st.ok, st
    assert sum(len(c.buffer) for c in res.chunks) == sum(n for _, n in chunks)
f.close()
"""


KILLED_READ = 1_000_000
KILLED = """
import sys, time
from XRootD import client
f = client.File()
st, _ = f.open(sys.argv[1])
assert st.ok, st
st, data = f.read(0, int(sys.argv[2]))
assert st.ok and len(data) == int(sys.argv[2]), st
print("read", flush=True)
time.sleep(120)
"""


def _run_killed(url: str) -> int:
    """A client that opens ``url``, reads KILLED_READ bytes and is killed (SIGKILL) holding it open."""
    env = dict(os.environ, XRD_MONINFO="slurm.t2test.900", XRD_APPNAME="killed-test")
    p = subprocess.Popen(
        [SYSTEM_PYTHON, "-c", KILLED, url, str(KILLED_READ)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline().strip() == "read", p.stderr.read() if p.poll() is not None else ""
        time.sleep(1.5)  # past the server's 1 s f-stream window, so the open is reported first
    finally:
        p.kill()
        p.wait()
    return p.pid


def _rows(folder: Path) -> list[dict]:
    rows = []
    for p in sorted(folder.glob("file_access-*.parquet")):
        rows.extend(pq.read_table(p).to_pylist())
    return rows


def _key(r: dict) -> tuple:
    return (r["server_host"], r["unique_id"])


@pytest.fixture(scope="module", params=GENERATIONS)
def site_run(request):
    for tool in ("xrootd", "xrdcp", "tcpdump"):
        assert shutil.which(tool), f"{tool} is not installed: see deploy/ci/system-packages.txt"
    site = Site(request.param)
    try:
        sizes = {"/big.bin": 3_000_000 + 17, "/cached.bin": 1_500_000 + 5, "/killed.bin": 4_000_000 + 3}
        for name, size in sizes.items():
            site.write_file(name.lstrip("/"), size)
        site.start_collector()
        site.start_tcpdump()
        site.start_servers()
        o, c = f"root://127.0.0.1:{site.origin_port}/", f"root://127.0.0.1:{site.cache_port}/"
        done = {}
        local = site.root / "copies"
        local.mkdir()
        done["origin_copy"] = _run_client(
            ["xrdcp", "-f", "-s", o + "/big.bin", str(local / "a")], "slurm.t2test.101", "xrdcp-test"
        )
        assert (local / "a").stat().st_size == sizes["/big.bin"]
        done["cache_first"] = _run_client(
            ["xrdcp", "-f", "-s", c + "/cached.bin", str(local / "b")], "slurm.t2test.102", "xrdcp-test"
        )
        # The cache reports the first access when it detaches the file; wait for that report so
        # the second read is a separate attach (and must be a hit).
        _wait_for(
            lambda: site.stats().get("counters", {}).get("pfc_file_close", 0) >= 1, "the cache's first file_close event"
        )
        done["cache_second"] = _run_client(
            ["xrdcp", "-f", "-s", c + "/cached.bin", str(local / "c")], "slurm.t2test.103", "xrdcp-test"
        )
        done["partial"] = _run_client(
            [SYSTEM_PYTHON, "-c", PY_READS, o + "/big.bin", "partial", "1000", "5000"],
            "htcondor.pool1.7.0",
            "pyxrootd-test",
        )
        vec = [(0, 100), (200_000, 3000), (2_999_000, 1017)]
        done["vector"] = _run_client(
            [SYSTEM_PYTHON, "-c", PY_READS, o + "/big.bin", "vector"] + [f"{a}:{n}" for a, n in vec],
            "htcondor.pool1.8.0",
            "pyxrootd-test",
        )
        # A client killed after reading KILLED_READ bytes, through the cache and from the origin.
        done["killed_cache"] = _run_killed(c + "/killed.bin")
        done["killed_origin"] = _run_killed(o + "/killed.bin")
        # 3+1 accesses on the origin by the test, 1+1 by the cache fetching cached.bin and
        # killed.bin, 2+1 on the cache.
        _wait_for(
            lambda: (
                site.stats().get("counters", {}).get("closes", 0) >= 9
                and site.stats().get("counters", {}).get("pfc_file_close", 0) >= 3
            ),
            "all closes and the cache events",
            detail=lambda: json.dumps(site.stats()),
        )
        # Ended by the disconnect: written while the collector runs, not at its unclosed timeout
        # (24 h) or shutdown.
        _wait_for(
            lambda: len([r for r in _rows(site.out) if r["app_name"] == "killed-test"]) == 2,
            "the killed clients' accesses in a batch",
            detail=lambda: json.dumps(site.stats()),
        )
        _stop(site.collector)
        time.sleep(0.5)  # tcpdump -U writes each packet as it is seen; let the last one land
        _stop(site.tcpdump, signal.SIGINT)
        stats = json.loads((site.out / "collector-stats.json").read_text())
        rows = _rows(site.out)
        if os.environ.get("TIERLENS_SAVE_CAPTURE"):
            shutil.copy(site.pcap, os.environ["TIERLENS_SAVE_CAPTURE"])
        yield {
            "site": site,
            "rows": rows,
            "stats": stats,
            "pids": done,
            "sizes": sizes,
            "vec": vec,
            "pid_in_user_id": request.param == "host",  # xrootd 5.5.3; see _client
            "origin": f"{socket.gethostname()}:{site.origin_port}",
            "cache_port": site.cache_port,
        }
    finally:
        site.close()


def _one(rows, **where) -> dict:
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


# The job identity each test client sent (XRD_MONINFO): unique per client and server here.
IDENTITY = {
    "origin_copy": "slurm.t2test.101",
    "cache_first": "slurm.t2test.102",
    "cache_second": "slurm.t2test.103",
    "partial": "htcondor.pool1.7.0",
    "vector": "htcondor.pool1.8.0",
    "killed_cache": "slurm.t2test.900",
    "killed_origin": "slurm.t2test.900",
}


def _client(rows, site_run, name: str) -> dict:
    """The access of one test client, found by the identity it sent. xrootd before 5.7 puts the
    client's pid in the user id, so there the pid must match too; later servers put a per-login
    counter there (xrootd #2133), and the client's pid is nowhere in the monitoring."""
    port = site_run["cache_port"] if name.startswith("killed_cache") else None
    if name == "killed_origin":
        port = site_run["site"].origin_port
    found = [
        r
        for r in rows
        if r["job_identity"] == IDENTITY[name] and (port is None or r["server_host"].endswith(f":{port}"))
    ]
    assert len(found) == 1, (name, found)
    if site_run["pid_in_user_id"]:
        assert found[0]["client_pid"] == site_run["pids"][name], name
    return found[0]


def test_live_rows_match_what_the_clients_did(site_run):
    sizes = site_run["sizes"]
    rows = [r for r in site_run["rows"] if r["file_lfn"] != "/killed.bin"]
    origin = [r for r in rows if r["server_host"].endswith(f":{site_run['site'].origin_port}")]
    cache = [r for r in rows if r["server_host"].endswith(f":{site_run['cache_port']}")]
    assert len(origin) == 4 and len(cache) == 2, rows
    assert all(r["close_seen"] for r in rows)
    assert {r["server_role"] for r in origin} == {"origin"}
    assert {r["server_role"] for r in cache} == {"cache"}
    big = sizes["/big.bin"]

    whole = _client(origin, site_run, "origin_copy")
    assert (whole["file_lfn"], whole["file_size_bytes"], whole["read_bytes_at_close"]) == ("/big.bin", big, big)
    assert (whole["job_identity"], whole["app_name"]) == ("slurm.t2test.101", "xrdcp-test")
    assert whole["write_bytes_at_close"] == 0 and whole["readv_bytes"] == 0
    assert whole["read_single_average_bytes"] == pytest.approx(big / whole["read_ops"])
    assert whole["client_host"] in ("127.0.0.1", "localhost", "::1")

    part = _client(origin, site_run, "partial")
    assert (part["file_lfn"], part["read_bytes"], part["read_ops"], part["readv_bytes"]) == ("/big.bin", 5000, 1, 0)
    assert (part["job_identity"], part["app_name"]) == ("htcondor.pool1.7.0", "pyxrootd-test")

    vec = _client(origin, site_run, "vector")
    want = sum(n for _, n in site_run["vec"])
    assert (vec["readv_bytes"], vec["readv_ops"], vec["read_bytes"], vec["read_bytes_at_close"]) == (want, 1, 0, want)
    assert vec["read_vector_average_bytes"] == pytest.approx(want)
    assert vec["job_identity"] == "htcondor.pool1.8.0"

    fetch = _one(origin, app_name="xrootd")  # the cache staging cached.bin in from the origin
    assert fetch["file_lfn"] == "/cached.bin" and fetch["job_identity"] is None
    assert fetch["read_bytes_at_close"] >= sizes["/cached.bin"]

    size = sizes["/cached.bin"]
    first = _client(cache, site_run, "cache_first")
    second = _client(cache, site_run, "cache_second")
    for r, job in ((first, "slurm.t2test.102"), (second, "slurm.t2test.103")):
        assert (r["file_lfn"], r["file_size_bytes"], r["job_identity"]) == ("/cached.bin", size, job)
        # The cache's pfc accounts for exactly the bytes its f-stream reports.
        assert r["cache_hit_bytes"] + r["cache_miss_bytes"] + r["cache_bypass_bytes"] == r["read_bytes_at_close"]
    # xrootd 5.5.3 behind pss+pfc reports the first (staging) read in many small reads whose byte
    # count can exceed the file (the client's read-ahead retries while blocks arrive); never less.
    assert first["read_bytes_at_close"] >= size
    assert second["read_bytes_at_close"] == size and second["read_ops"] >= 1
    assert (second["cache_hit_bytes"], second["cache_miss_bytes"], second["cache_bypass_bytes"]) == (size, 0, 0)

    st = site_run["stats"]
    assert st["lost_packets"] == 0 and sum(st["quarantined"].values()) == 0, st
    assert st["counters"]["pfc_matched"] == 3 and st["counters"].get("pfc_unmatched", 0) == 0
    assert st["counters"].get("cache_accesses_unmatched", 0) == 0
    assert {r["end_reason"] for r in rows} == {"close"}


def test_replaying_the_capture_gives_the_live_rows(site_run, tmp_path):
    site = site_run["site"]
    out = tmp_path / "replay"
    subprocess.run(
        [TIERLENS, "collect", "xrootd", "--replay", str(site.pcap), "--out", str(out), "--cache-grace", "3"],
        check=True,
        capture_output=True,
    )
    live = sorted(site_run["rows"], key=_key)
    replayed = sorted(_rows(out), key=_key)
    assert replayed == live


def test_batches_load_through_the_ordinary_loader(site_run, tmp_path):
    import duckdb

    wh = tmp_path / "wh.duckdb"
    files = sorted(site_run["site"].out.glob("file_access-*.parquet"))
    subprocess.run([TIERLENS, "load", "file_access", *map(str, files), "-w", str(wh)], check=True, capture_output=True)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        n, jobs = con.execute("select count(*), count(job_identity) from raw_file_access").fetchone()
        rejected = con.execute("select count(*) from raw_rejects").fetchone()[0]
    finally:
        con.close()
    assert (n, jobs, rejected) == (9, 7, 0)


def test_a_killed_client_access_ends_by_its_disconnect_with_its_bytes(site_run):
    """xrootd closes a killed client's files itself (a close record flagged forced) and reports
    the disconnect: the access ends there, as a disconnect, with the bytes the client read."""
    rows = [r for r in site_run["rows"] if r["app_name"] == "killed-test"]
    origin = _client(rows, site_run, "killed_origin")
    cache = _client(rows, site_run, "killed_cache")
    for r in (origin, cache):
        assert (r["end_reason"], r["file_lfn"], r["job_identity"]) == ("disconnect", "/killed.bin", "slurm.t2test.900")
    assert origin["read_bytes_at_close"] == KILLED_READ
    # The cache's f-stream counts 0 bytes at such a close (xrootd 5.5.3, pss+pfc); its g-stream
    # event has what it served, and the reconciled model takes the larger (see test below).
    assert cache["cache_hit_bytes"] + cache["cache_miss_bytes"] + cache["cache_bypass_bytes"] == KILLED_READ


def test_cache_hits_and_misses_follow_the_origin_record_not_the_gstream(site_run, tmp_path):
    """First read through the cache: a miss of the file's size (the origin recorded the cache
    fetching it; from xrootd 5.7 the cache's own b_todisk says so); second read: a hit; whatever
    the g-stream says (mostly hits, both times)."""
    from support.dbt import build_with_upstream, table_rows

    wh = tmp_path / "wh.duckdb"
    files = sorted(site_run["site"].out.glob("file_access-*.parquet"))
    subprocess.run([TIERLENS, "load", "file_access", *map(str, files), "-w", str(wh)], check=True, capture_output=True)
    build_with_upstream(wh, tmp_path / "dbt", "int_file_access_reconciled")
    got = table_rows(wh, "intermediate.int_file_access_reconciled")
    size = site_run["sizes"]["/cached.bin"]
    first = _client(got, site_run, "cache_first")
    second = _client(got, site_run, "cache_second")
    fill = _one(got, app_name="xrootd", file_lfn="/cached.bin")
    assert fill["read_bytes_at_close"] >= size
    if site_run["pid_in_user_id"]:
        assert fill["client_pid"] == first["server_pid"]
    # The g-stream's word varies run to run on a real XCache (0 when the prefetch won the race,
    # one 64 KiB block in CI once); it never tells the file's size, and the answer below does
    # not depend on it.
    assert first["gstream_miss_bytes"] < size
    killed = _client(got, site_run, "killed_cache")
    assert first["cache_miss_bytes"] == size
    assert first["cache_hit_bytes"] == first["read_bytes_at_close"] - size
    assert (second["cache_hit_bytes"], second["cache_miss_bytes"]) == (size, 0)
    assert killed["cache_hit_bytes"] + killed["cache_miss_bytes"] == KILLED_READ
    assert killed["cache_miss_bytes"] == KILLED_READ
    if site_run["pid_in_user_id"]:
        assert [r["cache_evidence"] for r in (first, second, killed)] == ["both"] * 3
    else:
        # From xrootd 5.7 the cache's login to the origin carries a login counter, not the
        # cache's pid, so the origin's record of a fill is not tied to the cache; the cache's own
        # file_close says what it wrote to disk (b_todisk), and that is the evidence used. The
        # cache prefetches past what a killed client read, so that miss is capped by what it was served.
        assert (first["cache_todisk_bytes"], second["cache_todisk_bytes"]) == (size, 0)
        assert killed["cache_todisk_bytes"] >= KILLED_READ
        assert [r["cache_evidence"] for r in (first, second, killed)] == ["todisk"] * 3
