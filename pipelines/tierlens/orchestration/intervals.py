"""Selecting one data interval's rows: what makes every ingest task idempotent for its interval.

A task for [start, end) keeps the rows that belong to it deterministically (a job by the interval
its ``end_time`` falls in, a file access likewise, a job tag with its job), and the warehouse
upserts by natural key, so rerunning or back-filling an interval never duplicates rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..records import Batch, RecordKind


def utc(t: datetime) -> datetime:
    """A naive time is UTC; an aware one is converted."""
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _in_interval(table: pa.Table, column: str, start: datetime, end: datetime) -> pa.Array:
    col = table.column(column)
    mask = pc.and_(pc.greater_equal(col, pa.scalar(utc(start), col.type)), pc.less(col, pa.scalar(utc(end), col.type)))
    return pc.fill_null(mask, False)


def _job_keys(table: pa.Table) -> list[tuple]:
    cols = [table.column(c).to_pylist() for c in ("batch_system", "cluster", "job_id", "step_id")]
    return list(zip(*cols))


def _take(batch: Batch, mask: pa.Array, source: str) -> Batch | None:
    idx = pc.indices_nonzero(mask).to_pylist() if len(mask) else []
    if not idx:
        return None
    locs = [batch.location(i) for i in idx]
    return Batch(batch.kind, batch.table.take(pa.array(idx, pa.int64())), source, locations=locs)


def interval_batches(batches: Iterable[Batch], start: datetime, end: datetime) -> Iterator[Batch]:
    """Keep the rows of ``batches`` that belong to [start, end): deterministic for the interval.

    job and file_access rows by their ``end_time`` (a job still running has none and waits for
    the interval it ends in); job_tag rows go with a job of the same stream kept here, or, for a
    tag-only stream (a spool), by ``tagged_at``; node and storage_catalog rows always (an
    inventory, upserted). Parse rejects travel in a batch of their own whose identity does not
    depend on the interval, so the warehouse records them once.
    """
    label = f"{utc(start).isoformat()}..{utc(end).isoformat()}"
    kept_jobs: set[tuple] = set()
    saw_jobs = False
    tags: list[Batch] = []
    for b in batches:
        if b.rejects:
            yield Batch(b.kind, b.table.schema.empty_table(), b.source, locations=[], rejects=b.rejects)
        src = f"{b.source}@{label}"
        if b.kind in (RecordKind.JOB, RecordKind.FILE_ACCESS):
            mask = _in_interval(b.table, "end_time", start, end)
            out = _take(b, mask, src)
            if b.kind is RecordKind.JOB:
                saw_jobs = True
                if out is not None:
                    kept_jobs.update(_job_keys(out.table))
            if out is not None:
                yield out
        elif b.kind is RecordKind.JOB_TAG:
            tags.append(b)  # decided once every job of the stream is known
        elif b.table.num_rows:
            yield Batch(b.kind, b.table, b.source, locations=b.locations, row_offset=b.row_offset)
    for b in tags:
        if saw_jobs:
            keys = _job_keys(b.table)
            mask = pa.array([k in kept_jobs or (k[0], k[1], k[2], "") in kept_jobs for k in keys], pa.bool_())
        else:
            mask = _in_interval(b.table, "tagged_at", start, end)
        out = _take(b, mask, f"{b.source}@{label}")
        if out is not None:
            yield out


def interval_folder(base: Path, start: datetime, end: datetime) -> Path:
    """reports/<start>_<end> (UTC dates or hours): one folder per interval, replaced on rerun."""
    fmt = "%Y-%m-%d" if (end - start) >= timedelta(days=1) else "%Y-%m-%dT%H"
    return Path(base) / f"{utc(start).strftime(fmt)}_{utc(end).strftime(fmt)}"
