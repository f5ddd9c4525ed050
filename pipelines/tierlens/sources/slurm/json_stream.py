"""One `sacct --json` output read a bounded piece at a time, job by job: the fast path (jsonscan
cuts the jobs array, sacct_typed decodes each job into typed structs) and the generic path
(``json`` and json_job), which takes every job the fast path refuses, so a job's rows, reject and
offset are the same on both."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from ...records import RecordKind, Reject
from . import sacct_typed as typed
from .json_job import FieldError, json_job
from .jsonscan import Stop, char_offsets, scan_array
from .rows import JobBlock, Part, RowStream
from .values import JOB_INDEX
from .window import SACCT_VALUE, WindowReport, output_broke_off

_STEP_ID = JOB_INDEX["step_id"]

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
        raise FieldError("document", f"not JSON: {e.msg} at offset {e.pos}", e.pos) from e
    if isinstance(doc, dict) and not doc.get("jobs"):
        return None
    raise FieldError("jobs", "no jobs array", 0)


def _next_job(st: _Stream, dec: json.JSONDecoder, pos: int) -> tuple[int, Any, int] | None:
    """(buffer index, decoded value, end index) of the jobs array's next element from buffer
    index ``pos`` (between elements), or None at the array's end; raises FieldError when the
    document cannot be read on."""
    while True:
        while True:
            while pos < len(st.buf) and st.buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(st.buf) or not st.more():
                break
        if pos >= len(st.buf):
            raise FieldError(
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
            # one offset in the message and the location: the job's first character, where its
            # raw text starts; how far into it the decoder stopped is said relative to it
            raise FieldError(
                "jobs",
                f"the job at offset {st.base + pos} is cut off or not JSON ({e.msg}, {e.pos - pos} characters into it)",
                st.base + pos,
                st.buf[pos : pos + 2000],
            ) from e
        return pos, job, end


def _jobs_with_offsets(f: TextIO) -> Iterator[tuple[int, Any]]:
    """(character offset, decoded job) for each element of the document's "jobs" array, reading
    ``f`` a bounded piece at a time (the generic path: one ``raw_decode`` per job).

    Decoding job by job keeps a bad element from hiding the good ones and gives every job an
    exact offset in sacct's output. A document that cannot be read on raises FieldError."""
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
        job_rows = list(json_job(job))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        field = getattr(e, "field", None) or (e.args[0] if isinstance(e, KeyError) else "job")
        yield Reject(
            RecordKind.JOB,
            source,
            where,
            str(field),
            f"malformed: {e}: {SACCT_VALUE}",
            json.dumps(job, default=str)[:2000],
        )
        return
    for _k, r in job_rows:
        yield r, (where if not r["step_id"] else f"{where} step {r['step_id']}")


def _fast_parts(f: TextIO, source: str) -> Iterator[Part]:
    """The jobs array cut into elements by the block scanner (jsonscan) and each decoded into
    typed structs (sacct_typed). An element that either of them refuses (or junk between
    elements) goes through ``_next_job`` and ``json_job`` exactly as in the generic path, so
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
    except FieldError as e:
        yield output_broke_off(
            report,
            f"malformed document: {e}",
            source,
            f"{source}:offset {e.offset}",
            e.field,
            f"malformed document: {e}; sacct's output broke off (slurmdbd or sacct stopped, a timeout, a full "
            "disk): the jobs before it are loaded and the window is asked for again on the next run",
            e.raw,
        )


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


def split_items(items: Iterable[tuple[dict, str] | Reject]) -> tuple[list[dict], list[str], list[Reject]]:
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
    return split_items(iter_json_rows(io.StringIO(text), source))
