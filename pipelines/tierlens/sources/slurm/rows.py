"""JOB rows as the loaders take them: one row built by field name, the fast path's blocks of
tuples, the stream of both one sacct output gives, and Arrow batches of bounded size.

The parsers (json_job, json_stream, parsable2) build rows here; this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...records import JOB, Batch, RecordKind, Reject
from .values import JOB_INDEX

#: rows per Batch: bounds memory and the size of one warehouse transaction. Each batch has a
#: fixed cost in the warehouse (probe, transaction, bookkeeping): 100,000 rows took about half
#: the load CPU of 20,000 (bench/README.md), for about 130 MB more peak memory.
BATCH_ROWS = 100_000
TIME_COLUMNS = ("submit_time", "start_time", "end_time")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)


def job_row(**kw: Any) -> dict[str, Any]:
    """A JOB row by field name; the fields not given are missing (None)."""
    row = dict.fromkeys(JOB.names)
    row.update(kw)
    return row


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
            for c in TIME_COLUMNS:
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


def _micros(t: datetime | None) -> int | None:
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return (t - _EPOCH) // _ONE_US


_TIME_INDEX = tuple(JOB_INDEX[c] for c in TIME_COLUMNS)
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
