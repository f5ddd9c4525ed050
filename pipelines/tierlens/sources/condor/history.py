"""HTCondor job history → canonical ``job`` and ``job_tag`` batches.

Reads the schedd's history file and its rotated siblings (``history.*``, plain or ``.gz``) in the
long ClassAd form HTCondor writes: one ``Attr = value`` per line, each ad followed by a banner
line ``*** Offset = N ClusterId = C ProcId = P Owner = "u" CompletionDate = T ...``.
``classad2.parseAds`` would merge two ads across a banner, so the file is split on the banners
first and each ad parsed on its own. classad2 also stops silently at the first line it cannot
parse; an ad whose attribute lines did not all make it into the parsed ad is therefore rejected
(source, ``FILE:offset N`` of the ad's first byte, the bad line) instead of being loaded half-read.

Most ads never reach classad2: accounting needs a few dozen attributes (``NEEDED``) and HTCondor
writes them as plain literals. ``fast.read_block`` reads a block of the file at a time as arrays
and takes those values itself when every line is 'Attribute = value', no value looks cut or
unbalanced, and every needed value is a literal it reads exactly as classad2 does (decimal
integers, reals, strings without escapes, lists of such strings, booleans, undefined);
``fast.rows`` then does what ``ad_rows`` does, as column expressions. Any other ad goes to
classad2 and ``ad_rows``. Tests compare both paths on every ad.

Which attributes make a row, and why (one row per job; see ``ad_rows``):

* A job that was evicted and restarted ran more than once, possibly on nodes with different
  storage. The row describes its **last run**, the one that completed: it is the run whose node
  ``LastRemoteHost`` names and whose machine attributes ``SYSTEM_JOB_MACHINE_ATTRS`` copied as
  ``MachineAttr<X>0``. So start_time = ``JobCurrentStartDate`` (``JobStartDate`` is the first
  run's start), cpu = ``RemoteUserCpu`` + ``RemoteSysCpu`` (HTCondor leaves out attempts evicted
  without a checkpoint; ``CumulativeRemote*Cpu`` would add them), wall = ``CommittedTime`` (the
  same rule for wall time; ``RemoteWallClockTime`` adds the evicted attempts' wall time), falling
  back to ``LastRemoteWallClockTime`` and then ``RemoteWallClockTime`` in ads that lack it.
  Efficiency then compares CPU and wall of the same run on the same storage. The wall time
  evicted attempts wasted (``RemoteWallClockTime - CommittedTime``) is badput, not storage
  efficiency, and is not in the row.
* cores = ``CpusProvisioned`` (what the slot gave) else ``RequestCpus`` (evaluated: it may be an
  expression) else 1, HTCondor's default request.
* job_identity = the job's ``TierlensJobIdentity`` (the string the schedd transform put into
  XRD_MONINFO) when it is this job's own (ends in its GlobalJobId); otherwise the same string
  computed by ``records.job_identity('htcondor', cluster, GlobalJobId)``.
* cluster = the job's ``TierlensCluster`` (set by the transform) else the ``cluster`` argument.
"""

from __future__ import annotations

import gzip
import logging
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from ...records import JOB, JOB_TAG, Batch, RecordKind, Reject, job_identity
from . import fast as _fast

log = logging.getLogger(__name__)

try:
    from classad2 import ExprTree as _ExprTree
except ImportError:  # pragma: no cover - htcondor is a dependency
    _ExprTree = ()

BATCH_SYSTEM = "htcondor"
TAGGER = "htcondor-startd-cron"
#: Ads per batch: bounds memory (two Arrow tables of this many rows) whatever the file size.
BATCH_ADS = 50_000

_BANNER = b"*** "
_ATTR_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=")
_ATTR_NAMES = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_.]*)[ \t]*=", re.M)
_CONTENT_LINES = re.compile(r"^[ \t]*[^\s#]", re.M)
_JOB_STATUS = {1: "PENDING", 2: "RUNNING", 3: "CANCELLED", 5: "HELD", 6: "TRANSFERRING_OUTPUT", 7: "SUSPENDED"}


