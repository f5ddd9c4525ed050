"""The decoder's snapshot (``checkpoint-g*.state``): a versioned, documented JSON document.

A collector restarted after an upgrade restores the snapshot the previous tierlens wrote, so the
format is plain data with a version, not pickled classes (a renamed class or field would break
the resume of a running collector). Layout, format version 1::

    {"format": "tierlens-collector-snapshot", "version": 1,
     "users":   [{"protocol", "name", "pid", "host", "app", "job_identity", "info", "userid"}, ...],
     "servers": [{"ip", "sid", "stod", "host", "port", "pid", "inst", "site", "is_cache", "retired",
                  "lost", "duplicates", "reordered", "packets", "last_time",
                  "unknown": {kind: count},
                  "users": [[dictid, user index]], "users_by_id": [[userid text, user index]],
                  "paths": [[dictid, lfn, userid text]], "disconnected": [[dictid, arrival]],
                  "seqs": {stream: {"last", "missing": [...], "seen": [[pseq, crc32], ...]}},
                  "pfc_pending": [[lfn, deadline, file_close event], ...]}, ...],   # in slot order
     "by_addr": [[ip, port, stod, server slot], ...],
     "last_tod": array,
     "open": {"ints": array, "times": array, "lfns": [base64 | null], "orphans": array,
              "orphan_times": array, "orphan_keys": array},
     "pending": [{"deadline", "ints", "times", "lfn_data", "lfn_offs", "users": [user index | null],
                  "user_idx", "close_seen"}, ...],
     "cache_queue": [[deadline, server slot, file_access row], ...],
     "stats": {name: n}, "quarantined": {reason: n}, "unknown_senders": [[ip, kind, n]],
     "last_sweep": seconds}

An ``array`` is ``{"dtype": numpy dtype string, "shape": [...], "data": base64 of the bytes}``; a
file_access row is an object in FILE_ACCESS names, timestamps as epoch microseconds; a file_close
event is PfcFileClose's fields. Times are epoch seconds.

The format before version 1 was an unversioned pickle of the decoder's classes (tierlens up to
the collector's second version): :func:`load` still reads it, with only the collector's own
classes, numpy and the standard containers allowed, and fills in what it lacks. A document of a
newer version than this tierlens knows is refused with :class:`SnapshotError`.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import pickle
from collections import Counter, deque
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from ..records import FILE_ACCESS
from . import fstream as fs, rows as rowlib
from .state import Pending, Seq, Server, User
from .wire import PfcFileClose

if TYPE_CHECKING:
    from .correlator import Correlator

FORMAT = "tierlens-collector-snapshot"
VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TIMESTAMPS = frozenset(f.name for f in FILE_ACCESS if str(f.type).startswith("timestamp"))
#: A server's plain values, written and read as they are, in the layout's order: one list for
#: both directions, so a value the writer keeps is one the reader restores.
_SERVER_VALUES = (
    "ip",
    "sid",
    "stod",
    "host",
    "port",
    "pid",
    "inst",
    "site",
    "is_cache",
    "retired",
    "lost",
    "duplicates",
    "reordered",
    "packets",
    "last_time",
)


class SnapshotError(Exception):
    """A snapshot this tierlens cannot restore; the message says why and what to do."""


# ---- plain values ---------------------------------------------------------------------------------
def _array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}


def _unarray(d: dict) -> np.ndarray:
    raw = base64.b64decode(d["data"])
    return np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(d["shape"]).copy()


def _row_out(row: dict) -> dict:
    return {
        k: ((v - _EPOCH) // timedelta(microseconds=1) if k in _TIMESTAMPS and v is not None else v)
        for k, v in row.items()
    }


def _row_in(row: dict) -> dict:
    out = dict.fromkeys(FILE_ACCESS.names)
    out.update(
        {k: (_EPOCH + timedelta(microseconds=v) if k in _TIMESTAMPS and v is not None else v) for k, v in row.items()}
    )
    return out


def _event_out(ev: PfcFileClose) -> dict:
    d = {f.name: getattr(ev, f.name) for f in dataclasses.fields(PfcFileClose)}
    d["remotes"] = list(d["remotes"]) if d["remotes"] is not None else None
    return d


def _event_in(d: dict) -> PfcFileClose:
    names = {f.name for f in dataclasses.fields(PfcFileClose)}
    d = {k: v for k, v in d.items() if k in names}
    if d.get("remotes") is not None:
        d["remotes"] = tuple(d["remotes"])
    return PfcFileClose(**d)


# ---- writing --------------------------------------------------------------------------------------
def dump(c: Correlator) -> bytes:
    """The decoder's state as a format-1 document."""
    users: list = []
    index: dict[int, int] = {}

    def ref(u) -> int | None:
        if u is None:
            return None
        if id(u) not in index:
            index[id(u)] = len(users)
            users.append(u)
        return index[id(u)]

    servers = []
    for srv in c._slots:
        servers.append(
            {
                **{name: getattr(srv, name) for name in _SERVER_VALUES},
                "unknown": dict(srv.unknown),
                "users": [[k, ref(u)] for k, u in srv.users.items()],
                "users_by_id": [[k, ref(u)] for k, u in srv.users_by_id.items()],
                "paths": [[k, lfn, uid] for k, (lfn, uid) in srv.paths.items()],
                "disconnected": [[k, t] for k, t in srv.disconnected.items()],
                "seqs": {
                    name: {"last": q.last, "missing": sorted(q.missing), "seen": [list(x) for x in q.seen]}
                    for name, q in srv.seqs.items()
                },
                "pfc_pending": [[lfn, ev[0], _event_out(ev[1])] for lfn, evs in srv.pfc_pending.items() for ev in evs],
            }
        )
    st = c._open.state()
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "servers": servers,
        "by_addr": [[k[0], k[1], k[2], srv.slot] for k, srv in c._by_addr.items()],
        "last_tod": _array(c._last_tod),
        "open": {
            "ints": _array(st["ints"]),
            "times": _array(st["times"]),
            "lfns": [base64.b64encode(x).decode() if x is not None else None for x in st["lfns"]],
            "orphans": _array(st["orphans"]),
            "orphan_times": _array(st["orphan_times"]),
            "orphan_keys": _array(np.asarray(st["orphan_keys"], dtype=np.int64)),
        },
        "pending": [
            {
                "deadline": p.deadline,
                "ints": _array(p.chunk.ints),
                "times": _array(p.chunk.times),
                "lfn_data": _array(p.chunk.lfn_data),
                "lfn_offs": _array(p.chunk.lfn_offs),
                "users": [ref(u) for u in p.chunk.users],
                "user_idx": _array(p.chunk.user_idx),
                "close_seen": _array(p.chunk.close_seen),
            }
            for p in c._pending
        ],
        "cache_queue": [[deadline, srv.slot, _row_out(row)] for deadline, srv, row in c._cache_queue],
        "stats": dict(c.stats),
        "quarantined": dict(c.quarantined),
        "unknown_senders": [[ip, kind, n] for (ip, kind), n in c.unknown_senders.items()],
        "last_sweep": c._last_sweep,
    }
    doc["users"] = [dataclasses.asdict(u) for u in users]  # last: ref() above filled the list
    return json.dumps(doc, separators=(",", ":")).encode()


