"""file_access rows are built here, and only here: from the compiled loop's matrices to Arrow.

Columns are made whole (numpy -> Arrow) rather than row by row. Per-row Python objects exist
only for accesses on an XCache, which wait as dicts for the cache's file_close event
(:func:`set_cache` fills the cache fields, :func:`from_dicts` turns them back into a table).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from ..records import END_REASONS, FILE_ACCESS
from . import fstream as fs
from .wire import PfcFileClose

#: Column names in FILE_ACCESS order.
COLUMNS: tuple[str, ...] = tuple(FILE_ACCESS.names)
_TS = FILE_ACCESS.field("start_time").type


def _validity(valid: np.ndarray | None):
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _times(seconds: np.ndarray) -> pa.Array:
    us = (seconds * 1e6).round().astype(np.int64)
    return pa.Array.from_buffers(_TS, len(us), [None, pa.py_buffer(us)])


def _numbers(values: np.ndarray, valid: np.ndarray | None = None, type_=pa.int64()) -> pa.Array:
    values = np.asarray(values, dtype=type_.to_pandas_dtype())
    return pa.Array.from_buffers(type_, len(values), [_validity(valid), pa.py_buffer(values)])


def _average(total: np.ndarray, count: np.ndarray) -> pa.Array:
    ok = count > 0
    return _numbers(total / np.where(ok, count, 1), ok, pa.float64())


def _strings_from(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return pa.Array.from_buffers(
        pa.string(), len(offsets) - 1, [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _encoded(values: list[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Strings as Arrow-style offsets and bytes, with which are not None."""
    enc = [v.encode() if v is not None else b"" for v in values]
    offs = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in enc], out=offs[1:])
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return offs, np.frombuffer(b"".join(enc), dtype=np.uint8), valid


def take(values: list, idx: np.ndarray, type_=pa.string()) -> pa.Array:
    """``[values[i] for i in idx]`` as Arrow, for a few distinct values and many rows."""
    if type_ != pa.string():
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        arr = np.array([v if v is not None else 0 for v in values], dtype=type_.to_pandas_dtype())
        return _numbers(arr[idx], valid[idx], type_)
    offs, data, valid = _encoded(values)
    o, d = fs.take_strings(offs, data, idx)
    return _strings_from(o, d, valid[idx])


def _lfn_column(data: np.ndarray, offs: np.ndarray) -> pa.Array:
    arr = _strings_from(offs, data)
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:  # not UTF-8: decode each name with replacement characters
        raw = pa.Array.from_buffers(pa.binary(), len(offs) - 1, [None, pa.py_buffer(offs), pa.py_buffer(data)])
        arr = pa.array([b.decode("utf-8", "replace") for b in raw.to_pylist()], type=pa.string())
    return arr


def _user_columns(objs: list, idx: np.ndarray) -> dict[str, pa.Array]:
    return {
        "client_host": take([u.host if u else None for u in objs], idx),
        "client_pid": take([u.pid if u else None for u in objs], idx, pa.int32()),
        "app_name": take([u.app if u else None for u in objs], idx),
        "job_identity": take([u.job_identity if u else None for u in objs], idx),
    }


@dataclass
class Chunk:
    """Finished accesses as plain arrays, not yet Arrow: they are turned into a table when they
    leave (:func:`build`), many chunks at once, so a batch of one datagram costs little."""

    ints: np.ndarray  # (fs.R_COLS, n) int64: the loop's row fields
    times: np.ndarray  # (n, 2) float64: start, end (epoch seconds)
    lfn_data: np.ndarray  # uint8: the file names back to back
    lfn_offs: np.ndarray  # int32 [n + 1]
    users: list  # distinct logins (or None)
    user_idx: np.ndarray  # int64 [n]: index into users
    close_seen: np.ndarray  # bool [n]

    def __len__(self) -> int:
        return int(self.ints.shape[1])

    def select(self, mask: np.ndarray) -> Chunk:
        starts, ends = self.lfn_offs[:-1][mask], self.lfn_offs[1:][mask]
        data, offs = fs.concat_slices(self.lfn_data, starts.astype(np.int64), (ends - starts).astype(np.int64))
        return Chunk(
            np.ascontiguousarray(self.ints[:, mask]),
            self.times[mask],
            data,
            offs,
            self.users,
            self.user_idx[mask],
            self.close_seen[mask],
        )


def chunk(
    rows: np.ndarray,
    times: np.ndarray,
    arena: np.ndarray,
    users: tuple[list, np.ndarray],
    reason: str | None,
    lfns: list[str | None] | None = None,
) -> Chunk:
    """Copy the loop's output (its matrix is reused) into a Chunk. ``reason`` None: the rows
    ended by close records (``R_REASON``: close or forced close); else all ended so, unclosed."""
    n = rows.shape[1]
    ints = np.array(rows, order="C")
    if reason is None:
        close_seen = np.ones(n, dtype=bool)
    else:
        ints[fs.R_REASON] = END_REASONS.index(reason)
        close_seen = np.zeros(n, dtype=bool)
    if lfns is not None:  # some names came from path maps
        enc = [
            (o if o is not None else arena[off : off + ln].tobytes().decode("utf-8", "replace")).encode()
            for o, off, ln in zip(lfns, ints[fs.R_LFN_OFF].tolist(), ints[fs.R_LFN_LEN].tolist())
        ]
        offs = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(e) for e in enc], out=offs[1:])
        data = np.frombuffer(b"".join(enc), dtype=np.uint8)
    else:
        data, offs = fs.gather_lfns(arena, ints, n)
    return Chunk(ints, np.array(times), data, offs, users[0], users[1], close_seen)


