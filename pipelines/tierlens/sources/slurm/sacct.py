"""`sacct` output to canonical ``job`` rows.

Why ``--json`` first: it is structured (steps nested in their job, TRES as typed lists, no
delimiter that a job name or comment can break), it carries the step CPU times as separate user
and system seconds with microseconds, and its layout is versioned (``meta.plugin``). 22.05 writes
openapi ``dbv0.0.38``; 23.02+ write v0.0.39 and later, where numbers may be wrapped as
``{"set": true, "infinite": false, "number": N}``, states are lists and step ids are "JOB.STEP".
Both are read here; the fields mapped keep their paths from v0.0.42 (24.11) through v0.0.43
(25.05), v0.0.44 (25.11) and v0.0.45 (26.05), which adds the run's ``sluid`` (kept in the job
row, and the end of its identity: records.job_identity). ``--parsable2`` is the fallback for a
sacct without the JSON data parser (older than SLUIDs, so its rows carry none; forced on a 26.05
cluster it gives the identity without the SLUID):
a fixed list of columns, ``SLURM_TIME_FORMAT=%s`` for epoch times and ``--noconvert`` for plain
byte counts, so nothing locale- or unit-dependent is parsed.

sacct's output is saved to a temporary file and read a bounded piece at a time, job by job, so a
window of any size needs little memory. Each piece of the jobs array is cut into its elements by
a vectorised scan (jsonscan) and each job decoded into typed structs of only the fields mapped
here (sacct_typed, msgspec), its rows built as tuples; a job those refuse (an unusual value, a
damaged element) takes the generic path, one ``json`` decode and ``_json_job``, so its rows or
its reject and offset are exactly what they would be without the fast path. A window whose output is incomplete (broken document,
non-zero exit, timeout) keeps its complete jobs, leaves one reject and is asked for again
(``sacct_batches``). Slurm's NO_VAL / INFINITE markers (``SENTINELS``) are missing values; a job
that ended without starting (a launch failure) is loaded with no start and wall 0.

Definitions (docs/architecture.md): CPU is user + system seconds (sacct TotalCPU); cores are AllocCPUS;
bytes read/written are fs/disk of TRESUsageInTot / TRESUsageOutTot (rchar / wchar). A job's
row sums its steps, as sacct's TotalCPU does. Steps keep their own rows (step_id 'batch',
'extern', '0', ...); the whole job has step_id ''. Job ids are raw ids (JobIDRaw), so an array
task has its own id and the identity the plugin put in XRD_MONINFO.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

from ...records import JOB, Batch, RecordKind, Reject, job_identity, valid_sluid
from . import sacct_typed as typed
from .jsonscan import Stop, char_offsets, scan_array
from .values import JOB_INDEX, SENTINELS, first_node

#: rows per Batch: bounds memory and the size of one warehouse transaction. Each batch has a
#: fixed cost in the warehouse (probe, transaction, bookkeeping): 100,000 rows took about half
#: the load CPU of 20,000 (bench/README.md), for about 130 MB more peak memory.
BATCH_ROWS = 100_000
_TIME_COLUMNS = ("submit_time", "start_time", "end_time")
_STEP_ID = JOB_INDEX["step_id"]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)

PARSABLE_FIELDS = (
    "JobIDRaw",
    "JobID",
    "Cluster",
    "User",
    "Account",
    "Partition",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "AllocCPUS",
    "UserCPU",
    "SystemCPU",
    "ElapsedRaw",
    "State",
    "ExitCode",
    "TRESUsageInTot",
    "TRESUsageOutTot",
    "ReqCPUS",
)


class SacctError(RuntimeError):
    pass


# ---- helpers -------------------------------------------------------------------------------
def _num(v: Any) -> float | None:
    """A number from 0.0.38 (plain) or 0.0.39+ ({"set", "infinite", "number"}) layouts."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return None if v in SENTINELS else v
    if isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v.strip()):
        n = float(v) if "." in v else int(v)
        return None if n in SENTINELS else n
    raise ValueError(f"not a number: {v!r}")


def _ts(v: Any) -> datetime | None:
    n = _num(v)
    if not n or n <= 0:
        return None
    return datetime.fromtimestamp(n, tz=timezone.utc)


def _secs(v: Any) -> float | None:
    """{"seconds", "microseconds"} (CPU times) or a plain number."""
    if v is None:
        return None
    if isinstance(v, dict) and "seconds" in v:
        s, us = _num(v.get("seconds")) or 0, _num(v.get("microseconds")) or 0
        return float(s) + float(us) / 1e6
    n = _num(v)
    return None if n is None else float(n)


