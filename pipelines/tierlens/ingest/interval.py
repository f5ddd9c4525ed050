"""Loading one data interval [start, end) of a source: what every source's interval load calls.

The rows that belong to the interval are kept (intervals.interval_batches) and loaded; while
another process (a transform) holds the warehouse they are landed beside it instead, so an ingest
never waits. What the interval brought, or why nothing, is kept as a source_interval record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from ..pipeline import failure, ingest
from ..records import SOURCE_INTERVAL, Batch, RecordKind
from ..warehouse.landing import drain, is_lock_error, land
from .intervals import interval_batches, utc

log = logging.getLogger("tierlens.ingest")

#: The records an interval is made of; node and storage-catalog rows come with every interval.
INTERVAL_RECORDS = frozenset({"job", "job_tag", "file_access"})

#: Why a source brought nothing for an interval, worked out only when it did (it may read files).
EmptyReason = Callable[[datetime, datetime], str]


class Nothing(str):
    """A reason why an interval loaded nothing, with its outcome (records.SOURCE_INTERVAL_OUTCOMES)."""

    outcome = "no_new_records"

    def __new__(cls, text: str, outcome: str = "no_new_records") -> Nothing:
        self = super().__new__(cls, text)
        self.outcome = outcome
        return self


def record_interval(
    warehouse: Path, source: str, start: datetime, end: datetime, records: int, outcome: str, reason: str | None
) -> None:
    """What the interval brought, as a source_interval record (data_completeness counts the ones
    that loaded nothing); a rerun of the interval replaces its row."""

    row = {
        "source": source,
        "interval_start": utc(start),
        "interval_end": utc(end),
        "records": records,
        "outcome": outcome,
        "reason": reason,
        "recorded_at": datetime.now(timezone.utc),
    }
    ingest(
        [Batch(RecordKind.SOURCE_INTERVAL, pa.Table.from_pylist([row], schema=SOURCE_INTERVAL), f"ingest {source}")],
        warehouse,
    )


class IngestFailed(RuntimeError):
    """An interval a source could not read (a window or file), or whose every record was
    rejected: the task fails with the line `tierlens ingest` prints (pipeline.failure)."""


def load_interval(
    source: str,
    batches: Iterable[Batch],
    warehouse: Path,
    start: datetime,
    end: datetime,
    why_empty: EmptyReason | None = None,
    unreadable: Callable[[], list[str]] | None = None,
    unit: str = "file(s)",
    then: str = "",
) -> dict:
    """Load the interval's batches; while another process (a transform) holds the warehouse, land
    them instead (warehouse/landing.py) and return at once: an ingest never waits for a transform.

    A source that brought no record for the interval says so, and why, in the task log and in the
    result (``loaded_nothing``): a green run that loaded nothing must not pass unnoticed. One
    that could not read a part of it (``unreadable()``, asked once the batches are read: one
    description each, counted in ``unit``) or whose every record was rejected raises
    IngestFailed after loading what it could, so the scheduler runs the interval again."""
    warehouse = Path(warehouse)
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    head = {"source": source, "start": utc(start).isoformat(), "end": utc(end).isoformat()}
    selected = interval_batches(batches, start, end)
    try:
        # wait=0: a busy warehouse (its writer lock held) lands the batches instead of waiting
        landed_before = drain(warehouse, wait=0)  # what an earlier ingest landed goes in first, in order
        summary = ingest(selected, warehouse, wait=0)
    except Exception as e:
        if not is_lock_error(e):
            try:  # the task fails with e; the warehouse keeps that the interval could not be read
                record_interval(warehouse, source, start, end, 0, "unreachable", f"{type(e).__name__}: {e}"[:1000])
            except Exception as also:
                log.warning("%s: could not record the failed interval either: %s", source, also)
            raise
        # the lock is taken when the warehouse opens, before the first batch is read (the
        # interval's source_interval record is not written then: the landed batches say it)
        return head | {"landed": land(selected, warehouse), "warehouse_busy": str(e)[:300]}
    result = head | {
        "batches": summary.batches,
        "rows_in": dict(summary.rows_in),
        "rows_loaded": dict(summary.rows_loaded),
        "rows_rejected": dict(summary.rows_rejected),
        "landed_loaded": landed_before[0],
    }
    records = sum(n for kind, n in summary.rows_in.items() if kind in INTERVAL_RECORDS)
    why_failed = failure(summary, unreadable() if unreadable else (), f"ingest {source}", unit, then)
    if why_failed is not None:
        log.error("%s", why_failed)
        # the warehouse keeps what was read; an interval of which nothing loaded is unreachable
        kept = sum(n for kind, n in summary.rows_loaded.items() if kind in INTERVAL_RECORDS)
        record_interval(warehouse, source, start, end, kept, "loaded" if kept else "unreachable", why_failed[:1000])
        raise IngestFailed(why_failed)
    if not records:
        reason = (why_empty or no_records(source))(utc(start), utc(end))
        log.warning("%s loaded nothing for [%s, %s): %s", source, result["start"], result["end"], reason)
        result["loaded_nothing"] = str(reason)
        record_interval(warehouse, source, start, end, 0, getattr(reason, "outcome", "no_new_records"), str(reason))
    else:
        record_interval(warehouse, source, start, end, records, "loaded", None)
        log.info(
            "%s loaded %s for [%s, %s)",
            source,
            ", ".join(f"{n:,} {kind}" for kind, n in sorted(summary.rows_loaded.items())),
            result["start"],
            result["end"],
        )
    return result


def no_records(source: str) -> EmptyReason:
    return lambda start, end: f"{source} holds no record that ended in the interval"


def interval_text(start: datetime, end: datetime) -> str:
    return f"[{start:%Y-%m-%d %H:%M}, {end:%Y-%m-%d %H:%M}) UTC"


def folder_empty_reason(what: str, folder: Path, pattern: str = "*.parquet") -> EmptyReason:
    """A source that reads a folder: missing, empty, or holding nothing of the interval."""

    def why(start: datetime, end: datetime) -> str:
        if not folder.is_dir():
            return Nothing(
                f"no folder {folder}: {what} has not written there (check the setting that names it)", "not_found"
            )
        if not any(folder.glob(pattern)):
            return Nothing(f"no {pattern} files in {folder}: {what} has written nothing yet", "not_found")
        return f"the files in {folder} hold nothing that ended in {interval_text(start, end)}"

    return why