# ------------------------------------------------------------------------------ files and ads


def history_files(paths: Iterable[Path]) -> list[Path]:
    """Expand folders to their ``history`` and ``history.*`` files; oldest first.

    Rotated files (``history.<timestamp>``) sort by name, which is their age; the live
    ``history`` comes last so a job's final values land last.
    """
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = [f for f in p.iterdir() if f.is_file() and (f.name == "history" or f.name.startswith("history."))]
            out.extend(sorted(found, key=lambda f: (f.name == "history", f.name)))
        else:
            out.append(p)
    return out


@dataclass(frozen=True)
class RawAd:
    """One ad's text as it stands in the file, with the byte offset of its first line."""

    path: str
    offset: int
    text: str


#: a banner line; at the end of the file it may lack its newline
_BANNER_LINE = re.compile(rb"^\*\*\* [^\n]*\n", re.M)
_LAST_BANNER_LINE = re.compile(rb"^\*\*\* [^\n]*(?:\n|\Z)", re.M)
#: bytes read from a history file at a time
READ_BYTES = 1 << 23


def split_ads(path: Path) -> Iterator[RawAd]:
    """The ads of one history file, split on the ``*** `` banner lines, read a block at a time.

    A trailing ad without a banner (per-job history files have none; or the schedd is writing)
    is returned too.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    base = 0  # file offset of buf[0], which is the first byte after the last banner seen
    buf = b""
    with opener(path, "rb") as f:
        while True:
            chunk = f.read(READ_BYTES)
            buf += chunk
            banners = _BANNER_LINE if chunk else _LAST_BANNER_LINE
            pos = 0
            for m in banners.finditer(buf):
                if buf[pos : m.start()].strip():
                    yield RawAd(str(path), base + pos, buf[pos : m.start()].decode("utf-8", "replace"))
                pos = m.end()
            buf, base = buf[pos:], base + pos
            if not chunk:
                break
    if buf.strip():
        yield RawAd(str(path), base, buf.decode("utf-8", "replace"))


class MalformedAd(ValueError):
    def __init__(self, reason: str, attr: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.attr = attr


def parse_ad(raw: RawAd):
    """Parse one ad with classad2; raise MalformedAd unless every attribute line made it."""
    import classad2

    text = raw.text
    names = _ATTR_NAMES.findall(text)
    lines = len(_CONTENT_LINES.findall(text))
    if len(names) != lines:
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip() and not line.lstrip().startswith("#") and not _ATTR_LINE.match(line):
                raise MalformedAd(f"line {n} of the ad is not 'Attribute = value': {line[:80]!r}")
    try:
        # parseAds, not parseOne: parseOne copies every attribute into a fresh ad (2x slower)
        ad = next(iter(classad2.parseAds(text)), None)
    except Exception as e:  # noqa: BLE001 - classad2 raises a few kinds
        raise MalformedAd(f"classad2 cannot parse the ad: {e}") from e
    if ad is None:
        raise MalformedAd("classad2 found no ad")
    # classad2 stops quietly at a value it cannot parse; its attributes are a subset of the
    # lines' names, so equal counts mean every line made it.
    if len(ad) != len({n.lower() for n in names}):
        have = {k.lower() for k in ad.keys()}
        for n, name in enumerate(names, 1):
            if name.lower() not in have:
                raise MalformedAd(f"value of {name} (attribute line {n}) does not parse", name)
    return ad


# ------------------------------------------------------------------------------ fast path

#: Every attribute ad_rows reads (tests check it reads no other). Only these need a value.
NEEDED = (
    "GlobalJobId",
    "TierlensCluster",
    "TierlensJobIdentity",
    "LastRemoteHost",
    "RemoteHost",
    "JobCurrentStartDate",
    "JobStartDate",
    "CompletionDate",
    "EnteredCurrentStatus",
    "BlockReadKbytes",
    "BlockWriteKbytes",
    "ExitCode",
    "ExitBySignal",
    "JobStatus",
    "Owner",
    "AccountingGroup",
    "AcctGroup",
    "x509UserProxyVOName",
    "QDate",
    "CpusProvisioned",
    "RequestCpus",
    "RemoteUserCpu",
    "RemoteSysCpu",
    "CommittedTime",
    "LastRemoteWallClockTime",
    "RemoteWallClockTime",
    "MachineAttrTierlensStorageType0",
    "MachineAttrTierlensScratchDevices0",
    "MachineAttrTierlensScratchPath0",
    "MachineAttrTierlensAbArm0",
    "TierlensAbArm",
    "MachineAttrTierlensCacheRoute0",
)
# ------------------------------------------------------------------------------ ad → rows


def _get(ad, name: str):
    """The evaluated value, or None when missing, undefined or an error."""
    try:
        v = ad[name]  # a literal comes back as its value: one call, no evaluation
        if isinstance(v, _ExprTree):
            v = ad.eval(name)
    except KeyError:
        return None
    except Exception:  # noqa: BLE001 - classad2 evaluation problems: treat as undefined
        log.debug("cannot evaluate %s", name, exc_info=True)
        return None
    if v is None or type(v).__name__ == "Value":  # classad2.Value.Undefined / .Error
        return None
    return v


#: The attributes read as numbers, with the job field each one feeds (a reject names both).
NUMBERS = {
    "JobCurrentStartDate": "start_time",
    "JobStartDate": "start_time",
    "CompletionDate": "end_time",
    "EnteredCurrentStatus": "end_time",
    "BlockReadKbytes": "bytes_read",
    "BlockWriteKbytes": "bytes_written",
    "ExitCode": "exit_code",
    "JobStatus": "state",
    "QDate": "submit_time",
    "CpusProvisioned": "allocated_cores",
    "RequestCpus": "allocated_cores",
    "RemoteUserCpu": "cpu_user_seconds",
    "RemoteSysCpu": "cpu_system_seconds",
    "CommittedTime": "wall_seconds",
    "LastRemoteWallClockTime": "wall_seconds",
    "RemoteWallClockTime": "wall_seconds",
}


def _num(ad, name: str) -> float | None:
    """The attribute's number; None when missing or undefined. Any other value (a string, a
    boolean, a list) is an error in the ad, not a missing value: loading it as NULL would make a
    job without CPU time look like a storage problem, so the ad is rejected."""
    v = _get(ad, name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise MalformedAd(
            f"{name} = {v!r} is a {type(v).__name__}, not a number (it gives the job's {NUMBERS.get(name, name)}): "
            f"correct what writes {name} (a job transform, a submit file's +{name}) to a number",
            name,
        )
    return float(v)


def _str(ad, name: str) -> str | None:
    v = _get(ad, name)
    return v if isinstance(v, str) and v != "" else None


def _ts(seconds: float | None) -> datetime | None:
    if seconds is None or seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _host(remote_host: str | None) -> str | None:
    """'slot1_3@wn01.example.org' → 'wn01.example.org'."""
    if not remote_host:
        return None
    return remote_host.rsplit("@", 1)[-1]


def _models(value) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [m.strip() for m in value.split(",") if m.strip()]
    if isinstance(value, (list, tuple)):
        return [str(m) for m in value if isinstance(m, str)]
    return None


def _state(ad) -> str:
    status = _num(ad, "JobStatus")
    if status == 4:
        if _get(ad, "ExitBySignal") is True:
            return "FAILED"
        code = _num(ad, "ExitCode")
        return "COMPLETED" if code in (0, None) else "FAILED"
    return _JOB_STATUS.get(int(status), "UNKNOWN") if status is not None else "UNKNOWN"


def wall_seconds(ad) -> float | None:
    """Wall time of the job's last run (see the module docstring)."""
    for name in ("CommittedTime", "LastRemoteWallClockTime", "RemoteWallClockTime"):
        v = _num(ad, name)
        if v is not None and v > 0:
            return v
    return _num(ad, "RemoteWallClockTime")