def _state(v: Any) -> str | None:
    if isinstance(v, dict):
        v = v.get("current")
    if isinstance(v, list):
        v = v[0] if v else None
    return str(v).upper() if v else None


def _exit(v: Any) -> int | None:
    if isinstance(v, dict):
        rc = v.get("return_code")
        n = _num(rc)
        return None if n is None else int(n)
    return None


def _tres_count(items: Any, type_: str, name: str | None = None) -> float | None:
    if not isinstance(items, list):
        return None
    for t in items:
        if isinstance(t, dict) and t.get("type") == type_ and (name is None or t.get("name") == name):
            n = _num(t.get("count"))
            if n is not None and n >= 0:
                return n
    return None


def _step_id(raw: Any) -> str:
    s = str(raw)
    return s.split(".", 1)[1] if "." in s else s


def _row(**kw: Any) -> dict[str, Any]:
    row = dict.fromkeys(JOB.names)
    row.update(kw)
    return row


# ---- --json ---------------------------------------------------------------------------------
#: characters read from sacct's output at a time; with one job being decoded this bounds memory
READ_CHARS = 1 << 22
#: a job object longer than this (a job with tens of thousands of steps) is taken as malformed,
#: so a broken document can never pull the rest of a large output into memory
MAX_JOB_CHARS = 1 << 26
_JOBS_KEY = re.compile(r'"jobs"\s*:\s*\[')


