"""Ingest benchmark: tierlens' Warehouse.load against DuckDB's own Parquet import.

    .venv/bin/python bench/ingest_bench.py                      # 1 M jobs, 10 M file accesses
    .venv/bin/python bench/ingest_bench.py --jobs 100000 --accesses 1000000

The input is generated once (seeded, vectorised) into bench/out/ as Parquet files of at most
1 M rows each and reused while its size matches. Each measurement then runs in its own
subprocess, into a fresh DuckDB file, so its peak RSS (from wait4) is its own:

* floor:    ``CREATE TABLE t AS SELECT * FROM read_parquet(...)``, the fastest way DuckDB itself
            gets the same files into a database file;
* tierlens: each Parquet file read with pyarrow in bounded batches, wrapped as a ``Batch`` and
            handed to ``Warehouse.load`` (validation, rejects, in-batch dedup, upsert by natural
            key, one transaction per batch);
* tierlens-parquet: the same checks and upsert, each file handed over whole as a
            ``ParquetFileBatch`` and read by DuckDB's Parquet reader (``tierlens load``'s path).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tierlens.records import FILE_ACCESS, JOB, Batch, RecordKind
from tierlens.warehouse import Warehouse

OUT = Path(__file__).resolve().parent / "out"
FILE_ROWS = 1_000_000
BATCH_ROWS = 1_000_000
SEED = 20240501
EPOCH_US = 1_714_521_600_000_000  # 2024-05-01T00:00:00Z
DAYS = 30
DAY_US = 86_400 * 1_000_000


# ----------------------------------------------------------------------------- generation


def _strings(prefix: str, numbers: np.ndarray) -> pa.Array:
    """prefix + decimal number, without a Python loop."""
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def _pick(pool: pa.Array, rng: np.random.Generator, n: int) -> pa.Array:
    return pool.take(pa.array(rng.integers(0, len(pool), n)))


def _timestamps(us: np.ndarray) -> pa.Array:
    return pa.array(us.astype("datetime64[us]"), pa.timestamp("us", tz="UTC"))


def job_table(first: int, n: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(first, first + n)
    htcondor = rng.random(n) < 0.3
    batch_system = pc.if_else(pa.array(htcondor), "htcondor", "slurm")
    cluster = pc.if_else(pa.array(htcondor), "ce01.example.org", "t2example")
    job_id = _strings("", ids)
    identity = pc.binary_join_element_wise(batch_system, cluster, job_id, ".")
    nodes = _strings("wn", np.arange(400))
    node = _pick(nodes, rng, n)
    users = _strings("user", np.arange(300))
    vos = pa.array(["atlas", "cms", "lhcb", "alice"])
    vo_idx = pa.array(rng.integers(0, 4, n))
    cores = rng.choice(np.array([1, 4, 8], dtype=np.int32), n, p=[0.3, 0.2, 0.5])
    start = EPOCH_US + rng.integers(0, DAYS * DAY_US, n)
    wall_s = rng.gamma(2.0, 3600.0, n)
    submit = start - rng.integers(0, 3_600_000_000, n)
    end = start + (wall_s * 1e6).astype(np.int64)
    eff = rng.beta(8, 2, n)
    cpu = wall_s * cores * eff
    running = rng.random(n) < 0.01
    states = pa.array(["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"]).take(
        pa.array(rng.choice(4, n, p=[0.9, 0.06, 0.03, 0.01]))
    )
    columns = {
        "batch_system": batch_system,
        "cluster": cluster,
        "job_id": job_id,
        "step_id": pa.array([""] * 1).take(pa.array(np.zeros(n, dtype=np.int64))),
        "job_identity": identity,
        "user_name": _pick(users, rng, n),
        "account": vos.take(vo_idx),
        "vo": vos.take(vo_idx),
        "job_class": pa.array(["analysis", "production"]).take(pa.array(rng.integers(0, 2, n))),
        "partition": pa.array(["grid", "long", "short"]).take(pa.array(rng.integers(0, 3, n))),
        "node": node,
        "node_list": node,
        "submit_time": _timestamps(submit),
        "start_time": _timestamps(start),
        "end_time": pc.if_else(pa.array(running), pa.scalar(None, JOB.field("end_time").type), _timestamps(end)),
        "allocated_cores": pa.array(cores),
        "cpu_user_seconds": pa.array(cpu * 0.95),
        "cpu_system_seconds": pa.array(cpu * 0.05),
        "wall_seconds": pa.array(wall_s),
        "state": states,
        "exit_code": pa.array(np.where(rng.random(n) < 0.93, 0, 1).astype(np.int32)),
        "bytes_read": pa.array(rng.integers(0, 50 << 30, n)),
        "bytes_written": pa.array(rng.integers(0, 5 << 30, n)),
    }
    return pa.table(columns).cast(JOB)


def file_access_table(first: int, n: int, rng: np.random.Generator) -> pa.Table:
    servers = pa.array(
        [f"xrootd{i:02d}.example.org" for i in range(16)] + [f"xcache{i:02d}.example.org" for i in range(4)]
    )
    server_idx = rng.integers(0, len(servers), n)
    is_cache = server_idx >= 16
    # The collector's unique id is '<server start time, hex>.<file dict id>': unique per server.
    unique_id = _strings("6631f2a0.", np.arange(first, first + n))
    lfns = pc.binary_join_element_wise(
        "/store/mc/Run3/dataset",
        pc.cast(pa.array(np.arange(200_000) // 100), pa.string()),
        "/file",
        pc.cast(pa.array(np.arange(200_000)), pa.string()),
        ".root",
        "",
    )
    lfn_idx = np.minimum(rng.zipf(1.3, n) - 1, len(lfns) - 1)
    size = rng.integers(100 << 20, 4 << 30, n)
    start = EPOCH_US + rng.integers(0, DAYS * DAY_US, n)
    end = start + rng.integers(1_000_000, 7_200_000_000, n)
    read_ops = rng.integers(0, 5000, n)
    readv_ops = rng.integers(0, 500, n)
    read_b = read_ops * rng.integers(4096, 1 << 20, n)
    readv_b = readv_ops * rng.integers(1 << 16, 8 << 20, n)
    total = read_b + readv_b
    hit = (total * rng.random(n)).astype(np.int64)
    no_cache = pa.array(~is_cache)
    null64 = pa.scalar(None, pa.int64())
    jobs = rng.integers(0, 1_000_000, n)
    closed = pa.array(rng.random(n) < 0.995)
    columns = {
        "server_host": servers.take(pa.array(server_idx)),
        "unique_id": unique_id,
        "server_role": pc.if_else(pa.array(is_cache), "cache", "origin"),
        "file_lfn": lfns.take(pa.array(lfn_idx)),
        "file_size_bytes": pa.array(size),
        "start_time": _timestamps(start),
        "end_time": _timestamps(end),
        "read_single_average_bytes": pa.array(np.where(read_ops > 0, read_b / np.maximum(read_ops, 1), 0.0)),
        "read_vector_average_bytes": pa.array(np.where(readv_ops > 0, readv_b / np.maximum(readv_ops, 1), 0.0)),
        "write_average_bytes": pa.array(np.zeros(n)),
        "read_bytes_at_close": pa.array(total),
        "write_bytes_at_close": pa.array(np.zeros(n, dtype=np.int64)),
        "read_bytes": pa.array(read_b),
        "readv_bytes": pa.array(readv_b),
        "write_bytes": pa.array(np.zeros(n, dtype=np.int64)),
        "read_ops": pa.array(read_ops),
        "readv_ops": pa.array(readv_ops),
        "write_ops": pa.array(np.zeros(n, dtype=np.int64)),
        "client_host": _strings("wn", rng.integers(0, 400, n)),
        "client_pid": pa.array(rng.integers(1000, 4_000_000, n).astype(np.int32)),
        "app_name": pa.array(["cmsRun", "athena", "xrdcp"]).take(pa.array(rng.integers(0, 3, n))),
        "job_identity": pc.binary_join_element_wise(
            pa.array(["slurm.t2example."] * 1).take(pa.array(np.zeros(n, dtype=np.int64))), _strings("", jobs), ""
        ),
        "cache_hit_bytes": pc.if_else(no_cache, null64, pa.array(hit)),
        "cache_miss_bytes": pc.if_else(no_cache, null64, pa.array(total - hit)),
        "cache_bypass_bytes": pc.if_else(no_cache, null64, pa.array(np.zeros(n, dtype=np.int64))),
        "close_seen": closed,
        # What the collector fills since schema version 4: how the access ended, the server's
        # identity, and the XCache g-stream figures on cache servers only.
        "end_reason": pc.if_else(closed, "close", "disconnect"),
        "server_pid": pa.array((20_000 + server_idx).astype(np.int32)),
        "server_addr": _strings("10.1.0.", server_idx),
        "cache_attach_time": pc.if_else(no_cache, pa.scalar(None, pa.timestamp("us", "UTC")), _timestamps(start)),
        "cache_detach_time": pc.if_else(no_cache, pa.scalar(None, pa.timestamp("us", "UTC")), _timestamps(end)),
        "cache_access_count": pc.if_else(no_cache, null64, pa.array(rng.integers(1, 50, n))),
        "cache_remotes": pc.if_else(no_cache, pa.scalar(None, pa.string()), "origin01.example.org"),
        "cache_blocks": pc.if_else(no_cache, null64, pa.array(size >> 20)),
        "cache_blocks_done": pc.if_else(no_cache, null64, pa.array(size >> 20)),
    }
    return pa.table(columns).cast(FILE_ACCESS)


@dataclass(frozen=True)
class Dataset:
    kind: RecordKind
    files: tuple[Path, ...]
    rows: int


def _generate(kind: RecordKind, rows: int, seed: int) -> Dataset:
    make = job_table if kind is RecordKind.JOB else file_access_table
    # One folder per size, so switching between a quick and a full run does not regenerate.
    folder = OUT / "input" / f"{kind.value}-{rows}"
    stamp = folder / "ROWS"
    files = tuple(folder / f"part-{i:03d}.parquet" for i in range((rows + FILE_ROWS - 1) // FILE_ROWS))
    if stamp.exists() and stamp.read_text() == str(rows) and all(f.exists() for f in files):
        return Dataset(kind, files, rows)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for i, path in enumerate(files):
        first = i * FILE_ROWS
        pq.write_table(make(first, min(FILE_ROWS, rows - first), rng), path, row_group_size=122_880)
    stamp.write_text(str(rows))
    return Dataset(kind, files, rows)


def generate(jobs: int, accesses: int) -> list[Dataset]:
    return [_generate(RecordKind.JOB, jobs, SEED), _generate(RecordKind.FILE_ACCESS, accesses, SEED + 1)]


# ----------------------------------------------------------------------------- measurements
# Each runs in a child process (``_child``) that prints one JSON line; the parent takes the
# child's peak RSS from wait4 so no measurement inherits another's high-water mark.


def measure_floor(datasets: list[Dataset], db: Path, preserve_order: bool = True) -> dict[str, float]:
    con = duckdb.connect(str(db))
    con.execute(f"SET preserve_insertion_order = {str(preserve_order).lower()}")
    for ds in datasets:
        files = ", ".join(f"'{f}'" for f in ds.files)
        con.execute(f"CREATE TABLE raw_{ds.kind.value} AS SELECT * FROM read_parquet([{files}])")
    con.close()
    return {}


def measure_floor_unordered(datasets: list[Dataset], db: Path) -> dict[str, float]:
    return measure_floor(datasets, db, preserve_order=False)


class _StepTimes(logging.Handler):
    """Sums the loader's per-step debug timings (probe, delete, insert, ...) for the report."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        _kind, _source, step, seconds = record.args  # type: ignore[misc]
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds


@dataclass
class _Clock:
    seconds: float = 0.0


def _batches(datasets: list[Dataset], reading: _Clock) -> Iterator[Batch]:
    """Each file in bounded batches, as tierlens.pipeline.parquet_batches reads them."""
    for ds in datasets:
        for path in ds.files:
            first = 0
            started = time.perf_counter()
            for rb in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
                batch = Batch(ds.kind, pa.Table.from_batches([rb]), f"parquet:{path.name}", row_offset=first)
                first += rb.num_rows
                reading.seconds += time.perf_counter() - started
                yield batch
                started = time.perf_counter()


def measure_tierlens(datasets: list[Dataset], db: Path, prefetch: bool = False) -> dict[str, float]:
    steps = _StepTimes()
    logger = logging.getLogger("tierlens.warehouse.core")
    logger.addHandler(steps)
    logger.setLevel(logging.DEBUG)
    reading = _Clock()
    with Warehouse(db) as wh:
        wh.load_many(_batches(datasets, reading), prefetch=prefetch)
    # With prefetch the reading overlaps the loading, so the steps add up to more than the total.
    return {"read parquet": reading.seconds, **steps.seconds}


def measure_tierlens_prefetch(datasets: list[Dataset], db: Path) -> dict[str, float]:
    return measure_tierlens(datasets, db, prefetch=True)


