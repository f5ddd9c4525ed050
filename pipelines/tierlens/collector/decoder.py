"""Entry point of the decoding side: ``Decoder`` is the :class:`.correlator.Correlator`.

The work is split the way the data flows: :mod:`.wire` (codes and record layouts, no state),
:mod:`.fstream` (the compiled f-stream loop), :mod:`.correlator` (servers, users, open files,
cache events) and :mod:`.rows` (the one place rows are built). Rows leave as ``emit(table)`` with
an Arrow table in records.FILE_ACCESS's schema.
"""

from __future__ import annotations

from .correlator import Correlator
from .rows import COLUMNS
from .state import Seq, Server, User
from .wire import (
    FREC,
    GSH,
    HDR,
    IGNORED_CODES,
    IS_CLOSE,
    IS_DISC,
    IS_OPEN,
    IS_TIME,
    IS_XFR,
    MAP_CODES,
    OPN,
    OPS,
    SID_MASK,
    TOD,
    U32,
    XFR,
    BadPacket,
)

Decoder = Correlator

__all__ = [
    "COLUMNS",
    "FREC",
    "GSH",
    "HDR",
    "IGNORED_CODES",
    "IS_CLOSE",
    "IS_DISC",
    "IS_OPEN",
    "IS_TIME",
    "IS_XFR",
    "MAP_CODES",
    "OPN",
    "OPS",
    "SID_MASK",
    "TOD",
    "U32",
    "XFR",
    "BadPacket",
    "Decoder",
    "Seq",
    "Server",
    "User",
]