class _Stream:
    """A window onto a text stream: ``buf`` holds characters from absolute offset ``base``."""

    def __init__(self, f: TextIO) -> None:
        self.f, self.buf, self.base, self.eof = f, "", 0, False
        self.tail = ""  # the last characters read, whatever has been dropped

    def more(self) -> bool:
        chunk = "" if self.eof else self.f.read(READ_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        self.tail = (self.tail + chunk[-2000:])[-2000:]
        return True

    def drop_before(self, pos: int) -> int:
        """Forget characters before ``pos`` (a buffer index); returns the new index of ``pos``."""
        if pos < READ_CHARS:
            return pos
        self.buf, self.base = self.buf[pos:], self.base + pos
        return 0


def _jobs_start(st: _Stream) -> int | None:
    """Buffer index just after '"jobs": [', or None for a document without jobs (raises when
    it is not a sacct document at all)."""
    while True:
        m = _JOBS_KEY.search(st.buf)
        if m:
            return m.end()
        if len(st.buf) > MAX_JOB_CHARS or not st.more():
            break
    try:
        doc = json.loads(st.buf)
    except json.JSONDecodeError as e:
        raise _FieldError("document", f"not JSON: {e.msg} at offset {e.pos}", e.pos) from e
    if isinstance(doc, dict) and not doc.get("jobs"):
        return None
    raise _FieldError("jobs", "no jobs array", 0)


def _next_job(st: _Stream, dec: json.JSONDecoder, pos: int) -> tuple[int, Any, int] | None:
    """(buffer index, decoded value, end index) of the jobs array's next element from buffer
    index ``pos`` (between elements), or None at the array's end; raises _FieldError when the
    document cannot be read on."""
    while True:
        while True:
            while pos < len(st.buf) and st.buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(st.buf) or not st.more():
                break
        if pos >= len(st.buf):
            raise _FieldError(
                "jobs", f"document ends inside the jobs array at offset {st.base + pos}", st.base + pos, st.tail
            )
        if st.buf[pos] == "]":
            return None
        try:
            job, end = dec.raw_decode(st.buf, pos)
        except json.JSONDecodeError as e:
            # most often the object runs past what has been read so far: read on and retry
            if len(st.buf) - pos < MAX_JOB_CHARS and st.more():
                continue
            raise _FieldError(
                "jobs", f"not JSON at offset {st.base + e.pos}: {e.msg}", st.base + pos, st.buf[pos : pos + 2000]
            ) from e
        return pos, job, end


def _jobs_with_offsets(f: TextIO) -> Iterator[tuple[int, Any]]:
    """(character offset, decoded job) for each element of the document's "jobs" array, reading
    ``f`` a bounded piece at a time (the generic path: one ``raw_decode`` per job).

    Decoding job by job keeps a bad element from hiding the good ones and gives every job an
    exact offset in sacct's output. A document that cannot be read on raises _FieldError."""
    dec = json.JSONDecoder()
    st = _Stream(f)
    pos = _jobs_start(st)
    while pos is not None:
        nxt = _next_job(st, dec, pos)
        if nxt is None:
            return
        at, job, end = nxt
        yield st.base + at, job
        pos = st.drop_before(end)


def _job_items(job: Any, offset: int, source: str) -> Iterator[tuple[dict, str] | Reject]:
    """The rows of one decoded job (the generic path), or its reject."""
    where = f"{source}:offset {offset}"
    try:
        job_rows = list(_json_job(job))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        field = getattr(e, "field", None) or (e.args[0] if isinstance(e, KeyError) else "job")
        yield Reject(RecordKind.JOB, source, where, str(field), f"malformed: {e}", json.dumps(job, default=str)[:2000])
        return
    for _k, r in job_rows:
        yield r, (where if not r["step_id"] else f"{where} step {r['step_id']}")


@dataclass
class JobBlock:
    """JOB rows decoded by the fast path: tuples in JOB's column order, times as integer
    microseconds since the epoch, each with its location."""

    rows: list[tuple]
    locations: list[str]

    def items(self) -> Iterator[tuple[dict, str]]:
        """The rows as the generic path gives them (dicts, times as UTC datetimes)."""
        for r, loc in zip(self.rows, self.locations):
            row = dict(zip(JOB.names, r))
            for c in _TIME_COLUMNS:
                if row[c] is not None:
                    row[c] = _EPOCH + timedelta(microseconds=row[c])
            yield row, loc


Part = JobBlock | Reject | tuple[dict, str]


class RowStream:
    """The rows of one sacct output, in order. Iterated, it gives (row, location) per job and
    step, and Rejects, as it always did; ``stream_batches`` takes its blocks of fast-decoded rows
    whole (``parts``), with no dict per row. It reads its input once."""

    def __init__(self, parts: Iterator[Part]) -> None:
        self._parts = parts

    def parts(self) -> Iterator[Part]:
        return self._parts

    def __iter__(self) -> Iterator[tuple[dict, str] | Reject]:
        for p in self._parts:
            if type(p) is JobBlock:
                yield from p.items()
            else:
                yield p


def _fast_parts(f: TextIO, source: str) -> Iterator[Part]:
    """The jobs array cut into elements by the block scanner (jsonscan) and each decoded into
    typed structs (sacct_typed). An element that either of them refuses (or junk between
    elements) goes through ``_next_job`` and ``_json_job`` exactly as in the generic path, so
    its rows, its reject and its offset are the same; when that decode ends elsewhere than the
    scan said, the scan starts again after it."""
    dec = json.JSONDecoder()
    decode, job_rows, refused = typed.decoder.decode, typed.job_rows, (*typed.DECODE_ERRORS, typed.Fallback)
    st = _Stream(f)
    pos = _jobs_start(st)
    if pos is None:
        return
    prefix = f"{source}:offset "
    rows: list[tuple] = []
    locs: list[str] = []
    while True:
        pos = st.drop_before(pos)
        # surrogatepass: a lone surrogate gives bytes the typed decoder refuses, not an error here
        block = st.buf[pos:].encode("utf-8", "surrogatepass")
        sc = scan_array(block)
        rescan = False
        if len(sc.ends):
            mv = memoryview(block)
            ends = sc.ends.tolist()
            char_starts = char_offsets(block, sc.starts).tolist()
            char_ends = char_offsets(block, sc.ends).tolist()
            prev = prev_c = 0
            for s, e, cs, ce in zip(sc.starts.tolist(), ends, char_starts, char_ends):
                jr = None
                if not block[prev:s].strip(b" \t\r\n,"):
                    try:
                        jr = job_rows(decode(mv[s:e]))
                    except refused:
                        pass
                if jr is None:
                    if rows:
                        yield JobBlock(rows, locs)
                        rows, locs = [], []
                    nxt = _next_job(st, dec, pos + prev_c)
                    if nxt is None:
                        return
                    at, job, end = nxt
                    yield from _job_items(job, st.base + at, source)
                    if end != pos + ce:  # the scan and the decoder disagree: scan again after it
                        pos, rescan = end, True
                        break
                elif jr:
                    where = prefix + str(st.base + pos + cs)
                    rows.extend(jr)
                    locs.append(where)
                    for r in jr[1:]:
                        locs.append(f"{where} step {r[_STEP_ID]}")
                prev, prev_c = e, ce
            else:
                pos += char_ends[-1]
        if rows:
            yield JobBlock(rows, locs)
            rows, locs = [], []
        if rescan or sc.why is Stop.MORE and len(st.buf) - pos < MAX_JOB_CHARS and st.more():
            continue
        # the array's end, something the scan leaves to the generic decoder, or no more input
        nxt = _next_job(st, dec, pos)
        if nxt is None:
            return
        at, job, end = nxt
        yield from _job_items(job, st.base + at, source)
        pos = end


def _json_parts(
    parts: Callable[[TextIO, str], Iterator[Part]], f: TextIO, source: str, report: WindowReport | None
) -> Iterator[Part]:
    try:
        yield from parts(f, source)
    except _FieldError as e:
        if report is not None:
            report.fail(f"malformed document: {e}")
        yield Reject(RecordKind.JOB, source, f"{source}:offset {e.offset}", e.field, f"malformed document: {e}", e.raw)


def _generic_parts(f: TextIO, source: str) -> Iterator[Part]:
    for offset, job in _jobs_with_offsets(f):
        yield from _job_items(job, offset, source)


def iter_json_rows(f: TextIO, source: str, report: WindowReport | None = None) -> RowStream:
    """(row, location) per job and step, or a Reject, from one `sacct --json` output read from ``f``.

    A job is located as 'SOURCE:offset N', N the character offset of its object in the output;
    its steps as 'SOURCE:offset N step S'. A document that breaks off ends with one reject
    ("malformed document") and marks ``report`` incomplete.
    """
    return RowStream(_json_parts(_fast_parts, f, source, report))


def iter_json_rows_generic(f: TextIO, source: str, report: WindowReport | None = None) -> RowStream:
    """As ``iter_json_rows``, one ``json`` decode and one dict per job: the reference the fast
    path is tested against, and what it hands the jobs it does not take."""
    return RowStream(_json_parts(_generic_parts, f, source, report))


def _split(items: Iterable[tuple[dict, str] | Reject]) -> tuple[list[dict], list[str], list[Reject]]:
    rows: list[dict] = []
    locs: list[str] = []
    rejects: list[Reject] = []
    for item in items:
        if isinstance(item, Reject):
            rejects.append(item)
        else:
            rows.append(item[0])
            locs.append(item[1])
    return rows, locs, rejects


def parse_json_document(text: str, source: str) -> tuple[list[dict], list[str], list[Reject]]:
    """Job and step rows (with a location each) and rejects from one `sacct --json` output."""
    return _split(iter_json_rows(io.StringIO(text), source))


class _FieldError(ValueError):
    def __init__(self, field: str, msg: str, offset: int = 0, raw: str = "") -> None:
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.offset = offset
        self.raw = raw


def _get(d: dict, field: str, conv, *path: str) -> Any:
    v: Any = d
    for p in path:
        v = v.get(p) if isinstance(v, dict) else None
    try:
        return conv(v)
    except (ValueError, TypeError) as e:
        raise _FieldError(field, str(e)) from e


def _json_job(job: dict) -> Iterator[tuple[int | None, dict]]:
    if not isinstance(job, dict):
        raise _FieldError("job", "not an object")
    jid = job.get("job_id")
    if not isinstance(jid, (int, str)) or str(jid) == "":
        raise _FieldError("job_id", f"missing or not an id: {jid!r}")
    jid = str(jid)
    cluster = job.get("cluster") or ""
    start = _get(job, "start_time", _ts, "time", "start")
    end = _get(job, "end_time", _ts, "time", "end")
    if start is None and end is None:
        return  # pending: nothing to account yet
    # v0.0.45 (26.05): the run's SLUID ('' or null when unset; earlier layouts have none)
    sluid = valid_sluid(job.get("sluid"))
    common = dict(
        batch_system="slurm",
        cluster=cluster,
        job_id=jid,
        job_identity=job_identity("slurm", cluster, jid, sluid),
        sluid=sluid,
        user_name=job.get("user"),
        account=job.get("account"),
        partition=job.get("partition"),
        submit_time=_get(job, "submit_time", _ts, "time", "submission"),
    )
    cores = _get(job, "allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "allocated")
    if cores is None and start is None:
        # a launch failure may have no allocation; its wall is 0, so the cores it asked for
        # change no efficiency and keep the job countable
        cores = _get(job, "allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "requested")
    nodes = job.get("nodes") if isinstance(job.get("nodes"), str) else None
    steps = job.get("steps") or []
    if not isinstance(steps, list):
        raise _FieldError("steps", "not a list")
    step_rows: list[tuple[int, dict]] = []
    for k, s in enumerate(steps):
        if not isinstance(s, dict):
            raise _FieldError(f"steps[{k}]", "not an object")
        sid = _step_id((s.get("step") or {}).get("id", s.get("step", {}).get("name")))
        s_nodes = s.get("nodes") or {}
        s_range = s_nodes.get("range") if isinstance(s_nodes, dict) else None
        s_list = s_nodes.get("list") if isinstance(s_nodes, dict) else None
        s_cores = _get(s, f"steps[{k}].allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "allocated")
        user = _get(s, f"steps[{k}].cpu_user_seconds", _secs, "time", "user")
        system = _get(s, f"steps[{k}].cpu_system_seconds", _secs, "time", "system")
        rin = _get(s, f"steps[{k}].bytes_read", lambda t: _tres_count(t, "fs", "disk"), "tres", "requested", "total")
        rout = _get(s, f"steps[{k}].bytes_written", lambda t: _tres_count(t, "fs", "disk"), "tres", "consumed", "total")
        step_rows.append(
            (
                k,
                _row(
                    **common,
                    step_id=sid,
                    node=(s_list[0] if s_list else first_node(s_range or nodes)),
                    node_list=s_range or nodes,
                    start_time=_get(s, f"steps[{k}].start_time", _ts, "time", "start"),
                    end_time=_get(s, f"steps[{k}].end_time", _ts, "time", "end"),
                    allocated_cores=int(s_cores) if s_cores else (int(cores) if cores else None),
                    cpu_user_seconds=user,
                    cpu_system_seconds=system,
                    wall_seconds=_get(s, f"steps[{k}].wall_seconds", _secs, "time", "elapsed"),
                    state=_state(s.get("state")),
                    exit_code=_exit(s.get("exit_code")),
                    bytes_read=int(rin) if rin is not None else None,
                    bytes_written=int(rout) if rout is not None else None,
                ),
            )
        )

    def total(col: str) -> float | int | None:
        vals = [r[col] for _, r in step_rows if r[col] is not None]
        return sum(vals) if vals else None

    user_job = _get(job, "cpu_user_seconds", _secs, "time", "user") or 0.0
    sys_job = _get(job, "cpu_system_seconds", _secs, "time", "system") or 0.0
    yield (
        None,
        _row(
            **common,
            step_id="",
            node=first_node(nodes),
            node_list=nodes,
            start_time=start,
            end_time=end,
            allocated_cores=int(cores) if cores else None,
            # sacct's TotalCPU of a job is the sum over its steps; 22.05 leaves the job's own at 0
            cpu_user_seconds=total("cpu_user_seconds") if step_rows else user_job,
            cpu_system_seconds=total("cpu_system_seconds") if step_rows else sys_job,
            wall_seconds=_get(job, "wall_seconds", _secs, "time", "elapsed") if start is not None else 0.0,
            state=_state(job.get("state")),
            exit_code=_exit(job.get("exit_code")),
            bytes_read=total("bytes_read"),
            bytes_written=total("bytes_written"),
        ),
    )
    yield from step_rows


# ---- --parsable2 ----------------------------------------------------------------------------
_CPU_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def _cpu_time(s: str) -> float | None:
    """sacct's [DD-[HH:]]MM:SS[.mmm] CPU time in seconds."""
    if s == "":
        return None
    m = _CPU_RE.match(s)
    if not m:
        raise ValueError(f"not a CPU time: {s!r}")
    d, h, mi, sec = m.groups()
    return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi) * 60 + float(sec)


def _tres_str(s: str, key: str = "fs/disk") -> int | None:
    for part in s.split(","):
        k, _, v = part.partition("=")
        if k == key:
            return int(v)
    return None


def _epoch(s: str) -> datetime | None:
    if s in ("", "Unknown", "None", "0"):
        return None
    n = int(s)
    return None if n in SENTINELS else datetime.fromtimestamp(n, tz=timezone.utc)


def _count(s: str) -> int | None:
    n = int(s) if s else None
    return None if n in SENTINELS else n


def parse_parsable2(lines: list[str], source: str, first_line: int = 1) -> tuple[list[dict], list[str], list[Reject]]:
    """Rows from `sacct --parsable2 --noheader -o <PARSABLE_FIELDS>` with SLURM_TIME_FORMAT=%s."""
    rows: list[dict] = []
    locs: list[str] = []
    rejects: list[Reject] = []
    jobs: dict[str, dict] = {}
    for n, line in enumerate(lines, start=first_line):
        line = line.rstrip("\n")
        if not line:
            continue
        where = f"{source}:line {n}"
        cols = line.split("|")
        if len(cols) != len(PARSABLE_FIELDS):
            rejects.append(
                Reject(
                    RecordKind.JOB,
                    source,
                    where,
                    "line",
                    f"{len(cols)} fields, expected {len(PARSABLE_FIELDS)}",
                    line[:2000],
                )
            )
            continue
        c = dict(zip(PARSABLE_FIELDS, cols))
        field = "JobIDRaw"
        try:
            raw = c["JobIDRaw"]
            jid, _, step = raw.partition(".")
            if not jid.isdigit():
                raise ValueError(f"not a job id: {raw!r}")
            field = "Start"
            start = _epoch(c["Start"])
            field = "End"
            if start is None and _epoch(c["End"]) is None:
                continue  # pending
            vals = {}
            for field, key, conv in (
                ("submit_time", "Submit", _epoch),
                ("end_time", "End", _epoch),
                ("allocated_cores", "AllocCPUS", _count),
                ("cpu_user_seconds", "UserCPU", _cpu_time),
                ("cpu_system_seconds", "SystemCPU", _cpu_time),
                ("wall_seconds", "ElapsedRaw", _count),
                ("exit_code", "ExitCode", lambda s: int(s.split(":")[0]) if s else None),
                ("bytes_read", "TRESUsageInTot", _tres_str),
                ("bytes_written", "TRESUsageOutTot", _tres_str),
            ):
                vals[field] = conv(c[key])
            if start is None:
                # never started (launch failure): no wall; cores as asked, see _json_job
                field = "allocated_cores"
                vals["wall_seconds"] = 0.0
                vals["allocated_cores"] = vals["allocated_cores"] or _count(c["ReqCPUS"])
        except (ValueError, TypeError) as e:
            rejects.append(Reject(RecordKind.JOB, source, where, field, f"malformed: {e}", line[:2000]))
            continue
        cluster = c["Cluster"]
        if step:
            parent = jobs.get(jid, {})
            vals.setdefault("submit_time", parent.get("submit_time"))
            if vals["submit_time"] is None:
                vals["submit_time"] = parent.get("submit_time")
        row = _row(
            batch_system="slurm",
            cluster=cluster,
            job_id=jid,
            step_id=step,
            job_identity=job_identity("slurm", cluster, jid),
            user_name=c["User"] or jobs.get(jid, {}).get("user_name"),
            account=c["Account"] or jobs.get(jid, {}).get("account"),
            partition=c["Partition"] or jobs.get(jid, {}).get("partition"),
            node=first_node(c["NodeList"]),
            node_list=c["NodeList"] or None,
            start_time=start,
            state=(c["State"].split(" ")[0] or None),
            **vals,
        )
        if not step:
            jobs[jid] = row
        rows.append(row)
        locs.append(where)
    # the job line's bytes: sum of its steps, as for --json
    sums: dict[str, list[int]] = {}
    for r in rows:
        if r["step_id"]:
            s = sums.setdefault(r["job_id"], [0, 0, 0])
            if r["bytes_read"] is not None:
                s[0] += r["bytes_read"]
                s[2] = 1
            if r["bytes_written"] is not None:
                s[1] += r["bytes_written"]
                s[2] = 1
    for r in rows:
        if not r["step_id"] and r["job_id"] in sums and sums[r["job_id"]][2]:
            r["bytes_read"], r["bytes_written"] = sums[r["job_id"]][0], sums[r["job_id"]][1]
    return rows, locs, rejects


def iter_parsable2_rows(
    f: TextIO, source: str, report: WindowReport | None = None, block_rows: int = 20_000
) -> Iterator[tuple[dict, str] | Reject]:
    """parse_parsable2 over ``f`` in blocks of about ``block_rows`` lines, cut where a job line
    starts (a job and its steps stay together: the job's bytes are the sum of its steps)."""
    block: list[str] = []
    first = n = 1
    last = ""
    for n, line in enumerate(f, start=1):
        last = line
        if len(block) >= block_rows and "." not in line.split("|", 1)[0]:
            yield from _parsable2_block(block, source, first)
            block, first = [], n
        block.append(line)
    if last and not last.endswith("\n"):
        if report is not None:
            report.fail(f"output ends inside line {n}")
        yield Reject(
            RecordKind.JOB,
            source,
            f"{source}:line {n}",
            "line",
            "malformed document: output ends inside the line",
            last[:2000],
        )
        block.pop()
    yield from _parsable2_block(block, source, first)


def _parsable2_block(lines: list[str], source: str, first: int) -> Iterator[tuple[dict, str] | Reject]:
    rows, locs, rejects = parse_parsable2(lines, source, first)
    yield from rejects
    yield from zip(rows, locs)


# ---- running sacct --------------------------------------------------------------------------
@dataclass
class WindowReport:
    """What one sacct call delivered: complete, or the problems that make it be asked again."""

    label: str
    start: float | None = None
    problems: list[str] = field(default_factory=list)

    def fail(self, why: str) -> None:
        self.problems.append(why)

    @property
    def complete(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        return f"{self.label}: {'; '.join(self.problems)}"


@dataclass
class SacctRunner:
    """Runs sacct; `fmt` is 'json', 'parsable2', or 'auto' (json, falling back once).

    sacct's output goes to a temporary file and is parsed from there a piece at a time, so
    memory does not grow with the size of the window."""

    sacct: str = "sacct"
    fmt: str = "auto"
    clusters: str | None = None
    env: dict[str, str] | None = None
    timeout: float = 600

    def _run(self, args: list[str], report: WindowReport, extra_env: dict[str, str] | None = None) -> TextIO:
        """sacct's stdout, rewound; a non-zero exit or a timeout is recorded in ``report``."""
        env = dict(self.env if self.env is not None else os.environ)
        env.update(extra_env or {})
        cmd = [self.sacct, "--allusers", *(["--clusters", self.clusters] if self.clusters else []), *args]
        out = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
            try:
                rc = subprocess.run(cmd, stdout=out, stderr=err, env=env, timeout=self.timeout).returncode
            except subprocess.TimeoutExpired:
                report.fail(f"sacct timed out after {self.timeout:g} s")
            except (OSError, subprocess.SubprocessError) as e:
                out.close()
                raise SacctError(f"{' '.join(cmd)}: {e}") from e
            else:
                if rc != 0:
                    err.seek(0)
                    report.fail(f"{' '.join(cmd)} exited {rc}: {err.read(500).strip()}")
        out.seek(0)
        return out

    def _json_works(self, out: TextIO, report: WindowReport) -> bool:
        head = out.read(64).lstrip()
        out.seek(0)
        if head.startswith("{"):
            return True
        if self.fmt == "json":
            report.fail(f"sacct --json printed no JSON: {head[:60]!r}")
        return False

    def rows(self, selection: list[str], report: WindowReport) -> RowStream:
        """Rows and rejects of one sacct call; problems that make the output incomplete go into
        ``report`` and, so that they are seen in the warehouse too, into one reject."""
        return RowStream(self._parts(selection, report))

    def _parts(self, selection: list[str], report: WindowReport) -> Iterator[Part]:
        if self.fmt in ("auto", "json"):
            source = f"sacct --json {report.label}"
            out = self._run(["--json", *selection], report)
            if self._json_works(out, report) or self.fmt == "json":
                self.fmt = "json"
                with out:
                    yield from iter_json_rows(out, source, report).parts()
                yield from self._call_rejects(source, report)
                return
            out.close()
            self.fmt = "parsable2"  # this sacct has no JSON output: stay on the fallback
            report.problems.clear()
        source = f"sacct --parsable2 {report.label}"
        with self._run(
            ["--parsable2", "--noheader", "--noconvert", "-o", ",".join(PARSABLE_FIELDS), *selection],
            report,
            {"SLURM_TIME_FORMAT": "%s"},
        ) as out:
            yield from iter_parsable2_rows(out, source, report)
        yield from self._call_rejects(source, report)

    @staticmethod
    def _call_rejects(source: str, report: WindowReport) -> Iterator[Reject]:
        calls = [p for p in report.problems if not p.startswith("malformed document")]
        if calls:
            yield Reject(
                RecordKind.JOB, source, f"{source}:offset 0", "document", f"incomplete output: {'; '.join(calls)}", ""
            )

    def query(self, selection: list[str], label: str) -> tuple[list[dict], list[str], list[Reject]]:
        """All rows of one call at once (small selections and tests)."""
        return _split(self.rows(selection, WindowReport(label)))


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def _micros(t: datetime | None) -> int | None:
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return (t - _EPOCH) // _ONE_US


_TIME_INDEX = tuple(JOB_INDEX[c] for c in _TIME_COLUMNS)
_KEY_INDEX = tuple(JOB_INDEX[c] for c in ("cluster", "job_id", "step_id"))


def _as_tuple(row: dict) -> tuple:
    """A generic-path row in the fast path's form (JOB's column order, times in microseconds)."""
    values = [row[c] for c in JOB.names]
    for i in _TIME_INDEX:
        values[i] = _micros(values[i])
    return tuple(values)


def _tuple_batches(
    rows: list[tuple], locs: list[str], rejects: list[Reject], source: str, batch_rows: int
) -> Iterator[Batch]:
    if not rows:
        if rejects:
            yield Batch(RecordKind.JOB, JOB.empty_table(), source, locations=[], rejects=rejects)
        return
    columns = list(zip(*rows))  # transposed in C, not one Python lookup per cell
    arrays = [pa.array(c, f.type) for c, f in zip(columns, JOB)]
    key = pc.binary_join_element_wise(*(arrays[i] for i in _KEY_INDEX), "\x1f")
    if pc.count_distinct(key).as_py() < len(rows):
        # a running job seen twice in one window (overlap): keep the last, by natural key
        last = {k: i for i, k in enumerate(zip(*(columns[i] for i in _KEY_INDEX)))}
        keep = sorted(last.values())
        arrays = [a.take(keep) for a in arrays]
        locs = [locs[i] for i in keep]
    table = pa.Table.from_arrays(arrays, schema=JOB)
    for start in range(0, len(locs), batch_rows):
        yield Batch(
            RecordKind.JOB,
            table.slice(start, batch_rows),
            source,
            locations=locs[start : start + batch_rows],
            rejects=rejects if start == 0 else [],
        )


def to_batches(
    rows: list[dict], locs: list[str], rejects: list[Reject], source: str, batch_rows: int = BATCH_ROWS
) -> Iterator[Batch]:
    """Cut rows into bounded JOB batches; the parse rejects travel with the first one."""
    yield from _tuple_batches([_as_tuple(r) for r in rows], locs, rejects, source, batch_rows)


def stream_batches(
    items: Iterable[tuple[dict, str] | Reject], source: str, batch_rows: int = BATCH_ROWS
) -> Iterator[Batch]:
    """JOB batches of at most ``batch_rows`` rows as the items arrive; a row seen again in a
    later batch replaces the earlier one when loaded (the warehouse upserts by natural key).
    A RowStream's fast-decoded blocks go in whole."""
    parts: Iterable[Part] = items.parts() if isinstance(items, RowStream) else items
    rows: list[tuple] = []
    locs: list[str] = []
    rejects: list[Reject] = []
    for p in parts:
        if type(p) is JobBlock:
            rows.extend(p.rows)
            locs.extend(p.locations)
        elif isinstance(p, Reject):
            rejects.append(p)
        else:
            rows.append(_as_tuple(p[0]))
            locs.append(p[1])
        while len(rows) >= batch_rows:
            yield from _tuple_batches(rows[:batch_rows], locs[:batch_rows], rejects, source, batch_rows)
            rows, locs, rejects = rows[batch_rows:], locs[batch_rows:], []
    yield from _tuple_batches(rows, locs, rejects, source, batch_rows)


_JOB_END = JOB_INDEX["end_time"]


def _track(items: RowStream, pending: set[str]) -> RowStream:
    """Keep ``pending`` (jobs seen unfinished) up to date as the rows pass."""

    def parts() -> Iterator[Part]:
        for p in items.parts():
            if type(p) is JobBlock:
                for r in p.rows:
                    if not r[3]:
                        (pending.add if r[_JOB_END] is None else pending.discard)(r[2])
            elif not isinstance(p, Reject) and not p[0]["step_id"]:
                (pending.add if p[0]["end_time"] is None else pending.discard)(p[0]["job_id"])
            yield p

    return RowStream(parts())


def sacct_batches(
    runner: SacctRunner,
    start: float,
    end: float,
    window: float,
    unfinished: list[str],
    on_window: Callable[[float, list[str]], None] | None = None,
    batch_rows: int = BATCH_ROWS,
    retry: list[WindowReport] | None = None,
) -> Iterator[Batch]:
    """JOB batches for [start, end) in windows of `window` seconds, plus `unfinished` job ids.

    `on_window(watermark, still_unfinished_ids)` is called after each window's batches were
    handed on. The watermark is the window's end, unless a window's output was incomplete
    (a broken document, a non-zero exit, a timeout): from then on it stays at the start of the
    first such window, so the next run asks for it again. Those windows are appended to `retry`.
    """
    pending = set(unfinished)
    held: float | None = None
    # jobs seen unfinished last time: ask for them by id (no time window), in bounded chunks
    ids = sorted(pending, key=lambda s: (len(s), s))
    for k in range(0, len(ids), 500):
        chunk = ids[k : k + 500]
        report = WindowReport(f"jobs {chunk[0]}..{chunk[-1]}")
        items = _track(runner.rows(["--jobs", ",".join(chunk)], report), pending)
        yield from stream_batches(items, f"sacct:{report.label}", batch_rows)
        if not report.complete:
            pending.update(chunk)  # not seen whole: ask for all of them again
            if retry is not None:
                retry.append(report)
    t = start
    while t < end:
        w_end = min(t + window, end)
        report = WindowReport(f"{_stamp(t)}..{_stamp(w_end)}", start=t)
        items = _track(runner.rows(["--starttime", _stamp(t), "--endtime", _stamp(w_end)], report), pending)
        yield from stream_batches(items, f"sacct:{report.label}", batch_rows)
        if not report.complete:
            held = t if held is None else held
            if retry is not None:
                retry.append(report)
        if on_window:
            on_window(w_end if held is None else held, sorted(pending))
        t = w_end
