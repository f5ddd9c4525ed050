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
damaged element) takes the generic path, one ``json`` decode and ``json_job``, so its rows or
its reject and offset are exactly what they would be without the fast path. A window whose output is incomplete (broken document,
non-zero exit, timeout) keeps its complete jobs, leaves one reject and is asked for again
(``sacct_batches``). Slurm's NO_VAL / INFINITE markers (``SENTINELS``) are missing values; a job
that ended without starting (a launch failure) is loaded with no start and wall 0.

Definitions (docs/architecture.md): CPU is user + system seconds (sacct TotalCPU); cores are AllocCPUS;
bytes read/written are fs/disk of TRESUsageInTot / TRESUsageOutTot (rchar / wchar). A job's
row sums its steps, as sacct's TotalCPU does. Steps keep their own rows (step_id 'batch',
'extern', '0', ...); the whole job has step_id ''. Job ids are raw ids (JobIDRaw), so an array
task has its own id and the identity the plugin put in XRD_MONINFO.

One module per concern, none importing another's callers: this one runs sacct over windows;
json_stream reads a --json output job by job (fast path: jsonscan and sacct_typed; generic path:
json_job); parsable2 reads the fallback; rows builds JOB rows and their Arrow batches; window
holds what one call delivered. The names callers use are imported here.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TextIO

from ...records import Batch, RecordKind, Reject
from .json_stream import iter_json_rows, iter_json_rows_generic, parse_json_document, split_items
from .parsable2 import PARSABLE_FIELDS, iter_parsable2_rows, parse_parsable2
from .rows import BATCH_ROWS, JobBlock, Part, RowStream, stream_batches, to_batches
from .values import JOB_INDEX, first_node
from .window import WindowReport

__all__ = [
    "BATCH_ROWS",
    "PARSABLE_FIELDS",
    "JobBlock",
    "RowStream",
    "SacctError",
    "SacctRunner",
    "WindowReport",
    "first_node",
    "iter_json_rows",
    "iter_json_rows_generic",
    "parse_json_document",
    "parse_parsable2",
    "sacct_batches",
    "stream_batches",
    "to_batches",
]


class SacctError(RuntimeError):
    pass


#: What a sacct without JSON output says when asked for it: an option it does not know (before
#: 20.11), or no serializer / data_parser plugin to write it. Only then does "auto" fall back to
#: --parsable2; any other failure of the --json call (slurmdbd unreachable) is an error.
_NO_JSON = re.compile(r"unrecognized option|invalid option|unknown option|serializer|data.?parser|json|mime", re.I)


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
        report.command = " ".join(cmd)
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
                    said = " / ".join(line.strip() for line in err.read(500).splitlines() if line.strip())
                    report.said = said
                    report.fail(f"{self.sacct} exited {rc}: {said}")
        out.seek(0)
        return out

    def _json_works(self, out: TextIO, report: WindowReport) -> bool | None:
        """True: the output is JSON; False: this sacct has no JSON output (fall back); None: sacct
        failed for another reason (slurmdbd down, a bad option), which no other format cures."""
        head = out.read(64).lstrip()
        out.seek(0)
        if head.startswith("{"):
            return True
        if self.fmt == "json":
            report.fail(f"sacct --json printed no JSON: {head[:60]!r}")
            return False
        if report.problems and not _NO_JSON.search(report.said):
            return None
        if not head and not report.problems:
            # a sacct with JSON prints a document even for no jobs; nothing at all is a wrapper or
            # a sacct that failed quietly, and parsable2 would read its silence as "no jobs"
            report.fail("sacct --json printed nothing and exited 0")
            return None
        return False

    def rows(self, selection: list[str], report: WindowReport) -> RowStream:
        """Rows and rejects of one sacct call; problems that make the output incomplete go into
        ``report`` and, so that they are seen in the warehouse too, into one reject."""
        return RowStream(self._parts(selection, report))

    def _parts(self, selection: list[str], report: WindowReport) -> Iterator[Part]:
        if self.fmt in ("auto", "json"):
            source = f"sacct --json {report.label}"
            out = self._run(["--json", *selection], report)
            works = self._json_works(out, report)
            if works is None:
                # an error, not a format: parsable2 would only turn it into rejects of its lines
                out.close()
                yield from self._call_rejects(source, report)
                return
            if works or self.fmt == "json":
                self.fmt = "json"
                with out:
                    yield from iter_json_rows(out, source, report).parts()
                yield from self._call_rejects(source, report)
                return
            out.close()
            self.fmt = "parsable2"  # this sacct has no JSON output: stay on the fallback
            report.problems.clear()
            report.said = ""
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
                RecordKind.JOB,
                source,
                f"{source}:offset 0",
                "document",
                f"incomplete output: {'; '.join(calls)}; the window is asked for again on the next run "
                "(if sacct keeps failing, run the command in this row's raw text by hand)",
                report.command,
            )

    def query(self, selection: list[str], label: str) -> tuple[list[dict], list[str], list[Reject]]:
        """All rows of one call at once (small selections and tests)."""
        return split_items(self.rows(selection, WindowReport(label)))


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).astimezone().strftime("%Y-%m-%dT%H:%M:%S")


_JOB_ID, _STEP_ID, _JOB_END = (JOB_INDEX[c] for c in ("job_id", "step_id", "end_time"))


def _track(items: RowStream, pending: set[str]) -> RowStream:
    """Keep ``pending`` (jobs seen unfinished) up to date as the rows pass."""

    def parts() -> Iterator[Part]:
        for p in items.parts():
            if type(p) is JobBlock:
                for r in p.rows:
                    if not r[_STEP_ID]:
                        (pending.add if r[_JOB_END] is None else pending.discard)(r[_JOB_ID])
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
    missing: Sequence[str] = (),
) -> Iterator[Batch]:
    """JOB batches for [start, end) in windows of `window` seconds, plus `unfinished` job ids,
    plus `missing` ones (tagged, never accounted): asked for by id, and followed like unfinished
    ones only if sacct returns them unfinished (an id sacct does not know is not asked forever).

    `on_window(watermark, still_unfinished_ids)` is called after each window's batches were
    handed on. The watermark is the window's end, unless a window's output was incomplete
    (a broken document, a non-zero exit, a timeout): from then on it stays at the start of the
    first such window, so the next run asks for it again. Those windows are appended to `retry`.
    """
    pending = set(unfinished)
    followed = set(unfinished)
    held: float | None = None
    # jobs seen unfinished last time: ask for them by id (no time window), in bounded chunks
    ids = sorted(pending | set(missing), key=lambda s: (len(s), s))
    for k in range(0, len(ids), 500):
        chunk = ids[k : k + 500]
        report = WindowReport(f"jobs {chunk[0]}..{chunk[-1]}")
        items = _track(runner.rows(["--jobs", ",".join(chunk)], report), pending)
        yield from stream_batches(items, f"sacct:{report.label}", batch_rows)
        if not report.complete:
            # not seen whole: ask again for those followed (the missing are found again from the tags)
            pending.update(j for j in chunk if j in followed)
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