def concat(chunks: list[Chunk]) -> Chunk:
    if len(chunks) == 1:
        return chunks[0]
    users: list = []
    seen: dict[int, int] = {}  # the same login in many chunks is listed once
    idx, data, offs = [], [], [np.zeros(1, dtype=np.int64)]
    base = 0
    for c in chunks:
        local = np.fromiter((seen.setdefault(id(u), len(seen)) for u in c.users), dtype=np.int64, count=len(c.users))
        users.extend(u for u in c.users if seen[id(u)] >= len(users))
        idx.append(local[c.user_idx] if len(local) else c.user_idx)
        data.append(c.lfn_data)
        offs.append(c.lfn_offs[1:].astype(np.int64) + base)
        base += int(c.lfn_offs[-1])
    return Chunk(
        np.concatenate([c.ints for c in chunks], axis=1),
        np.concatenate([c.times for c in chunks]),
        np.concatenate(data),
        np.concatenate(offs).astype(np.int32),
        users,
        np.concatenate(idx),
        np.concatenate([c.close_seen for c in chunks]),
    )


def build(c: Chunk, servers: list) -> pa.Table:
    """A Chunk -> a FILE_ACCESS table, server columns from what is known of each server now."""
    n = len(c)
    cols = c.ints
    rd, rv, wr = cols[fs.R_RD], cols[fs.R_RV], cols[fs.R_WR]
    nrd, nrv, nwr = cols[fs.R_NRD], cols[fs.R_NRV], cols[fs.R_NWR]
    has_ops = nrd >= 0
    slots = cols[fs.R_SRV]
    offs, data, _ = _encoded([f"{s.stod}.{s.sid}." for s in servers])
    null_str = pa.nulls(n, pa.string())
    null_int = pa.nulls(n, pa.int64())
    out = {
        "server_host": take([s.name for s in servers], slots),
        "unique_id": _strings_from(*fs.unique_ids(offs, data, slots, cols[fs.R_FID])),
        "server_role": take([s.role for s in servers], slots),
        "file_lfn": _lfn_column(c.lfn_data, c.lfn_offs),
        "file_size_bytes": _numbers(cols[fs.R_SIZE]),
        "start_time": _times(c.times[:, fs.T_START]),
        "end_time": _times(c.times[:, fs.T_END]),
        "read_single_average_bytes": _average(rd, np.where(has_ops, nrd, 0)),
        "read_vector_average_bytes": _average(rv, np.where(has_ops, nrv, 0)),
        "write_average_bytes": _average(wr, np.where(has_ops, nwr, 0)),
        "read_bytes_at_close": _numbers(rd + rv),
        "write_bytes_at_close": _numbers(wr),
        "read_bytes": _numbers(rd),
        "readv_bytes": _numbers(rv),
        "write_bytes": _numbers(wr),
        "read_ops": _numbers(nrd, has_ops),
        "readv_ops": _numbers(nrv, has_ops),
        "write_ops": _numbers(nwr, has_ops),
        **_user_columns(c.users, c.user_idx),
        "cache_hit_bytes": null_int,
        "cache_miss_bytes": null_int,
        "cache_bypass_bytes": null_int,
        "close_seen": pa.array(c.close_seen),
        "end_reason": take(list(END_REASONS), cols[fs.R_REASON]),
        "server_pid": take([s.pid for s in servers], slots, pa.int32()),
        "server_addr": take([s.ip for s in servers], slots),
        "cache_attach_time": pa.nulls(n, _TS),
        "cache_detach_time": pa.nulls(n, _TS),
        "cache_access_count": null_int,
        "cache_remotes": null_str,
        "cache_blocks": null_int,
        "cache_blocks_done": null_int,
        "cache_todisk_bytes": null_int,
        "cache_prefetch_bytes": null_int,
    }
    return pa.Table.from_arrays([out[name] for name in COLUMNS], schema=FILE_ACCESS)


def _ts(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, tz=timezone.utc) if t is not None else None


def set_cache(
    row: dict,
    ev: PfcFileClose,
    hit: int,
    miss: int,
    bypass: int,
    todisk: int | None = None,
    prefetch: int | None = None,
) -> None:
    """The g-stream's word on one access of a waiting cache row (a dict in FILE_ACCESS names)."""
    row.update(
        cache_hit_bytes=hit,
        cache_miss_bytes=miss,
        cache_bypass_bytes=bypass,
        cache_todisk_bytes=todisk,
        cache_prefetch_bytes=prefetch,
        cache_attach_time=_ts(ev.attach_t),
        cache_detach_time=_ts(ev.detach_t),
        cache_access_count=ev.access_cnt,
        cache_remotes=",".join(ev.remotes) if ev.remotes is not None else None,
        cache_blocks=ev.n_blks,
        cache_blocks_done=ev.n_blks_done,
    )


def from_dicts(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=FILE_ACCESS)