def allocated_cores(ad) -> int:
    for name in ("CpusProvisioned", "RequestCpus"):
        v = _num(ad, name)
        if v is not None and v >= 1:
            return int(v)
    return 1


def ad_rows(ad, cluster: str) -> tuple[dict, dict | None]:
    """The job row and (when the job carries tierlens machine attributes) its job_tag row."""
    gjid = _str(ad, "GlobalJobId")
    if gjid is None:
        raise MalformedAd("no GlobalJobId", "GlobalJobId")
    cluster = _str(ad, "TierlensCluster") or cluster
    identity = _str(ad, "TierlensJobIdentity")
    if identity is None or not identity.endswith("." + gjid):
        identity = job_identity(BATCH_SYSTEM, cluster, gjid)
    node = _host(_str(ad, "LastRemoteHost") or _str(ad, "RemoteHost"))
    start = _num(ad, "JobCurrentStartDate") or _num(ad, "JobStartDate")
    end = _num(ad, "CompletionDate")
    if not end and start:  # removed (or held and removed) after it ran
        end = _num(ad, "EnteredCurrentStatus")
    read_kb, write_kb = _num(ad, "BlockReadKbytes"), _num(ad, "BlockWriteKbytes")
    code = _num(ad, "ExitCode")
    job = {
        "batch_system": BATCH_SYSTEM,
        "cluster": cluster,
        "job_id": gjid,
        "step_id": "",
        "job_identity": identity,
        "user_name": _str(ad, "Owner"),
        "account": _str(ad, "AccountingGroup") or _str(ad, "AcctGroup"),
        "vo": _str(ad, "x509UserProxyVOName"),
        "job_class": None,
        "partition": None,
        "node": node,
        "node_list": node,
        "submit_time": _ts(_num(ad, "QDate")),
        "start_time": _ts(start),
        "end_time": _ts(end) if start else None,
        "allocated_cores": allocated_cores(ad),
        "cpu_user_seconds": _num(ad, "RemoteUserCpu"),
        "cpu_system_seconds": _num(ad, "RemoteSysCpu"),
        "wall_seconds": wall_seconds(ad),
        "state": _state(ad),
        "exit_code": int(code) if code is not None and _num(ad, "JobStatus") == 4 else None,
        "bytes_read": int(read_kb * 1024) if read_kb is not None else None,
        "bytes_written": int(write_kb * 1024) if write_kb is not None else None,
        "sluid": None,
    }
    storage = _str(ad, "MachineAttrTierlensStorageType0")
    if storage is None:
        return job, None
    storage = storage.strip().lower()
    tag = {
        "batch_system": BATCH_SYSTEM,
        "cluster": cluster,
        "job_id": gjid,
        "step_id": "",
        "node": node or "",
        "storage_type": storage,  # one of STORAGE_TYPES, else the loader rejects the tag
        "device_models": _models(_get(ad, "MachineAttrTierlensScratchDevices0")),
        "scratch_path": _str(ad, "MachineAttrTierlensScratchPath0"),
        # as treated: the node's arm; a job outside a node-fixed trial keeps the arm it was drawn
        "ab_arm": _str(ad, "MachineAttrTierlensAbArm0") or _str(ad, "TierlensAbArm"),
        "cache_route": _str(ad, "MachineAttrTierlensCacheRoute0"),
        "tagged_at": _ts(start),
        "tagger": TAGGER,
    }
    return job, tag


