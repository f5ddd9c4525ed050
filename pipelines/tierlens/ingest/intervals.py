"""Selecting one data interval's rows: what makes every ingest task idempotent for its interval.

A task for [start, end) keeps the rows that belong to it deterministically (a job by the interval
its ``end_time`` falls in, a file access likewise, a job tag with its job), and the warehouse
upserts by natural key, so rerunning or back-filling an interval never duplicates rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone

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
    return _select(
        batches,
        f"{utc(start).isoformat()}..{utc(end).isoformat()}",
        lambda b: _in_interval(b.table, "end_time", start, end),
        lambda table: _in_interval(table, "tagged_at", start, end),
    )


def ended_batches(batches: Iterable[Batch], ended: set[tuple] | None = None) -> Iterator[Batch]:
    """Keep the rows of jobs that have ended, whenever that was, and the tags of those jobs: for
    jobs asked for by id, which belong to no interval of their own. A job still running is left
    whole (its finished steps too) for the interval it ends in, as interval_batches leaves it.
    ``ended`` receives the (batch_system, cluster, job_id) of each job kept."""
    done: set[tuple] = set() if ended is None else ended

    def rows_of_ended_jobs(b: Batch) -> pa.Array:
        if b.kind is not RecordKind.JOB:
            return pc.is_valid(b.table.column("end_time"))
        keys = _job_keys(b.table)
        finished = pc.is_valid(b.table.column("end_time")).to_pylist()
        done.update(k[:3] for k, f in zip(keys, finished) if f and k[3] == "")
        return pa.array([f and k[:3] in done for k, f in zip(keys, finished)], pa.bool_())

    return _select(batches, "ended", rows_of_ended_jobs, lambda table: pa.array([False] * table.num_rows, pa.bool_()))


def _select(
    batches: Iterable[Batch],
    label: str,
    rows_kept: Callable[[Batch], pa.Array],
    lone_tags_kept: Callable[[pa.Table], pa.Array],
) -> Iterator[Batch]:
    """job and file_access rows by ``rows_kept``; tags with a job of the stream kept, or in a
    stream of tags alone by ``lone_tags_kept``; inventories whole; rejects apart (unlabelled).
    The kept batches' sources end in ``@label``, so each selection is a batch of its own."""
    kept_jobs: set[tuple] = set()
    saw_jobs = False
    tags: list[Batch] = []
    for b in batches:
        if b.rejects:
            yield Batch(b.kind, b.table.schema.empty_table(), b.source, locations=[], rejects=b.rejects)
        src = f"{b.source}@{label}"
        if b.kind in (RecordKind.JOB, RecordKind.FILE_ACCESS):
            out = _take(b, rows_kept(b), src)
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
            mask = lone_tags_kept(b.table)
        out = _take(b, mask, f"{b.source}@{label}")
        if out is not None:
            yield out