def measure_tierlens_parquet(datasets: list[Dataset], db: Path) -> dict[str, float]:
    """`tierlens load`'s path: a file in the record's exact schema is read by DuckDB itself."""
    from tierlens.pipeline import parquet_batches

    steps = _StepTimes()
    logger = logging.getLogger("tierlens.warehouse.core")
    logger.addHandler(steps)
    logger.setLevel(logging.DEBUG)
    with Warehouse(db) as wh:
        for ds in datasets:
            wh.load_many(parquet_batches(ds.kind, ds.files, rows=FILE_ROWS, direct=True))
    return steps.seconds


MEASUREMENTS = {
    "floor": measure_floor,
    "floor-unordered": measure_floor_unordered,
    "tierlens": measure_tierlens,
    "tierlens-prefetch": measure_tierlens_prefetch,
    "tierlens-parquet": measure_tierlens_parquet,
}


@dataclass(frozen=True)
class Figure:
    name: str
    rows: int
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    db_mib: float
    steps: dict[str, float]
    load_1min: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


def _child(name: str, datasets_json: str, db: str) -> None:
    datasets = [
        Dataset(RecordKind(d["kind"]), tuple(Path(f) for f in d["files"]), d["rows"]) for d in json.loads(datasets_json)
    ]
    storage = os.environ.get("TIERLENS_BENCH_STORAGE")
    if storage:
        # a newer DuckDB writing a file an older one reads: the version is fixed when the file
        # is created, and later connections keep it
        duckdb.connect(db, config={"storage_compatibility_version": storage}).close()
    started = time.perf_counter()
    steps = MEASUREMENTS[name](datasets, Path(db))
    print(json.dumps({"seconds": time.perf_counter() - started, "steps": steps}))