# ---- reading --------------------------------------------------------------------------------------
def load(data: bytes, c: Correlator) -> int:
    """Restore ``c`` from a snapshot; returns the format version it was written in (0: the
    unversioned pickle)."""
    if data[:1] == b"\x80":
        _load_pickle(data, c)
        return 0
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SnapshotError(
            f"not a collector snapshot (neither format {VERSION} JSON nor the older pickle): {e}"
        ) from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError(f'not a collector snapshot: no "format": "{FORMAT}"')
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise SnapshotError(
            f"collector snapshot format version {version!r} is newer than this tierlens reads ({VERSION}): "
            "it was written by a newer tierlens; run that version, or move the out folder's checkpoint.json "
            "and checkpoint-g*.state away to start decoding afresh"
        )
    _load_v1(doc, c)
    return version


def _load_v1(doc: dict, c: Correlator) -> None:
    users = [User(**u) for u in doc["users"]]
    c.servers, c._slots = {}, []
    for slot, d in enumerate(doc["servers"]):
        srv = Server(slot=slot, **{name: d[name] for name in _SERVER_VALUES})
        srv.unknown = Counter(d["unknown"])
        srv.users = {int(k): users[i] for k, i in d["users"]}
        srv.users_by_id = {k: users[i] for k, i in d["users_by_id"]}
        srv.paths = {int(k): (lfn, uid) for k, lfn, uid in d["paths"]}
        srv.disconnected = {int(k): t for k, t in d["disconnected"]}
        for name, q in d["seqs"].items():
            seq = Seq(q["last"], set(q["missing"]))
            seq.seen.extend(tuple(x) for x in q["seen"])
            srv.seqs[name] = seq
        for lfn, deadline, ev in d["pfc_pending"]:
            srv.pfc_pending.setdefault(lfn, []).append([deadline, _event_in(ev)])
        c.servers[(srv.ip, srv.sid, srv.stod)] = srv
        c._slots.append(srv)
    c._by_addr = {(ip, port, stod): c._slots[slot] for ip, port, stod, slot in doc["by_addr"]}
    c._last_tod = _unarray(doc["last_tod"])
    o = doc["open"]
    c._open = fs.OpenFiles.from_state(
        {
            "ints": _unarray(o["ints"]),
            "times": _unarray(o["times"]),
            "lfns": [base64.b64decode(x) if x is not None else None for x in o["lfns"]],
            "orphans": _unarray(o["orphans"]),
            "orphan_times": _unarray(o["orphan_times"]),
            "orphan_keys": _unarray(o["orphan_keys"]),
        }
    )
    c._pending = deque(
        Pending(
            p["deadline"],
            rowlib.Chunk(
                _unarray(p["ints"]),
                _unarray(p["times"]),
                _unarray(p["lfn_data"]),
                _unarray(p["lfn_offs"]),
                [users[i] if i is not None else None for i in p["users"]],
                _unarray(p["user_idx"]),
                _unarray(p["close_seen"]),
            ),
        )
        for p in doc["pending"]
    )
    c._cache_queue = deque()
    for deadline, slot, row in doc["cache_queue"]:
        srv, row = c._slots[slot], _row_in(row)
        srv.waiting.setdefault(row["file_lfn"], []).append(row)  # waiting = the queue, per file
        c._cache_queue.append((deadline, srv, row))
    c.stats, c.quarantined = Counter(doc["stats"]), Counter(doc["quarantined"])
    c.unknown_senders = Counter({(ip, kind): n for ip, kind, n in doc["unknown_senders"]})
    c._last_sweep = doc["last_sweep"]