# ------------------------------------------------------------------------------ batches


@dataclass
class _Pending:
    source: str
    jobs: list[dict] = field(default_factory=list)
    job_locations: list[str] = field(default_factory=list)
    tags: list[dict] = field(default_factory=list)
    tag_locations: list[str] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    tag_rejects: list[Reject] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.jobs) + len(self.rejects)

    def add(self, location: str, item, cluster: str) -> None:
        """A parsed ad's rows, or (MalformedAd, raw text) as a reject."""
        if isinstance(item, tuple):
            err, raw = item
            self.rejects.append(Reject(RecordKind.JOB, self.source, location, err.attr, err.reason, raw[:4000]))
            return
        try:
            job, tag = ad_rows(item, cluster)
        except MalformedAd as err:
            self.rejects.append(Reject(RecordKind.JOB, self.source, location, err.attr, err.reason, str(item)[:4000]))
            return
        self.jobs.append(job)
        self.job_locations.append(location)
        if tag is not None and not tag["node"]:
            self.tag_rejects.append(
                Reject(RecordKind.JOB_TAG, self.source, location, "node", NO_NODE, str(item)[:4000])
            )
        elif tag is not None:
            self.tags.append(tag)
            self.tag_locations.append(location)

    def batches(self) -> Iterator[Batch]:
        if self.jobs or self.rejects:
            yield Batch(
                RecordKind.JOB, _table(self.jobs, JOB), self.source, locations=self.job_locations, rejects=self.rejects
            )
        if self.tags or self.tag_rejects:
            yield Batch(
                RecordKind.JOB_TAG,
                _table(self.tags, JOB_TAG),
                self.source,
                locations=self.tag_locations,
                rejects=self.tag_rejects,
            )


