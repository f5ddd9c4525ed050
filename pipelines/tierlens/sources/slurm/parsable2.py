"""`sacct --parsable2` output to JOB rows: the fallback for a sacct without the JSON data parser.
A fixed list of columns, ``SLURM_TIME_FORMAT=%s`` for epoch times and ``--noconvert`` for plain
byte counts, so nothing locale- or unit-dependent is parsed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TextIO

from ...records import RecordKind, Reject, job_identity
from .rows import job_row
from .values import SENTINELS, first_node
from .window import SACCT_VALUE, WindowReport, output_broke_off

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
                    f"{len(cols)} fields, expected {len(PARSABLE_FIELDS)}: {SACCT_VALUE}",
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
                # never started (launch failure): no wall; cores as asked, see json_job
                field = "allocated_cores"
                vals["wall_seconds"] = 0.0
                vals["allocated_cores"] = vals["allocated_cores"] or _count(c["ReqCPUS"])
        except (ValueError, TypeError) as e:
            rejects.append(Reject(RecordKind.JOB, source, where, field, f"malformed: {e}: {SACCT_VALUE}", line[:2000]))
            continue
        cluster = c["Cluster"]
        if step:
            parent = jobs.get(jid, {})
            vals.setdefault("submit_time", parent.get("submit_time"))
            if vals["submit_time"] is None:
                vals["submit_time"] = parent.get("submit_time")
        row = job_row(
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
        yield output_broke_off(
            report,
            f"output ends inside line {n}",
            source,
            f"{source}:line {n}",
            "line",
            "malformed document: output ends inside the line: sacct's output broke off; the window is asked "
            "for again on the next run",
            last[:2000],
        )
        block.pop()
    yield from _parsable2_block(block, source, first)


def _parsable2_block(lines: list[str], source: str, first: int) -> Iterator[tuple[dict, str] | Reject]:
    rows, locs, rejects = parse_parsable2(lines, source, first)
    yield from rejects
    yield from zip(rows, locs)