class _LegacyUnpickler(pickle.Unpickler):
    """The old snapshot's classes only: the collector's own, numpy's arrays, standard containers."""

    # (datetime and zoneinfo: the times of rows waiting for a cache event; builtins.getattr is how
    # ZoneInfo pickles itself)
    _MODULES = ("tierlens.collector.", "numpy", "collections", "builtins", "copyreg", "datetime", "zoneinfo")

    def find_class(self, module: str, name: str):
        if not module.startswith(self._MODULES) or (
            module == "builtins" and name in ("eval", "exec", "compile", "__import__", "open")
        ):
            raise SnapshotError(f"old collector snapshot refers to {module}.{name}, which a snapshot never holds")
        return super().find_class(module, name)


def _load_pickle(data: bytes, c: Correlator) -> None:
    """The unversioned pickle of the collector before format 1: read it, then give what it lacks
    (fields added since) their defaults."""
    try:
        st = _LegacyUnpickler(io.BytesIO(data)).load()
        servers, slots = st["servers"], st["slots"]
        for srv in slots:
            srv.__dict__.setdefault("unknown", Counter())
        for _, _, row in st["cache_queue"]:
            for name in FILE_ACCESS.names:
                row.setdefault(name, None)
        c.servers, c._slots, c._last_tod = servers, slots, st["last_tod"]
        c._by_addr = st["by_addr"]
        c._open = fs.OpenFiles.from_state(st["open"])
        c._pending = deque(Pending(*p) for p in st["pending"])
        c._cache_queue = deque(st["cache_queue"])
        c.stats, c.quarantined, c._last_sweep = st["stats"], st["quarantined"], st["last_sweep"]
        c.unknown_senders = Counter()
    except SnapshotError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of an old pickle is the same refusal
        raise SnapshotError(
            f"old (unversioned pickle) collector snapshot cannot be read by this tierlens: {type(e).__name__}: {e}"
        ) from e
