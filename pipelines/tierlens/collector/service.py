"""The collector: receiving workers fill journals; this process decodes them and commits batches.

Live (``listen``): N receiver processes (receiver.py) take datagrams off their sockets into
their own journal folders; this process reads the journals (merged in arrival order), feeds the
decoder, and every ``max_seconds`` (or ``max_rows``) **commits**: the file_access rows decoded so
far, the collector_stats rows of the interval and the quarantined packets, each written
atomically under the next generation number, then ``checkpoint.json`` (journal positions,
decoder snapshot, counters) replaced atomically. A restart discards files of generations past
the checkpoint and decodes the journal again from the checkpoint: nothing committed is lost and
no row is written twice.

Offline (``replay``): a tcpdump capture or a journal segment, through the same decoder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..durable import fsync_dir
from ..records import COLLECTOR_STATS, Batch, RecordKind
from . import journal as jr
from .datagrams import DatagramBatch
from .decoder import Decoder
from .listen import parse_listen
from .replay import batches as pcap_batches
from .snapshot import SnapshotError
from .writer import BatchWriter, write_atomic, write_text_atomic

CHECKPOINT = "checkpoint.json"
_GEN_RE = re.compile(r"^(?:file_access|collector_stats|quarantine)-g(\d{10})\.(?:parquet|jsonl)$")
_STATE_RE = re.compile(r"^checkpoint-g(\d{10})\.state$")
#: Datagrams handed to the decoder at once.
BATCH = 8192
#: Seconds of arrival time one journal may run ahead of another in one merged read.
MERGE_WINDOW = 0.05


@dataclass
class Options:
    out_dir: Path
    max_rows: int = 200_000
    max_seconds: float = 60.0
    unclosed_timeout: float = 24 * 3600.0
    cache_grace: float = 5.0
    warehouse: Path | None = None
    journal: Path | None = None  # default: <out_dir>/journal
    journal_retention: float = 3600.0  # seconds a consumed segment is kept
    segment_bytes: int = 64 << 20
    workers: int = 1
    allow: tuple[str, ...] = ()
    metrics: str | None = None  # HOST:PORT for Prometheus
    sync_every: float = 1.0  # journal fsync and counters period
    decoder_nice: int = 5  # the decoder yields the CPU to the receivers

    @property
    def journal_dir(self) -> Path:
        return Path(self.journal) if self.journal is not None else Path(self.out_dir) / "journal"


@dataclass
class RunResult:
    rows: int
    files: list[Path]
    stats: dict


@dataclass
class _Counts:
    datagrams: int = 0
    kernel_drops: int = 0
    sequence_gaps: int = 0
    disallowed: int = 0
    quarantined: int = 0
    pfc_unmatched: int = 0
    rows_written: int = 0
    unknown_records: int = 0
    #: unknown_records by kind (the unknown_kinds column)
    unknown: Counter = field(default_factory=Counter)


_COUNTS = tuple(f for f in _Counts.__dataclass_fields__ if f != "unknown")


def _kinds(c: Counter) -> str:
    return ";".join(f"{k}={n}" for k, n in sorted(c.items()) if n)


@dataclass
class Tally:
    """collector_stats of one interval: per worker (server '') and per (worker, server)."""

    start: float
    counts: dict[tuple[int, str], _Counts] = field(default_factory=lambda: defaultdict(_Counts))

    def table(self, host: str, end: float, workers: Iterable[int]) -> pa.Table:
        for w in workers:  # a socket-level row per worker even when nothing happened: coverage
            self.counts[(w, "")]  # noqa: B018
        keys = sorted(self.counts)
        cols = {f: [getattr(self.counts[k], f) for k in keys] for f in _COUNTS}
        n = len(keys)
        ts = pa.array(np.full(n, int(self.start * 1e6), dtype=np.int64)).cast(
            COLLECTOR_STATS.field("interval_start").type
        )
        te = pa.array(np.full(n, int(max(end, self.start) * 1e6), dtype=np.int64)).cast(
            COLLECTOR_STATS.field("interval_end").type
        )
        arrays = {
            "collector_host": pa.array([host] * n, pa.string()),
            "worker": pa.array([k[0] for k in keys], pa.int32()),
            "interval_start": ts,
            "interval_end": te,
            "server_host": pa.array([k[1] for k in keys], pa.string()),
            **{f: pa.array(v, pa.int64()) for f, v in cols.items()},
            "unknown_kinds": pa.array([_kinds(self.counts[k].unknown) for k in keys], pa.string()),
        }
        return pa.Table.from_arrays([arrays[f.name] for f in COLLECTOR_STATS], schema=COLLECTOR_STATS)


@dataclass
class Totals:
    """Counts since the out folder's first run (kept in the checkpoint)."""

    datagrams: int = 0
    kernel_drops: int = 0
    disallowed: int = 0
    #: socket inode -> the largest drop counter seen (the kernel's counters are cumulative)
    drops_seen: dict[str, int] = field(default_factory=dict)
    #: server instance "ip|sid|stod" -> [packets, lost] last accounted
    instances: dict[str, list[int]] = field(default_factory=dict)
    #: server_host -> worker whose journal carried its last datagrams
    server_worker: dict[str, int] = field(default_factory=dict)
    quarantined: int = 0
    pfc_unmatched: int = 0
    #: "server\tkind" -> unknown records last accounted (the decoder's counts are cumulative)
    unknown: dict[str, int] = field(default_factory=dict)