#: Why a tagged ad gives no job_tag row: the tag says which node's storage the job ran on.
NO_NODE = (
    "the ad has MachineAttrTierlensStorageType0 but neither LastRemoteHost nor RemoteHost, so the tag "
    "has no node: keep LastRemoteHost in the ads given (e.g. add it to a condor_history -af export)"
)


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pydict({f.name: [r[f.name] for r in rows] for f in schema}, schema=schema)


def ads_to_batches(
    ads: Iterable[tuple[str, object]], source: str, cluster: str, batch_ads: int = BATCH_ADS
) -> Iterator[Batch]:
    """(location, parsed ad or MalformedAd + raw text) pairs → bounded job / job_tag batches."""
    pending = _Pending(source)
    for location, item in ads:
        pending.add(location, item, cluster)
        if len(pending) >= batch_ads:
            yield from pending.batches()
            pending = _Pending(source)
    yield from pending.batches()


def _parsed(path: Path) -> Iterator[tuple[str, object]]:
    """Every ad of a file read by classad2 (``parse_ad``), or its MalformedAd and text."""
    for raw in split_ads(path):
        yield from _classad2(raw)


def _classad2(raw: RawAd) -> Iterator[tuple[str, object]]:
    location = f"{raw.path}:offset {raw.offset}"
    try:
        yield location, parse_ad(raw)
    except MalformedAd as err:
        log.debug("%s: %s", location, err.reason)
        yield location, (err, raw.text)


@dataclass
class _Piece:
    """Rows of consecutive ads of one file, each row with its ad's file offset."""

    jobs: pa.Table
    job_at: np.ndarray
    tags: pa.Table
    tag_at: np.ndarray
    rejects: list[tuple[int, Reject]]

    def __len__(self) -> int:
        return len(self.job_at) + len(self.rejects)

    @staticmethod
    def concat(pieces: list[_Piece]) -> _Piece:
        return _Piece(
            pa.concat_tables([p.jobs for p in pieces]),
            np.concatenate([p.job_at for p in pieces]),
            pa.concat_tables([p.tags for p in pieces]),
            np.concatenate([p.tag_at for p in pieces]),
            [r for p in pieces for r in p.rejects],
        )

    def split(self, ads: int) -> tuple[_Piece, _Piece]:
        """The first ``ads`` ads (rows and rejects) and the rest."""
        order = np.sort(np.r_[self.job_at, np.array([o for o, _ in self.rejects], np.int64)])
        if ads >= len(order):
            return self, _Piece(self.jobs.slice(0, 0), self.job_at[:0], self.tags.slice(0, 0), self.tag_at[:0], [])
        cut = order[ads]
        j, t = int(np.searchsorted(self.job_at, cut)), int(np.searchsorted(self.tag_at, cut))
        head = _Piece(
            self.jobs.slice(0, j),
            self.job_at[:j],
            self.tags.slice(0, t),
            self.tag_at[:t],
            [r for r in self.rejects if r[0] < cut],
        )
        tail = _Piece(
            self.jobs.slice(j),
            self.job_at[j:],
            self.tags.slice(t),
            self.tag_at[t:],
            [r for r in self.rejects if r[0] >= cut],
        )
        return head, tail

    def batches(self, source: str, path: str) -> Iterator[Batch]:
        job_rejects = [r for _, r in self.rejects if r.kind is RecordKind.JOB]
        tag_rejects = [r for _, r in self.rejects if r.kind is RecordKind.JOB_TAG]
        if self.jobs.num_rows or job_rejects:
            yield Batch(RecordKind.JOB, self.jobs, source, locations=_locations(path, self.job_at), rejects=job_rejects)
        if self.tags.num_rows or tag_rejects:
            yield Batch(
                RecordKind.JOB_TAG, self.tags, source, locations=_locations(path, self.tag_at), rejects=tag_rejects
            )