@dataclass(frozen=True)
class Interpreter:
    """A Python to run the measurements with, e.g. one whose duckdb is another version."""

    label: str
    python: str
    storage: str | None = None

    @staticmethod
    def parse(spec: str) -> Interpreter:
        """'PATH' or 'PATH@STORAGE' (STORAGE: a storage_compatibility_version, e.g. v1.5.0)."""
        python, _, storage = spec.partition("@")
        version = subprocess.run(
            [python, "-c", "import duckdb; print(duckdb.__version__)"], capture_output=True, text=True, check=True
        ).stdout.strip()
        return Interpreter(f"duckdb {version}" + (f", storage {storage}" if storage else ""), python, storage or None)


def run(name: str, datasets: list[Dataset], interpreter: Interpreter | None = None) -> Figure:
    label = name if interpreter is None else f"{name} [{interpreter.label}]"
    db = OUT / f"{name}.duckdb"
    for stale in (db, db.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    payload = json.dumps([{"kind": d.kind.value, "files": [str(f) for f in d.files], "rows": d.rows} for d in datasets])
    env = dict(os.environ)
    env.pop("TIERLENS_BENCH_STORAGE", None)
    if interpreter is not None and interpreter.storage:
        env["TIERLENS_BENCH_STORAGE"] = interpreter.storage
    python = interpreter.python if interpreter is not None else sys.executable
    proc = subprocess.Popen(
        [python, __file__, "--child", name, payload, str(db)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    # wait4 gives this child's own rusage; RUSAGE_CHILDREN would be the max over all children.
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{name} measurement failed with exit code {proc.returncode}")
    report = json.loads(out.strip().splitlines()[-1])
    rows = sum(d.rows for d in datasets)
    size = db.stat().st_size / 2**20
    db.unlink()
    # CPU time (user + system of the child) is the figure to trust on a shared machine: other
    # processes stretch wall time but hardly the work this measurement does.
    cpu = usage.ru_utime + usage.ru_stime
    return Figure(
        label, rows, report["seconds"], cpu, usage.ru_maxrss / 1024, size, report["steps"], os.getloadavg()[0]
    )


def _print(best: Figure, runs: list[Figure]) -> None:
    line = (
        f"{best.name:15s} {best.seconds:7.2f} s  {best.rows_per_s / 1e6:5.2f} M rows/s  "
        f"cpu {best.cpu_seconds:6.1f} s  "
        f"peak RSS {best.peak_rss_mib:6.0f} MiB  db {best.db_mib:5.0f} MiB  load {best.load_1min:.1f}"
    )
    if len(runs) > 1:
        line += f"  (runs: {', '.join(f'{r.seconds:.2f}' for r in runs)} s)"
    print(line)
    if best.steps:
        print(" " * 16 + "of which: " + ", ".join(f"{k} {v:.2f} s" for k, v in best.steps.items()))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--accesses", type=int, default=10_000_000)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds; measurements alternate within a round and the best is kept"
    )
    parser.add_argument(
        "--only", choices=sorted(MEASUREMENTS), action="append", help="run only this measurement (repeatable)"
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATH[@STORAGE]",
        help="also run every measurement with this interpreter (another duckdb), "
        "creating its files with storage_compatibility_version STORAGE (repeatable)",
    )
    args = parser.parse_args()
    others = [Interpreter.parse(p) for p in args.python]

    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    datasets = generate(args.jobs, args.accesses)
    print(
        f"input: {args.jobs:,} job rows, {args.accesses:,} file_access rows "
        f"({time.perf_counter() - t0:.1f} s to generate or check) in {OUT / 'input'}"
    )
    names = args.only or list(MEASUREMENTS)
    interpreters: list[Interpreter | None] = [None, *others]
    # Alternating the measurements (and interpreters) spreads background load over all of them.
    runs: dict[str, list[Figure]] = {}
    for _ in range(args.repeat):
        for interpreter in interpreters:
            for name in names:
                fig = run(name, datasets, interpreter)
                runs.setdefault(fig.name, []).append(fig)
    best = {label: min(figs, key=lambda f: f.seconds) for label, figs in runs.items()}
    for label in runs:
        _print(best[label], runs[label])
    for interpreter in interpreters:
        suffix = "" if interpreter is None else f" [{interpreter.label}]"
        for ours in ("tierlens", "tierlens-prefetch", "tierlens-parquet"):
            for floor in ("floor", "floor-unordered"):
                if ours + suffix in best and floor + suffix in best:
                    t, f = best[ours + suffix], best[floor + suffix]
                    print(
                        f"ratio {ours}/{floor}{suffix}: {t.seconds / f.seconds:.2f}x wall, "
                        f"{t.cpu_seconds / f.cpu_seconds:.2f}x cpu (best of {len(runs[ours + suffix])})"
                    )
    (OUT / "last.json").write_text(json.dumps({k: asdict(v) for k, v in best.items()}, indent=1))


if __name__ == "__main__":
    main()
