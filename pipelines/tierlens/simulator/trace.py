"""Traces for the cache simulator: file accesses as dense integer arrays.

A :class:`Trace` holds one row per file access (an XRootD open→close), in time order:

* ``time``  float64 seconds since the epoch (UTC) of the open,
* ``obj``   int32 dense object id (file names dictionary-encoded once, 0..n_objects-1),
* ``size``  int64 bytes of the whole file (constant per object: the largest size seen),
* ``read``  int64 bytes the access read (partial reads: less than ``size``),
* ``job``   int32 dense job id (job_identity dictionary-encoded; -1 when unknown).

All byte quantities are int64 end to end, so files over 4 GiB never overflow.

Sources: the warehouse (``raw_file_access``), Parquet files of ``file_access`` records, and
libCacheSim ``oracleGeneral`` binary traces (24 bytes per request, little-endian, packed:
uint32 time, uint64 object id, uint32 size, int64 next-access vtime).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: One request of a libCacheSim oracleGeneral trace.
ORACLE_DTYPE = np.dtype([("time", "<u4"), ("obj", "<u8"), ("size", "<u4"), ("next", "<i8")])
assert ORACLE_DTYPE.itemsize == 24
UINT32_MAX = 2**32 - 1


@dataclass
class Trace:
    time: np.ndarray
    obj: np.ndarray
    size: np.ndarray
    read: np.ndarray
    job: np.ndarray
    names: list[str] | None = None  # object id -> file name, when known
    source: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.time = np.ascontiguousarray(self.time, dtype=np.float64)
        self.obj = np.ascontiguousarray(self.obj, dtype=np.int32)
        self.size = np.ascontiguousarray(self.size, dtype=np.int64)
        self.read = np.ascontiguousarray(self.read, dtype=np.int64)
        self.job = np.ascontiguousarray(self.job, dtype=np.int32)
        n = len(self.obj)
        if not (len(self.time) == len(self.size) == len(self.read) == len(self.job) == n):
            raise ValueError("trace arrays differ in length")

    def __len__(self) -> int:
        return len(self.obj)

    @property
    def n_objects(self) -> int:
        return int(self.obj.max()) + 1 if len(self.obj) else 0

    def whole_object(self) -> Trace:
        """The same trace with every access reading its whole file (libCacheSim's semantics)."""
        return Trace(
            self.time,
            self.obj,
            self.size,
            self.size.copy(),
            self.job,
            self.names,
            self.source,
            dict(self.info, whole_object=True),
        )

    def fingerprint(self) -> str:
        """A content hash, so a run is identified by its trace as well as its parameters."""
        import hashlib

        h = hashlib.sha256()
        for a in (self.time, self.obj, self.size, self.read, self.job):
            h.update(np.ascontiguousarray(a).view(np.uint8))
        return h.hexdigest()[:16]


def encode(names: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary-encode strings once: dense int32 ids in order of first appearance."""
    enc = pc.dictionary_encode(names)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.unify_dictionaries().combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
    ids = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    return ids, enc.dictionary.to_pylist()


def _int64(col: pa.ChunkedArray, fill: np.ndarray | int = -1) -> np.ndarray:
    arr = col.to_numpy(zero_copy_only=False)
    if arr.dtype == object or np.issubdtype(arr.dtype, np.floating):
        arr = np.where(pc.is_null(col).to_numpy(zero_copy_only=False), fill, np.nan_to_num(arr.astype(np.float64)))
    return np.asarray(arr, dtype=np.int64)


def from_table(table: pa.Table, source: str = "") -> Trace:
    """A trace from file_access rows (any column order; only the fields the simulator needs).

    Needs ``file_lfn`` and ``start_time``; uses ``file_size_bytes``, ``read_bytes_at_close``
    (else ``read_bytes`` + ``readv_bytes``) and ``job_identity`` when present. Rows are put in
    time order (stable, so equal times keep their input order).
    """
    n = table.num_rows
    t = table["start_time"]
    if pa.types.is_timestamp(t.type):
        secs = pc.cast(pc.cast(t, pa.timestamp("us")), pa.int64()).to_numpy(zero_copy_only=False) / 1e6
    else:
        secs = t.to_numpy(zero_copy_only=False).astype(np.float64)
    order = np.argsort(secs, kind="stable")
    table = table.take(pa.array(order))
    secs = secs[order]
    obj, names = encode(table["file_lfn"])
    size = _int64(table["file_size_bytes"]) if "file_size_bytes" in table.column_names else np.full(n, -1, np.int64)
    if "read_bytes_at_close" in table.column_names:
        read = _int64(table["read_bytes_at_close"])
    else:
        read = np.full(n, -1, np.int64)
    if "read_bytes" in table.column_names and "readv_bytes" in table.column_names:
        alt = np.maximum(_int64(table["read_bytes"], 0), 0) + np.maximum(_int64(table["readv_bytes"], 0), 0)
        read = np.where(read < 0, alt, read)
    # One size per object: the largest size (or, lacking any, the largest read) seen for it.
    n_obj = len(names)
    obj_size = np.full(n_obj, -1, np.int64)
    np.maximum.at(obj_size, obj, size)
    missing = obj_size < 0
    if missing.any():
        max_read = np.zeros(n_obj, np.int64)
        np.maximum.at(max_read, obj, np.maximum(read, 0))
        obj_size = np.where(missing, max_read, obj_size)
    obj_size = np.maximum(obj_size, 1)
    size = obj_size[obj]
    read = np.where(read < 0, size, read)
    if "job_identity" in table.column_names:
        jobs = table["job_identity"]
        job, _ = encode(pc.fill_null(jobs, ""))
        # the empty identity (unknown) becomes -1
        empty = pc.equal(pc.fill_null(jobs, ""), "").to_numpy(zero_copy_only=False)
        job = np.where(empty, -1, job).astype(np.int32)
    else:
        job = np.full(n, -1, np.int32)
    return Trace(secs, obj, size, read, job, names, source)


_COLUMNS = (
    "file_lfn",
    "file_size_bytes",
    "start_time",
    "read_bytes_at_close",
    "read_bytes",
    "readv_bytes",
    "job_identity",
)


def from_parquet(paths: list[Path]) -> Trace:
    import pyarrow.parquet as pq

    tables = []
    for p in paths:
        cols = [c for c in _COLUMNS if c in pq.read_schema(p).names]
        tables.append(pq.read_table(p, columns=cols))
    table = pa.concat_tables(tables, promote_options="default")
    return from_table(table, source=",".join(str(p) for p in paths))


#: An origin access that is an XCache filling itself: its client is a cache server (that cache's
#: host or monitoring address, and its server pid). Those reads follow from cache misses; they are
#: not demand, and replaying them beside the cache's own accesses would count the bytes twice.
_CACHE_FILL = (
    "EXISTS (SELECT 1 FROM raw_file_access AS c WHERE c.server_role = 'cache' "
    "AND c.server_pid = raw_file_access.client_pid AND (c.server_addr = raw_file_access.client_host "
    "OR lower(split_part(c.server_host, ':', 1)) = lower(raw_file_access.client_host)))"
)


def from_warehouse(
    con,
    server: str | None = None,
    role: str | None = None,
    start: str | None = None,
    end: str | None = None,
    include_cache_fills: bool = False,
) -> Trace:
    """File accesses from ``raw_file_access`` (optionally one server, one role, a time range),
    without the reads a cache made at an origin to fill itself unless ``include_cache_fills``."""
    where, params = [], []
    cols = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'raw_file_access'"
        ).fetchall()
    }
    if not include_cache_fills and "server_pid" in cols:
        where.append(f"NOT (client_pid IS NOT NULL AND {_CACHE_FILL})")
    for value, clause in (
        (server, "server_host = ?"),
        (role, "server_role = ?"),
        (start, "start_time >= CAST(? AS TIMESTAMPTZ)"),
        (end, "start_time < CAST(? AS TIMESTAMPTZ)"),
    ):
        if value:
            where.append(clause)
            params.append(value)
    sql = (
        "SELECT file_lfn, file_size_bytes, start_time, read_bytes_at_close, read_bytes, readv_bytes, "
        "job_identity FROM raw_file_access"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY start_time, server_host, unique_id"
    )
    cur = con.execute(sql, params)
    table = cur.to_arrow_table() if hasattr(cur, "to_arrow_table") else cur.fetch_arrow_table()
    return from_table(table, source="warehouse:raw_file_access")


def read_oracle(path: Path, size_unit: int = 1) -> Trace:
    """A libCacheSim oracleGeneral trace. Sizes are multiplied by ``size_unit`` (int64)."""
    rec = np.fromfile(path, dtype=ORACLE_DTYPE)
    obj, inverse = np.unique(rec["obj"], return_inverse=True)
    # dense ids in order of first appearance, like dictionary encoding
    first = np.full(len(obj), len(rec), np.int64)
    np.minimum.at(first, inverse, np.arange(len(rec)))
    rank = np.empty(len(obj), np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(len(obj), dtype=np.int32)
    dense = rank[inverse]
    size = rec["size"].astype(np.int64) * int(size_unit)
    # libCacheSim keeps the size of each request; tierlens keeps one size per object (the largest)
    obj_size = np.zeros(len(obj), np.int64)
    np.maximum.at(obj_size, dense, size)
    size = np.maximum(obj_size[dense], 1)
    names = [str(int(o)) for o in obj[np.argsort(rank)]]
    return Trace(
        rec["time"].astype(np.float64),
        dense,
        size,
        size.copy(),
        np.full(len(rec), -1, np.int32),
        names,
        str(path),
        {"whole_object": True},
    )


def next_access(obj: np.ndarray) -> np.ndarray:
    """Index of each request's next request for the same object, -1 when there is none."""
    from .kernels import next_access_kernel

    return next_access_kernel(np.ascontiguousarray(obj, dtype=np.int32), int(obj.max()) + 1 if len(obj) else 0)


def write_oracle(trace: Trace, path: Path, size_unit: int = 1) -> int:
    """Write ``trace`` as an oracleGeneral binary trace; returns the number of requests.

    Sizes are written in units of ``size_unit`` bytes (rounded up); a size that does not fit
    uint32 raises ValueError, naming how many requests overflow: pass e.g. ``size_unit=4096``.
    Times are whole seconds (uint32); next-access is the request index (vtime, 0-based) of the
    next request for the same object, -1 when there is none.
    """
    units = (trace.size + size_unit - 1) // size_unit
    over = int((units > UINT32_MAX).sum())
    if over:
        raise ValueError(
            f"{over} request(s) have sizes over {UINT32_MAX} units of {size_unit} B "
            f"(largest {int(trace.size.max()):,} B): use a larger size unit"
        )
    rec = np.empty(len(trace), dtype=ORACLE_DTYPE)
    rec["time"] = np.clip(np.floor(trace.time), 0, UINT32_MAX).astype(np.uint32)
    rec["obj"] = trace.obj.astype(np.uint64)
    rec["size"] = units.astype(np.uint32)
    rec["next"] = next_access(trace.obj)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    rec.tofile(tmp)
    tmp.replace(path)
    return len(rec)
