"""The decoder's state, as plain types: what the correlator keeps per server instance and user,
and what its snapshot (snapshot.py) writes and reads back. Both import this module; neither imports
the other's internals.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from . import rows as rowlib


@dataclass
class User:
    protocol: str
    name: str
    pid: int | None
    host: str
    app: str | None = None
    job_identity: str | None = None
    info: str | None = None
    userid: str = ""


@dataclass
class Seq:
    last: int
    missing: set[int] = field(default_factory=set)
    #: (sequence number, CRC-32 of the payload) of the last 128 packets. pseq has 8 bits, so after
    #: a burst of loss a new packet often carries a number seen recently: only the same number with
    #: the same bytes is a duplicate; a new packet is never thrown away.
    seen: deque = field(default_factory=lambda: deque(maxlen=128))


@dataclass
class Server:
    """One server instance: (sender IP, sid, start time). Dictionaries live here."""

    ip: str
    sid: int
    stod: int
    slot: int
    host: str | None = None
    port: int | None = None
    pid: int | None = None
    inst: str | None = None
    site: str | None = None
    is_cache: bool = False
    retired: bool = False
    users: dict[int, User] = field(default_factory=dict)
    users_by_id: dict[str, User] = field(default_factory=dict)
    paths: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: lfn -> accesses closed on this cache but not yet emitted (a file_close event may still come)
    waiting: dict[str, list[dict]] = field(default_factory=dict)
    #: lfn -> file_close events not yet matched to an access: [deadline, PfcFileClose]
    pfc_pending: dict[str, list[list]] = field(default_factory=dict)
    seqs: dict[str, Seq] = field(default_factory=dict)
    #: user dictid -> arrival time of its disconnect; forgotten a while later
    disconnected: dict[int, float] = field(default_factory=dict)
    #: what newer servers send that this collector does not decode, by kind (see unknown_counts)
    unknown: Counter = field(default_factory=Counter)
    lost: int = 0
    duplicates: int = 0
    reordered: int = 0
    packets: int = 0
    last_time: float = 0.0

    @property
    def name(self) -> str:
        if self.host is not None:
            return f"{self.host}:{self.port}" if self.port else self.host
        return self.ip

    @property
    def role(self) -> str:
        return "cache" if self.is_cache else "origin"


@dataclass
class Pending:
    """Accesses of non-cache servers waiting out the cache grace (a server is known to be a cache
    only once its first g-stream event arrives)."""

    deadline: float
    chunk: rowlib.Chunk
