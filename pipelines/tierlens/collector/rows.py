"""file_access rows are built here, and only here: from the compiled loop's matrices to Arrow.

Columns are made whole (numpy -> Arrow) rather than row by row. Per-row Python objects exist
only for accesses on an XCache, which wait as dicts for the cache's file_close event
(:func:`set_cache` fills the cache fields, :func:`from_dicts` turns them back into a table).
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from ..records import FILE_ACCESS
from . import fstream as fs
from .wire import PfcFileClose

#: Column names in FILE_ACCESS order.
COLUMNS: tuple[str, ...] = tuple(FILE_ACCESS.names)
_REASONS = ("close", "disconnect")
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
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1,
                                 [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(data)])


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


def _lfns(rows: np.ndarray, arena: np.ndarray, override: list[str | None] | None) -> pa.Array:
    if override is not None:
        return pa.array([o if o is not None else arena[off:off + ln].tobytes().decode("utf-8", "replace")
                         for o, off, ln in zip(override, rows[fs.R_LFN_OFF].tolist(), rows[fs.R_LFN_LEN].tolist())],
                        type=pa.string())
    data, offs = fs.gather_lfns(arena, rows, rows.shape[1])
    arr = _strings_from(offs, data)
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:  # not UTF-8: decode each name with replacement characters
        raw = pa.Array.from_buffers(pa.binary(), rows.shape[1], [None, pa.py_buffer(offs), pa.py_buffer(data)])
        arr = pa.array([b.decode("utf-8", "replace") for b in raw.to_pylist()], type=pa.string())
    return arr


def _user_columns(users: tuple[list, np.ndarray]) -> dict[str, pa.Array]:
    objs, idx = users
    return {
        "client_host": take([u.host if u else None for u in objs], idx),
        "client_pid": take([u.pid if u else None for u in objs], idx, pa.int32()),
        "app_name": take([u.app if u else None for u in objs], idx),
        "job_identity": take([u.job_identity if u else None for u in objs], idx),
    }


def build(rows: np.ndarray, times: np.ndarray, arena: np.ndarray, users: tuple[list, np.ndarray],
          servers: list, reason: str | None, lfns: list[str | None] | None = None) -> pa.Table:
    """The loop's integer matrix (one row per ``fs.R_*`` field, a column per access) and time matrix -> a FILE_ACCESS
    table. ``reason`` None: ended by close records (``R_REASON``); else every row ended so.
    server_host and server_role are filled when the rows leave (:func:`with_servers`)."""
    n = rows.shape[1]
    # A copy: Arrow keeps these buffers without copying, and the loop reuses its matrix.
    cols = np.array(rows, order="C")
    rd, rv, wr = cols[fs.R_RD], cols[fs.R_RV], cols[fs.R_WR]
    nrd, nrv, nwr = cols[fs.R_NRD], cols[fs.R_NRV], cols[fs.R_NWR]
    has_ops = nrd >= 0
    offs, data, _ = _encoded([f"{s.stod}.{s.sid}." for s in servers])
    unique_id = _strings_from(*fs.unique_ids(offs, data, cols[fs.R_SRV], cols[fs.R_FID]))
    if reason is None:
        end_reason = take(list(_REASONS), cols[fs.R_REASON])
        close_seen = pa.array(np.ones(n, dtype=bool))
    else:
        end_reason = pa.array([reason] * n, type=pa.string())
        close_seen = pa.array(np.zeros(n, dtype=bool))
    null_str = pa.nulls(n, pa.string())
    null_int = pa.nulls(n, pa.int64())
    cols = {
        "server_host": null_str, "unique_id": unique_id, "server_role": null_str,
        "file_lfn": _lfns(rows, arena, lfns), "file_size_bytes": _numbers(cols[fs.R_SIZE]),
        "start_time": _times(times[:, fs.T_START]), "end_time": _times(times[:, fs.T_END]),
        "read_single_average_bytes": _average(rd, np.where(has_ops, nrd, 0)),
        "read_vector_average_bytes": _average(rv, np.where(has_ops, nrv, 0)),
        "write_average_bytes": _average(wr, np.where(has_ops, nwr, 0)),
        "read_bytes_at_close": _numbers(rd + rv), "write_bytes_at_close": _numbers(wr),
        "read_bytes": _numbers(rd), "readv_bytes": _numbers(rv), "write_bytes": _numbers(wr),
        "read_ops": _numbers(nrd, has_ops), "readv_ops": _numbers(nrv, has_ops), "write_ops": _numbers(nwr, has_ops),
        **_user_columns(users),
        "cache_hit_bytes": null_int, "cache_miss_bytes": null_int, "cache_bypass_bytes": null_int,
        "close_seen": close_seen, "end_reason": end_reason,
        "server_pid": pa.nulls(n, pa.int32()), "server_addr": null_str,
        "cache_attach_time": pa.nulls(n, _TS), "cache_detach_time": pa.nulls(n, _TS),
        "cache_access_count": null_int, "cache_remotes": null_str, "cache_blocks": null_int,
        "cache_blocks_done": null_int,
    }
    return pa.Table.from_arrays([cols[c] for c in COLUMNS], schema=FILE_ACCESS)


def with_servers(table: pa.Table, slots: np.ndarray, servers: list) -> pa.Table:
    """Fill the server columns from what is known of each server when the rows leave."""
    srv = servers  # few: index the values by server slot directly
    inv = slots
    for name, values, type_ in (("server_host", [s.name for s in srv], pa.string()),
                                ("server_role", [s.role for s in srv], pa.string()),
                                ("server_pid", [s.pid for s in srv], pa.int32()),
                                ("server_addr", [s.ip for s in srv], pa.string())):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, FILE_ACCESS.field(name), take(values, inv, type_))
    return table


def _ts(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, tz=timezone.utc) if t is not None else None


def set_cache(row: dict, ev: PfcFileClose, hit: int, miss: int, bypass: int) -> None:
    """The g-stream's word on one access of a waiting cache row (a dict in FILE_ACCESS names)."""
    row.update(cache_hit_bytes=hit, cache_miss_bytes=miss, cache_bypass_bytes=bypass,
               cache_attach_time=_ts(ev.attach_t), cache_detach_time=_ts(ev.detach_t),
               cache_access_count=ev.access_cnt,
               cache_remotes=",".join(ev.remotes) if ev.remotes is not None else None,
               cache_blocks=ev.n_blks, cache_blocks_done=ev.n_blks_done)


def from_dicts(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=FILE_ACCESS)
