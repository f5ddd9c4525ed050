"""Import file-close records produced by the OSG XRootD monitoring collector.

The OSG collector (opensciencegrid/xrootd-monitoring-collector) publishes one JSON object per
file close with its own field names: ``start_time``/``end_time`` in milliseconds since the
epoch, ``filename``, ``filesize``, ``read``/``readv``/``write`` bytes, ``read_single_operations``,
``read_vector_operations``, ``write_operations``, the averages, ``read_bytes_at_close``,
``write_bytes_at_close``, ``host`` (the client), ``server_hostname``/``server_ip``/``server``,
``serverID``, ``user``, ``appinfo``. Files may hold one object per line (JSON Lines), or a JSON
array. Its records have no client pid and no job identity; they join to jobs only by inference.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from ..records import Batch, RecordKind, Reject
from .rows import COLUMNS
from .writer import rows_to_table


class BadField(ValueError):
    """A field of an OSG record whose value is not of its type; names the OSG field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


def _number(rec: dict, key: str, cast):
    v = rec.get(key)
    if v is None or v == "":
        return None
    try:
        if isinstance(v, (bool, list, dict)):
            raise TypeError(type(v).__name__)
        return cast(v)
    except (ValueError, TypeError) as e:
        raise BadField(
            key,
            f"{key} = {v!r} is not a number: the OSG collector writes it as one; correct the record or its producer",
        ) from e


def _int(rec: dict, key: str):
    return _number(rec, key, int)


def _float(rec: dict, key: str):
    return _number(rec, key, float)


def osg_fields(rec: dict) -> dict[str, object]:
    """One OSG close record -> file_access fields by name (the fields it lacks stay null)."""
    server = rec.get("server_hostname") or rec.get("server") or rec.get("server_ip")
    start_ms, end_ms = _float(rec, "start_time"), _float(rec, "end_time")
    read, readv, write = _int(rec, "read"), _int(rec, "readv"), _int(rec, "write")
    uid = rec.get("unique_id") or rec.get("uuid")
    if not uid:
        key = json.dumps(
            [
                rec.get("serverID"),
                server,
                rec.get("filename"),
                rec.get("start_time"),
                rec.get("end_time"),
                rec.get("host"),
                rec.get("user"),
                read,
                readv,
                write,
            ]
        )
        uid = "osg-" + hashlib.sha1(key.encode()).hexdigest()[:20]
    size = _int(rec, "filesize")
    start = start_ms / 1000.0 if start_ms is not None else None
    read_at_close = _int(rec, "read_bytes_at_close")
    if read_at_close is None and read is not None:
        read_at_close = read + (readv or 0)
    closed = rec.get("HasFileCloseMsg")
    return {
        "server_host": server,
        "unique_id": str(uid),
        "file_lfn": rec.get("filename"),
        "file_size_bytes": size if size is None or size >= 0 else None,
        "start_time": start,
        "end_time": end_ms / 1000.0 if end_ms is not None else start,
        "read_single_average_bytes": _float(rec, "read_single_average"),
        "read_vector_average_bytes": _float(rec, "read_vector_average"),
        "write_average_bytes": _float(rec, "write_average"),
        "read_bytes_at_close": read_at_close,
        "write_bytes_at_close": (
            _int(rec, "write_bytes_at_close") if rec.get("write_bytes_at_close") is not None else write
        ),
        "read_bytes": read,
        "readv_bytes": readv,
        "write_bytes": write,
        "read_ops": _int(rec, "read_single_operations"),
        "readv_ops": _int(rec, "read_vector_operations"),
        "write_ops": _int(rec, "write_operations"),
        "client_host": rec.get("host"),
        "app_name": rec.get("appinfo") if isinstance(rec.get("appinfo"), str) else None,
        "close_seen": bool(closed) if closed is not None else True,
    }


def in_schema_order(fields: dict[str, object]) -> list:
    """Fields by name -> a row in FILE_ACCESS order; a name not in the schema is an error."""
    unknown = fields.keys() - _COLUMN_SET
    if unknown:
        raise KeyError(f"not file_access fields: {sorted(unknown)}")
    return [fields.get(c) for c in COLUMNS]


_COLUMN_SET = frozenset(COLUMNS)


def osg_row(rec: dict) -> list:
    """One OSG close record -> a row in FILE_ACCESS order."""
    return in_schema_order(osg_fields(rec))


def _records(path: Path) -> Iterator[tuple[int, str]]:
    """(line or array element number, record text); a JSON array that does not parse raises
    json.JSONDecodeError (the whole file is then one reject)."""
    text = path.read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):
        for i, rec in enumerate(json.loads(stripped), 1):
            yield i, json.dumps(rec)
        return
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield i, line


def osg_batches(files: list[Path], rows_per_batch: int = 100_000) -> Iterator[Batch]:
    """One or more Batches per file; unparseable lines become Rejects with their line number."""
    for path in files:
        rows, locs, rejects = [], [], []
        try:
            records = list(_records(path))  # the file is read whole either way
        except json.JSONDecodeError as e:
            reason = f"not JSON at offset {e.pos} ({e.msg}): write one JSON array of records, or one record a line"
            doc = Reject(RecordKind.FILE_ACCESS, f"osg-json:{path}", f"{path}:offset {e.pos}", "document", reason, "")
            yield Batch(RecordKind.FILE_ACCESS, rows_to_table([]), f"osg-json:{path}", [], [doc])
            continue
        for lineno, line in records:
            loc = f"{path}:line {lineno}"
            try:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise BadField("record", f"not JSON ({e.msg}): write one JSON object a line") from e
                if not isinstance(rec, dict):
                    raise BadField("record", "not a JSON object: write one JSON object a line")
                fields = osg_fields(rec)
                if fields["start_time"] is None:
                    raise BadField("start_time", "no start_time: the record needs the open time (milliseconds)")
                row = in_schema_order(fields)
            except (ValueError, TypeError) as e:
                field = getattr(e, "field", "record")
                rejects.append(Reject(RecordKind.FILE_ACCESS, f"osg-json:{path}", loc, field, str(e), line[:2000]))
                continue
            rows.append(row)
            locs.append(loc)
            if len(rows) >= rows_per_batch:
                yield Batch(RecordKind.FILE_ACCESS, rows_to_table(rows), f"osg-json:{path}", locs, rejects)
                rows, locs, rejects = [], [], []
        if rows or rejects:
            yield Batch(RecordKind.FILE_ACCESS, rows_to_table(rows), f"osg-json:{path}", locs, rejects)