class Engine:
    """Decoder + writer + accounting; shared by the live collector and the replays."""

    def __init__(self, opts: Options, journaled: bool) -> None:
        self.opts = opts
        self.out = Path(opts.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.journaled = journaled
        self.host = socket.gethostname()
        self._wh = None
        self.writer = BatchWriter(self.out, opts.max_rows, opts.max_seconds)
        self.decoder = Decoder(
            self.writer.add, self._quarantine, unclosed_timeout=opts.unclosed_timeout, cache_grace=opts.cache_grace
        )
        self.totals = Totals()
        self._base = (0, 0)  # totals at the start of this run: the summary is per run
        self.tally = Tally(time.time())
        self.generation = 0
        self.positions: dict[int, jr.Position] = {}
        self.files: list[Path] = []
        self.stat_files: list[Path] = []
        self.rows_written = 0
        self.torn: list[str] = []
        self.workers: list[int] = [0]
        self.last_arrival = 0.0
        self._worker = 0
        self._stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self.stats_path = self.out / "collector-stats.json"

    # ---- accounting ----------------------------------------------------------------------
    def _quarantine(self, reason: str, addr: tuple, data: bytes, now: float) -> None:
        self.writer.quarantine(reason, addr, data, now)

    def account(self, worker: int) -> None:
        """Attribute what the decoder counted since the last call to ``worker``.

        Reads the decoder's counters (``quarantined``, ``stats``, ``server_stats()``: cumulative
        per server instance), which are not part of DatagramSink: a decoder without them gives
        socket-level collector_stats rows only."""
        d, t, c = self.decoder, self.totals, self.tally.counts
        q = sum(getattr(d, "quarantined", {}).values())
        if q != t.quarantined:
            c[(worker, "")].quarantined += q - t.quarantined
            t.quarantined = q
        u = getattr(d, "stats", {}).get("pfc_unmatched", 0)
        if u != t.pfc_unmatched:
            c[(worker, "")].pfc_unmatched += u - t.pfc_unmatched
            t.pfc_unmatched = u
        for s in d.server_stats() if hasattr(d, "server_stats") else ():
            key = f"{s['ip']}|{s['sid']}|{s['stod']}"
            prev = t.instances.get(key) or [0, 0]
            dp, dl = s["packets"] - prev[0], s["lost"] - prev[1]
            if dp or dl:
                cnt = c[(worker, s["server"])]
                cnt.datagrams += dp
                cnt.sequence_gaps += dl
                t.instances[key] = [s["packets"], s["lost"]]
                t.server_worker[s["server"]] = worker
        for (server, kind), n in (d.unknown_counts() if hasattr(d, "unknown_counts") else {}).items():
            key = f"{server}\t{kind}"
            prev = t.unknown.get(key, 0)
            if n > prev:
                cnt = c[(t.server_worker.get(server, worker), server)]
                cnt.unknown_records += n - prev
                cnt.unknown[kind] += n - prev
                t.unknown[key] = n
        if len(t.instances) > 4 * max(16, len(getattr(d, "servers", ()))):  # instances the decoder forgot
            live = {f"{s['ip']}|{s['sid']}|{s['stod']}" for s in d.server_stats()}
            t.instances = {k: v for k, v in t.instances.items() if k in live}

    def counters(self, records: list[jr.Counters]) -> None:
        t = self.totals
        for r in records:
            value = max(r.kernel_drops, r.proc_drops)
            key = str(r.inode)
            prev = t.drops_seen.get(key, 0)
            if value > prev:
                self.tally.counts[(r.worker, "")].kernel_drops += value - prev
                t.kernel_drops += value - prev
                t.drops_seen[key] = value
            if r.disallowed:
                self.tally.counts[(r.worker, "")].disallowed += r.disallowed
                t.disallowed += r.disallowed

    def feed(self, batch: DatagramBatch, worker: int) -> None:
        if len(batch):
            self.decoder.feed_batch(batch)
            self.tally.counts[(worker, "")].datagrams += len(batch)
            self.totals.datagrams += len(batch)
            self.last_arrival = max(self.last_arrival, float(batch.arrival[-1]))
            self.account(worker)

    def sweep(self, now: float) -> None:
        self.decoder.sweep(now)
        self.account(0)

    # ---- commit --------------------------------------------------------------------------
    def _name(self, kind: str, ext: str) -> str:
        if self.journaled:
            return f"{kind}-g{self.generation + 1:010d}.{ext}"
        return f"{kind}-{self._stamp}-{os.getpid()}-{self.generation + 1:06d}.{ext}"

    def commit(self, now: float | None = None) -> None:
        """Write the interval's rows, stats and quarantine, then the checkpoint (journaled)."""
        now = time.time() if now is None else now
        table = self.writer.take()
        if table.num_rows:
            path = self.out / self._name("file_access", "parquet")
            write_atomic(table, path)
            self.files.append(path)
            self.rows_written += table.num_rows
            hosts = table.column("server_host").to_pylist()
            for h in hosts:
                self.tally.counts[(self.totals.server_worker.get(h, 0), h)].rows_written += 1
            self._load(RecordKind.FILE_ACCESS, path, table)
        stats = self.tally.table(self.host, now, self.workers)
        spath = self.out / self._name("collector_stats", "parquet")
        write_atomic(stats, spath)
        self.stat_files.append(spath)
        self._load(RecordKind.COLLECTOR_STATS, spath, stats)
        self.writer.flush_quarantine(self._name("quarantine", "jsonl"))
        if self.journaled:
            self._checkpoint()
        self.generation += 1
        self.tally = Tally(now)

    def _load(self, kind: RecordKind, path: Path, table: pa.Table) -> None:
        if self.opts.warehouse is None:
            return
        from ..warehouse import Warehouse

        if self._wh is None:
            self._wh = Warehouse(self.opts.warehouse)
        self._wh.load(Batch(kind, table, f"xrootd-collector:{path}"))

    def _checkpoint(self) -> None:
        gen = self.generation + 1
        state = self.out / f"checkpoint-g{gen:010d}.state"
        fd = os.open(state, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        with os.fdopen(fd, "wb") as fh:
            fh.write(self.decoder.snapshot())
            fh.flush()
            os.fsync(fh.fileno())
        t = self.totals
        doc = {
            "generation": gen,
            "written_at": time.time(),
            "state": state.name,
            "positions": {str(w): [p.segment, p.offset] for w, p in self.positions.items()},
            "last_arrival": self.last_arrival,
            "rows_written": self.rows_written,
            "totals": t.__dict__,
        }
        write_text_atomic(json.dumps(doc), self.out / CHECKPOINT)
        fsync_dir(self.out)
        for p in self.out.iterdir():
            m = _STATE_RE.match(p.name)
            if m and int(m.group(1)) != gen:
                p.unlink(missing_ok=True)

    def resume(self) -> None:
        """Continue from the checkpoint, if any: uncommitted files go, the decoder is restored."""
        ck = self.out / CHECKPOINT
        doc = json.loads(ck.read_text()) if ck.exists() else None
        gen = doc["generation"] if doc else 0
        for p in self.out.iterdir():
            m = _GEN_RE.match(p.name)
            if (m and int(m.group(1)) > gen) or (p.name.startswith(".") and p.name.endswith(".tmp")):
                p.unlink(missing_ok=True)
        if doc is None:
            return
        self.generation = gen
        state = self.out / doc["state"]
        try:
            self.decoder.restore(state.read_bytes())
        except SnapshotError as e:
            # Refuse to start rather than decode without the open files: the checkpoint and the
            # journal after it stay as they are, for the tierlens that can read them.
            raise SystemExit(f"cannot resume the collector from {state}: {e}") from None
        self.positions = {int(w): jr.Position(*p) for w, p in doc["positions"].items()}
        self.last_arrival = doc.get("last_arrival", 0.0)
        self.rows_written = doc.get("rows_written", 0)
        self.totals = Totals(**doc["totals"])
        self._base = (self.totals.kernel_drops, self.totals.disallowed)

    # ---- stats ---------------------------------------------------------------------------
    def stats(self, state: str, extra: dict | None = None) -> dict:
        d = self.decoder
        s = {
            "state": state,
            "updated_at": time.time(),
            "packets": d.stats["packets"],
            "rows_emitted": d.stats["rows"],
            "rows_written": self.rows_written,
            "files": [str(p) for p in self.files[-100:]],
            "lost_packets": d.lost,
            "kernel_drops": int(self.totals.kernel_drops - self._base[0]),
            "disallowed": int(self.totals.disallowed - self._base[1]),
            "kernel_drops_since_first_run": int(self.totals.kernel_drops),
            "journal_backlog_bytes": 0,
            "journal_backlog_seconds": 0.0,
            "workers": len(self.workers),
            "journal_torn": list(self.torn),
            "generation": self.generation,
            "counters": dict(d.stats),
            "quarantined": dict(d.quarantined),
            "servers": d.server_stats(),
            "unknown": {f"{srv} {kind}": n for (srv, kind), n in sorted(d.unknown_counts().items())},
            "restored_snapshot_format": getattr(d, "restored_format", None),
        }
        if extra:
            s.update(extra)
        s["lossless"] = s["kernel_drops"] == 0 and s["lost_packets"] == 0 and not s["journal_torn"]
        return s

    def write_stats(self, state: str, extra: dict | None = None) -> dict:
        s = self.stats(state, extra)
        write_text_atomic(json.dumps(s, indent=1, default=str), self.stats_path)
        return s

    def close_warehouse(self) -> None:
        if self._wh is not None:
            self._wh.close()
            self._wh = None


# ---- offline ------------------------------------------------------------------------------


def replay(path: Path, opts: Options, port: int | None = None) -> RunResult:
    """Decode a capture (pcap/pcapng: capture times stand in for arrival times) or a journal
    segment offline; rows are written in batches of ``max_rows``."""
    eng = Engine(opts, journaled=False)
    last = 0.0

    def fed(batch: DatagramBatch, worker: int) -> None:
        nonlocal last
        eng.feed(batch, worker)
        if len(batch):
            last = float(batch.arrival[-1])
        if eng.writer.pending >= opts.max_rows:
            eng.commit(last)

    if jr.is_segment(path):
        with open(path, "rb") as fh:
            worker, _ = jr.read_segment_header(fh.read(jr.SEG_HEADER.size), path)
        eng.workers = [worker]
        for batch, counters, torn in jr.read_file(path):
            eng.counters(counters)
            eng.torn.extend(torn)
            fed(batch, worker)
    else:
        for batch in pcap_batches(path, port, BATCH):
            fed(batch, 0)
    eng.decoder.finish(last)
    eng.account(eng.workers[0])
    eng.commit(last)
    s = eng.write_stats("finished")
    eng.close_warehouse()
    return RunResult(eng.rows_written, eng.files, s)


# ---- live ---------------------------------------------------------------------------------


class Live:
    """Receivers + journal readers + the engine; see the module docstring."""

    def __init__(self, opts: Options, socks: list[socket.socket]) -> None:
        from .receiver import lock_folder

        self.opts = opts
        self.socks = socks
        self.addrs = [list(k.getsockname()[:2]) for k in socks]
        self.eng = Engine(opts, journaled=True)
        self.journal = opts.journal_dir
        self.journal.mkdir(parents=True, exist_ok=True)
        try:
            self._lock = lock_folder(self.journal, wait=0.0)  # one collector per journal
        except BlockingIOError:
            raise SystemExit(f"another collector is running on the journal {self.journal}") from None
        self.eng.resume()
        n = len(socks)
        old = [int(p.name[1:]) for p in self.journal.glob("w*") if p.name[1:].isdigit()]
        self.eng.workers = sorted(set(range(n)) | set(old))
        self.readers = {
            w: jr.WorkerReader(jr.worker_folder(self.journal, w), w, self.eng.positions.get(w))
            for w in self.eng.workers
        }
        self.procs: dict[int, subprocess.Popen] = {}
        self.restarts = 0
        self._received_base: dict[int, int] = {}  # datagrams of receivers that were restarted
        for w in range(n):
            self._seal(w)
            self.procs[w] = self._spawn(w)
        for w in set(self.eng.workers) - set(range(n)):
            self._seal(w)  # a journal left by a run with more workers: decode what it holds
        self.stop = False
        self._last_commit = time.monotonic()

    def _seal(self, w: int) -> None:
        from .receiver import lock_folder

        folder = jr.worker_folder(self.journal, w)
        fd = lock_folder(folder, wait=30.0)  # a receiver of a killed collector finishes first
        try:
            segs = jr.segments(folder)
            if segs:
                _, torn = jr.seal_segment(segs[-1][1])
                if torn:
                    self.eng.torn.append(torn)
        finally:
            os.close(fd)

    def _spawn(self, w: int) -> subprocess.Popen:
        from .receiver import STATUS, STATUS_FILE

        folder = jr.worker_folder(self.journal, w)
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / STATUS_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        try:
            os.write(fd, bytes(STATUS.size))  # zero until the receiver is up
        finally:
            os.close(fd)
        sock = self.socks[w]
        o = self.opts
        argv = [
            sys.executable,
            "-m",
            "tierlens.collector.receiver",
            "--fd",
            str(sock.fileno()),
            "--journal",
            str(self.journal),
            "--worker",
            str(w),
            "--segment-bytes",
            str(o.segment_bytes),
            "--sync-every",
            str(o.sync_every),
            "--parent",
            str(os.getpid()),
            "--after-segment",
            str(self.readers[w].pos.segment),
        ]
        for a in o.allow:
            argv += ["--allow", a]
        env = dict(os.environ)
        pkg = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return subprocess.Popen(argv, pass_fds=(sock.fileno(),), env=env)

    def _supervise(self) -> None:
        for w, p in list(self.procs.items()):
            if p.poll() is not None and not self.stop:
                # The socket is ours, so datagrams wait in the kernel while the worker restarts.
                from .receiver import read_status

                self.restarts += 1
                folder = jr.worker_folder(self.journal, w)
                st = read_status(folder)
                self._received_base[w] = self._received_base.get(w, 0) + (st[2] if st else 0)
                self._seal(w)
                self.procs[w] = self._spawn(w)

    def _wait_receivers(self, timeout: float = 120.0) -> None:
        """Until every receiver has its journal segment open (status written); datagrams wait
        in the socket meanwhile."""
        from .receiver import read_status

        deadline = time.monotonic() + timeout
        for w, p in self.procs.items():
            while not ((st := read_status(jr.worker_folder(self.journal, w))) and st[5] > 0):
                if p.poll() is not None:
                    raise SystemExit(f"receiving worker {w} exited with status {p.returncode}")
                if time.monotonic() > deadline:
                    raise SystemExit(f"receiving worker {w} did not start within {timeout:.0f} s")
                time.sleep(0.02)

    def pump(self, budget: float = 0.25) -> int:
        """Decode what the journals hold, oldest arrival first, for about ``budget`` seconds."""
        eng = self.eng
        t_end = time.monotonic() + budget
        done = 0
        while time.monotonic() < t_end:
            heads = sorted((t, w) for w, r in self.readers.items() if (t := r.next_arrival()) is not None)
            if not heads:
                break
            t0, w = heads[0]
            until = max(t0, (heads[1][0] if len(heads) > 1 else float("inf")) + MERGE_WINDOW)
            r = self.readers[w]
            before = (r.pos.segment, r.pos.offset)
            parsed = r.read(BATCH, until)
            if r.torn:
                eng.torn.extend(r.torn)
                r.torn.clear()
            eng.counters(parsed.counters)
            if parsed.items:
                eng.feed(jr.to_batch(parsed, f"{jr.segment_path(r.folder, r.pos.segment)}"), w)
                done += len(parsed.items)
            if eng.writer.pending >= self.opts.max_rows:
                self.commit()
            if (r.pos.segment, r.pos.offset) == before and not parsed.items:
                break
        return done

    def backlog(self) -> tuple[int, float]:
        from .receiver import read_status

        total = 0
        for w, r in self.readers.items():
            st = read_status(r.folder) if w in self.procs else None
            total += r.backlog_bytes((st[0], st[1]) if st else None)
        seconds = max(0.0, time.time() - self.eng.last_arrival) if total and self.eng.last_arrival else 0.0
        return total, seconds

    def commit(self) -> None:
        self.eng.positions = {w: r.pos for w, r in self.readers.items()}
        self.eng.commit()
        self._last_commit = time.monotonic()
        self._retain()

    def _retain(self) -> None:
        cutoff = time.time() - self.opts.journal_retention
        for r in self.readers.values():
            for number, path in jr.segments(r.folder):
                if number >= r.pos.segment:
                    break
                try:
                    if path.stat().st_mtime <= cutoff:
                        path.unlink()
                except FileNotFoundError:
                    pass

    def extra(self) -> dict:
        from .receiver import read_status

        b, s = self.backlog()
        received = {}
        for w in self.procs:
            st = read_status(jr.worker_folder(self.journal, w))
            received[str(w)] = (st[2] if st else 0) + self._received_base.get(w, 0)
        return {
            "journal_backlog_bytes": b,
            "journal_backlog_seconds": round(s, 3),
            "workers": len(self.socks),
            "receiver_restarts": self.restarts,
            "listening": self.addrs,
            "receivers": {str(w): p.pid for w, p in self.procs.items()},
            "received": received,
        }

    def run(
        self, ready: Callable | None = None, stats_every: float = 1.0, on_tick: Callable[[dict], None] | None = None
    ) -> RunResult:
        eng = self.eng
        self._wait_receivers()
        self.latest = eng.write_stats("listening", self.extra())
        if self.opts.metrics:
            from .metrics import serve

            self._metrics = serve(self.opts.metrics, lambda: self.latest)
        if ready is not None:
            ready(tuple(self.addrs[0]))
        next_tick = time.monotonic() + stats_every
        while not self.stop:
            done = self.pump()
            now = time.monotonic()
            if now >= next_tick:
                b, _ = self.backlog()
                if not b:
                    eng.sweep(time.time())  # caught up: wall clock drives the timeouts
                if eng.writer.due() or now - self._last_commit >= self.opts.max_seconds:
                    self.commit()
                s = self.latest = eng.write_stats("listening", self.extra())
                if on_tick is not None:
                    on_tick(s)
                self._supervise()
                next_tick = now + stats_every
            if not done and not self.stop:
                time.sleep(min(0.05, max(0.0, next_tick - time.monotonic())))
        return self.shutdown()

    def shutdown(self) -> RunResult:
        """Receivers drain and seal; the journal is decoded to its end; everything is written."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        for s in self.socks:
            s.close()
        while self.pump(budget=5.0):
            pass
        eng = self.eng
        eng.decoder.finish(time.time())
        eng.account(0)
        self.commit()
        s = self.latest = eng.write_stats("finished", self.extra())
        eng.close_warehouse()
        os.close(self._lock)
        if getattr(self, "_metrics", None) is not None:
            self._metrics[0].shutdown()
        return RunResult(eng.rows_written, eng.files, s)


def listen(
    spec: str | None, opts: Options, ready=None, stats_every: float = 1.0, on_tick: Callable[[dict], None] | None = None
) -> RunResult:
    """Collect until SIGTERM or SIGINT; then drain, decode the journal to its end, write all.
    Sockets come from systemd (LISTEN_FDS) when it passed any, else are bound to ``spec``."""
    from .receiver import open_sockets, systemd_sockets

    # Handlers first: resuming a long journal takes a while, and a stop asked for meanwhile must
    # still end in an orderly shutdown (exit 0), not the default death by SIGTERM.
    live: Live | None = None
    asked = False

    def _stop(signum, frame):  # noqa: ARG001
        nonlocal asked
        asked = True
        if live is not None:
            live.stop = True

    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        socks = systemd_sockets()
        if socks is None:
            host, port = parse_listen(spec or "127.0.0.1:9930")
            socks = open_sockets(host, port, max(1, opts.workers))
        live = Live(opts, socks)
        live.stop = live.stop or asked
        if opts.decoder_nice:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + opts.decoder_nice)
            except OSError:
                pass
        return live.run(ready, stats_every, on_tick)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
