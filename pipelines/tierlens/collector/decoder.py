"""Entry point of the decoding side: ``Decoder`` is the :class:`.correlator.Correlator`.

The work is split the way the data flows: :mod:`.wire` (codes and record layouts, no state),
:mod:`.fstream` (the compiled f-stream loop), :mod:`.correlator` (servers, users, open files,
cache events) and :mod:`.rows` (the one place rows are built). Rows leave as ``emit(table)`` with
an Arrow table in records.FILE_ACCESS's schema.
"""

from __future__ import annotations

from .correlator import Correlator, Seq, Server, User
from .rows import COLUMNS
from .wire import (FREC, GSH, HDR, IGNORED_CODES, IS_CLOSE, IS_DISC, IS_OPEN, IS_TIME, IS_XFR, MAP_CODES, OPN, OPS,
                   SID_MASK, TOD, U32, XFR, BadPacket, UserId)

Decoder = Correlator

#: Index of each column in COLUMNS (for code that builds rows as lists, e.g. the OSG import).
(C_SERVER, C_UID, C_ROLE, C_LFN, C_SIZE, C_START, C_END, C_RSAVG, C_RVAVG, C_WAVG, C_RCLOSE,
 C_WCLOSE, C_READ, C_READV, C_WRITE, C_ROPS, C_RVOPS, C_WOPS, C_CHOST, C_CPID, C_APP, C_JOB,
 C_HIT, C_MISS, C_BYPASS, C_CLOSED) = range(26)


def parse_userid(text: str) -> tuple[str, str, int | None, int | None, str]:
    """``[prot/]user.pid:sid@host`` -> (prot, user, pid, sid, host)."""
    u = UserId.parse(text)
    return u.protocol, u.user, u.pid, u.sid, u.host


__all__ = ["COLUMNS", "FREC", "GSH", "HDR", "IGNORED_CODES", "IS_CLOSE", "IS_DISC", "IS_OPEN", "IS_TIME", "IS_XFR",
           "MAP_CODES", "OPN", "OPS", "SID_MASK", "TOD", "U32", "XFR", "BadPacket", "Decoder", "Seq", "Server",
           "User", "parse_userid"]