def _locations(path: str, offsets: np.ndarray) -> list[str]:
    return list(map(f"{path}:offset ".__add__, map(str, offsets.tolist())))


def _by_offset(table: pa.Table, at: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    order = np.argsort(at, kind="stable")
    return table.take(pa.array(order)), at[order]


def _block_piece(block: _fast.Block, path: Path, source: str, cluster: str) -> _Piece:
    """The block's fast ads as columns, its other ads through classad2, in file order."""
    jobs, tags, tagged = _fast.rows(block, cluster, JOB, JOB_TAG, BATCH_SYSTEM, TAGGER, _JOB_STATUS)
    job_at, tag_at = block.offsets, block.offsets[tagged]
    if not block.slow:
        return _Piece(jobs, job_at, tags, tag_at, [])
    slow = _Pending(source)
    for offset, text in block.slow:
        for location, item in _classad2(RawAd(str(path), offset, text.decode("utf-8", "replace"))):
            slow.add(location, item, cluster)

    def offsets(locations: list[str]) -> np.ndarray:
        return np.array([int(x.rsplit(" ", 1)[1]) for x in locations], np.int64)

    jobs, job_at = _by_offset(
        pa.concat_tables([jobs, _table(slow.jobs, JOB)]), np.r_[job_at, offsets(slow.job_locations)]
    )
    tags, tag_at = _by_offset(
        pa.concat_tables([tags, _table(slow.tags, JOB_TAG)]), np.r_[tag_at, offsets(slow.tag_locations)]
    )
    rejects = [(int(r.location.rsplit(" ", 1)[1]), r) for r in slow.rejects + slow.tag_rejects]
    return _Piece(jobs, job_at, tags, tag_at, rejects)


def _fast_batches(path: Path, source: str, cluster: str, batch_ads: int) -> Iterator[Batch]:
    pending: list[_Piece] = []
    count = 0
    for base, data in _fast.blocks(path):
        piece = _block_piece(_fast.read_block(data, base, NEEDED, tuple(NUMBERS)), path, source, cluster)
        pending.append(piece)
        count += len(piece)
        while count >= batch_ads:
            head, tail = _Piece.concat(pending).split(batch_ads)
            yield from head.batches(source, str(path))
            pending, count = [tail], len(tail)
    if count:
        yield from _Piece.concat(pending).batches(source, str(path))


def history_batches(
    paths: Iterable[Path], cluster: str, batch_ads: int = BATCH_ADS, fast: bool = True
) -> Iterator[Batch]:
    """Job and job_tag batches from history files (folders expand to history + history.*).

    Each file is its own source, ``condor-history:<file>``; a rejected ad is located as
    ``<file>:offset <byte offset of its first line>``. With ``fast`` (the default) a block of the
    file at a time is read as arrays (``fast.read_block``) and only the ads that need it go to
    classad2; ``fast=False`` reads every ad with classad2, which tests compare it with.
    """
    for path in history_files(paths):
        source = f"condor-history:{path}"
        try:
            if fast:
                yield from _fast_batches(path, source, cluster, batch_ads)
            else:
                yield from ads_to_batches(_parsed(path), source, cluster, batch_ads)
        except (OSError, EOFError, zlib.error) as e:
            # unreadable, or a rotated .gz cut short: the file's name is what the admin needs
            raise OSError(f"{path}: {e}") from e
