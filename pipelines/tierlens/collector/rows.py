"""file_access rows are built here, and only here: from the compiled loop's matrices to Arrow.

Columns are made whole (numpy -> Arrow) rather than row by row. Per-row Python objects exist
only for accesses on an XCache, which wait as dicts for the cache's file_close event
(:func:`set_cache` fills the cache fields, :func:`from_dicts` turns them back into a table).
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..records import FILE_ACCESS
from . import fstream as fs
from .wire import PfcFileClose

#: Column names in FILE_ACCESS order.
COLUMNS: tuple[str, ...] = tuple(FILE_ACCESS.names)
_REASONS = ("close", "disconnect")
_TS = FILE_ACCESS.field("start_time").type


def _times(seconds: np.ndarray) -> pa.Array:
    return pa.array((seconds * 1e6).round().astype(np.int64), type=pa.int64()).cast(_TS)


def _opt_int(values: np.ndarray, valid: np.ndarray, type_=pa.int64()) -> pa.Array:
    return pa.array(values, type=type_, mask=~valid)


def _average(total: np.ndarray, count: np.ndarray) -> pa.Array:
    ok = count > 0
    return pa.array(np.divide(total, np.where(ok, count, 1), dtype=np.float64), mask=~ok)


def _lfns(rows: np.ndarray, arena: np.ndarray, override: list[str | None] | None) -> pa.Array:
    if override is not None:
        return pa.array([o if o is not None else arena[int(r[fs.R_LFN_OFF]):int(r[fs.R_LFN_OFF] + r[fs.R_LFN_LEN])]
                         .tobytes().decode("utf-8", "replace") for o, r in zip(override, rows)], type=pa.string())
    data, offs = fs.gather_lfns(arena, rows, len(rows))
    arr = pa.Array.from_buffers(pa.string(), len(rows), [None, pa.py_buffer(offs), pa.py_buffer(data)])
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:  # not UTF-8: decode each name with replacement characters
        raw = pa.Array.from_buffers(pa.binary(), len(rows), [None, pa.py_buffer(offs), pa.py_buffer(data)])
        arr = pa.array([b.decode("utf-8", "replace") for b in raw.to_pylist()], type=pa.string())
    return arr


def _user_columns(users: tuple[list, np.ndarray]) -> dict[str, pa.Array]:
    objs, idx = users
    take = pa.array(idx, type=pa.int64())
    return {
        "client_host": pa.array([u.host if u else None for u in objs], type=pa.string()).take(take),
        "client_pid": pa.array([u.pid if u else None for u in objs], type=pa.int32()).take(take),
        "app_name": pa.array([u.app if u else None for u in objs], type=pa.string()).take(take),
        "job_identity": pa.array([u.job_identity if u else None for u in objs], type=pa.string()).take(take),
    }


def build(rows: np.ndarray, times: np.ndarray, arena: np.ndarray, users: tuple[list, np.ndarray],
          servers: list, reason: str | None, lfns: list[str | None] | None = None) -> pa.Table:
    """Rows of the loop's integer matrix (``fs.R_*`` columns) and time matrix -> a FILE_ACCESS
    table. ``reason`` None: ended by close records (``R_REASON``); else every row ended so.
    server_host and server_role are filled when the rows leave (:func:`with_servers`)."""
    n = len(rows)
    rd, rv, wr = rows[:, fs.R_RD], rows[:, fs.R_RV], rows[:, fs.R_WR]
    nrd, nrv, nwr = rows[:, fs.R_NRD], rows[:, fs.R_NRV], rows[:, fs.R_NWR]
    has_ops = nrd >= 0
    slots = rows[:, fs.R_SRV]
    uniq, inv = np.unique(slots, return_inverse=True)
    prefix = pa.array([f"{servers[s].stod}.{servers[s].sid}." for s in uniq.tolist()], type=pa.string())
    unique_id = pc.binary_join_element_wise(prefix.take(pa.array(inv)),
                                            pa.array(rows[:, fs.R_FID]).cast(pa.string()), "")
    if reason is None:
        end_reason = pa.array(np.array(_REASONS, dtype=object)[rows[:, fs.R_REASON]], type=pa.string())
        close_seen = pa.array(np.ones(n, dtype=bool))
    else:
        end_reason = pa.array([reason] * n, type=pa.string())
        close_seen = pa.array(np.zeros(n, dtype=bool))
    null_str = pa.nulls(n, pa.string())
    null_int = pa.nulls(n, pa.int64())
    cols = {
        "server_host": null_str, "unique_id": unique_id, "server_role": null_str,
        "file_lfn": _lfns(rows, arena, lfns), "file_size_bytes": pa.array(rows[:, fs.R_SIZE]),
        "start_time": _times(times[:, fs.T_START]), "end_time": _times(times[:, fs.T_END]),
        "read_single_average_bytes": _average(rd, np.where(has_ops, nrd, 0)),
        "read_vector_average_bytes": _average(rv, np.where(has_ops, nrv, 0)),
        "write_average_bytes": _average(wr, np.where(has_ops, nwr, 0)),
        "read_bytes_at_close": pa.array(rd + rv), "write_bytes_at_close": pa.array(wr),
        "read_bytes": pa.array(rd), "readv_bytes": pa.array(rv), "write_bytes": pa.array(wr),
        "read_ops": _opt_int(nrd, has_ops), "readv_ops": _opt_int(nrv, has_ops), "write_ops": _opt_int(nwr, has_ops),
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
    uniq, inv = np.unique(slots, return_inverse=True)
    take = pa.array(inv)
    srv = [servers[s] for s in uniq.tolist()]
    for name, values, type_ in (("server_host", [s.name for s in srv], pa.string()),
                                ("server_role", [s.role for s in srv], pa.string()),
                                ("server_pid", [s.pid for s in srv], pa.int32()),
                                ("server_addr", [s.ip for s in srv], pa.string())):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, FILE_ACCESS.field(name), pa.array(values, type=type_).take(take))
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
