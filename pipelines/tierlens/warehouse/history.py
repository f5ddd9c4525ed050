"""The warehouse's history: how far back its raw records go, retention of raw file accesses, and
the record of the last transform (what the hourly run, a back-fill or a full refresh processed).

Raw tables are clustered by day, not partitioned: every load inserts its rows in event-time order
(``end_time``), and the hourly loads arrive in time order, so DuckDB's per-row-group min/max (zone
maps) let a query or a delete by day skip every row group outside it. A retention delete removes
the oldest row groups whole; DuckDB reuses their blocks for the next loads (the file does not
shrink, it stops growing).

Retention applies to ``raw_file_access`` only (the largest table by far) and only after a
successful transform, so the marts have absorbed every row it deletes: the marts keep everything.
Rebuilding the marts from raw after that (``--full-refresh``, or a back-fill of a pruned range)
would replace history with what is left: the commands refuse unless told to accept it.

The state file ``<warehouse>.history.json`` carries a format version (:data:`FORMAT_VERSION`);
this tierlens reads the versions in :data:`READABLE_VERSIONS` and writes the newest.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb

#: Version of the state file; a file of a version not in READABLE_VERSIONS is not read (a newer
#: tierlens wrote it). 2 added which tests a run ran (RunRecord.test_scope) and when every test last
#: passed (History.all_tests_passed_at); a version 1 file reads as runs that ran every test.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
#: The raw table retention applies to, and its event-time column (the one loads are clustered by).
PRUNED_TABLE, PRUNED_COLUMN = "raw_file_access", "end_time"
#: dbt's tables with one row per raw file access (schema, table): retention prunes them with the
#: raw rows, by the same end_time, so a year of accesses is not kept three times over. The marts,
#: and the per-day partials they add up, keep everything.
ACCESS_GRAIN_TABLES = (("intermediate", "int_file_access_reconciled"), ("intermediate", "int_file_access_by_job"))


@dataclass
class RunRecord:
    """One transform: ``kind`` is hourly (plain incremental build), backfill or full_refresh."""

    kind: str
    started_at: str
    finished_at: str = ""
    success: bool = False
    seconds: float = 0.0
    range_start: str | None = None  # back-fill / full refresh: [range_start, range_end)
    range_end: str | None = None
    chunks: int = 1
    chunks_done: int = 0
    models: int = 0
    tests: int = 0
    batches_new: int = 0  # raw batches loaded since the previous successful run
    rows_new: int = 0
    loaded_until: str | None = None  # newest raw_batches.loaded_at this run saw
    failures: list[str] = field(default_factory=list)
    test_scope: str = "all"  # "all": every dbt test; "core": the tests that guard incremental state


@dataclass
class Retention:
    months: int = 0  # 0: keep every raw file access
    pruned_before: str | None = None  # raw file accesses that ended before this are gone
    applied_at: str | None = None
    rows_deleted_last: int = 0
    rows_deleted_total: int = 0


@dataclass
class History:
    format_version: int = FORMAT_VERSION
    last_run: RunRecord | None = None
    last_success: RunRecord | None = None
    retention: Retention = field(default_factory=Retention)
    all_tests_passed_at: str | None = None  # start of the newest successful run that ran every test


class HistoryPruned(RuntimeError):
    """A rebuild from raw would lose mart history that retention already removed from raw."""


def state_path(warehouse: str | Path) -> Path:
    w = Path(warehouse)
    return w.with_name(w.name + ".history.json")


def load_history(warehouse: str | Path) -> History:
    """The state beside ``warehouse``; an empty one if there is none yet.

    Raises ValueError for a file of another format version (never silently forget a pruning), and
    :class:`HistoryDamaged` for one that cannot be read as a history (truncated, corrupted)."""
    path = state_path(warehouse)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return History()
    except ValueError as e:
        raise HistoryDamaged(path, f"not JSON: {e}") from e
    if not isinstance(data, dict):
        raise HistoryDamaged(path, f"a JSON {type(data).__name__}, not an object")
    if data.get("format_version") not in READABLE_VERSIONS:
        raise ValueError(
            f"{path}: format version {data.get('format_version')!r}, this tierlens reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}; upgrade tierlens"
        )
    try:
        return _history_of(data)
    except (TypeError, ValueError, AttributeError) as e:  # a field missing, unknown or of another type
        raise HistoryDamaged(path, f"not a transform history: {e}") from e


def _history_of(data: dict) -> History:
    last_success = _run_of(data.get("last_success"))
    passed_at = data.get("all_tests_passed_at")
    if data["format_version"] == 1 and last_success is not None:
        passed_at = last_success.started_at  # before version 2 every run ran every test
    retention = Retention(**(data.get("retention") or {}))
    if retention.pruned_before is not None:
        datetime.fromisoformat(retention.pruned_before)  # a refusal of a rebuild compares it
    return History(FORMAT_VERSION, _run_of(data.get("last_run")), last_success, retention, passed_at)


def _run_of(data: object) -> RunRecord | None:
    if not data:
        return None
    record = RunRecord(**data)  # type: ignore[arg-type]
    if not isinstance(record.started_at, str) or not isinstance(record.failures, list):
        raise TypeError(f"a run record's started_at or failures of the wrong type: {data!r}"[:300])
    return record


class HistoryDamaged(ValueError):
    """The history file cannot be read. It is not replaced on its own: it holds what raw retention
    deleted (``retention.pruned_before``), which a new, empty history would forget, and a full
    refresh after that would replace the marts' history with what raw has left."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(
            f"the transform history {path} is damaged ({why[:200]}); nothing was run. Move it aside "
            f"(mv {path} {path}.damaged) and run the transform again; if raw retention is on, read "
            f"retention.pruned_before in the damaged file first and back-fill nothing before it"
        )


def save_history(warehouse: str | Path, history: History) -> None:
    """Written aside and renamed: a reader (doctor) never sees half a file."""
    path = state_path(warehouse)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(asdict(history), indent=1))
    except OSError as e:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise OSError(e.errno, f"could not write the transform history {path}: {e.strerror}") from e
    os.replace(tmp, path)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---- what raw holds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RawSpan:
    """The event-time span of the raw records (UTC days), and the newest load.

    oldest_day is the first day any record touches, its start or its end: models file a record
    under either (an access under the day it opened, a job under the day it ended), so a back-fill
    of the whole span must begin at the earliest of both. oldest_file_access_day is by end time,
    the time retention cuts by."""

    oldest_day: date | None
    newest_day: date | None
    oldest_file_access_day: date | None
    loaded_until: datetime | None


def raw_span(con: duckdb.DuckDBPyConnection) -> RawSpan:
    def days(table: str) -> tuple[date | None, date | None, date | None]:
        # least() skips a NULL start or end: a record counts from whichever it has
        row = con.execute(
            f"SELECT min(least(start_time, end_time)), max(end_time), min(end_time) FROM {table}"
        ).fetchone()
        return tuple(v.astimezone(timezone.utc).date() if v is not None else None for v in row)  # type: ignore[return-value]

    jobs, accesses = days("raw_job"), days("raw_file_access")
    lows = [d for d in (jobs[0], accesses[0]) if d]
    highs = [d for d in (jobs[1], accesses[1]) if d]
    loaded = con.execute("SELECT max(loaded_at) FROM raw_batches").fetchone()[0]
    return RawSpan(min(lows, default=None), max(highs, default=None), accesses[2], loaded)


def new_since(con: duckdb.DuckDBPyConnection, since: str | None) -> tuple[int, int, str | None]:
    """Raw batches (and their rows) loaded after ``since`` (ISO time; None: all), and the newest load."""
    where, args = ("WHERE loaded_at > ?", [since]) if since else ("", [])
    batches, rows, newest = con.execute(
        f"SELECT count(*), coalesce(sum(rows_loaded), 0), max(loaded_at) FROM raw_batches {where}", args
    ).fetchone()
    return int(batches), int(rows), newest.astimezone(timezone.utc).isoformat() if newest else since


# ---- retention --------------------------------------------------------------------------------


def retention_cutoff(newest: datetime, months: int) -> datetime:
    """Midnight UTC of the day ``months`` calendar months before ``newest`` (the newest raw file
    access, not the wall clock: a replay of old data is not wiped by the date it is loaded on)."""
    newest = newest.astimezone(timezone.utc)
    y, m = divmod(newest.month - 1 - months, 12)
    year, month = newest.year + y, m + 1
    day = min(newest.day, _days_in_month(year, month))
    return datetime(year, month, day, tzinfo=timezone.utc)


def _days_in_month(year: int, month: int) -> int:
    first_next = date(year + month // 12, month % 12 + 1, 1)
    return (first_next - timedelta(days=1)).day


def apply_retention(warehouse: str | Path, months: int) -> Retention:
    """Delete raw file accesses that ended more than ``months`` months before the newest one, and
    record it. ``months`` 0 keeps everything. Call only after a successful transform."""
    if months < 0:
        raise ValueError(f"raw retention must be 0 (keep everything) or a number of months, not {months}")
    from .lock import warehouse_lock

    with warehouse_lock(warehouse, "retention"):  # a transform that applies it holds it already
        return _apply_retention(warehouse, months)


def _apply_retention(warehouse: str | Path, months: int) -> Retention:
    history = load_history(warehouse)
    r = history.retention
    r.months = months
    r.rows_deleted_last = 0
    if months:
        con = duckdb.connect(str(warehouse))
        try:
            newest = con.execute(f"SELECT max({PRUNED_COLUMN}) FROM {PRUNED_TABLE}").fetchone()[0]
            if newest is not None:
                cutoff = retention_cutoff(newest, months)
                older = con.execute(f"SELECT 1 FROM {PRUNED_TABLE} WHERE {PRUNED_COLUMN} < ? LIMIT 1", [cutoff])
                if older.fetchone():
                    # Recorded before the rows go. Recorded after, a retention killed between its
                    # delete (committed at once) and the record would leave a history that never
                    # admits the deletion: the run again deletes nothing, and a later back-fill
                    # would rebuild the marts without those accesses, unrefused. Killed between
                    # this record and the delete, the next run deletes them.
                    previous = datetime.fromisoformat(r.pruned_before) if r.pruned_before else None
                    r.pruned_before = max(cutoff, previous or cutoff).isoformat()
                    save_history(warehouse, history)
                deleted = con.execute(f"DELETE FROM {PRUNED_TABLE} WHERE {PRUNED_COLUMN} < ?", [cutoff]).fetchone()[0]
                _prune_access_grain_tables(con, cutoff)
                con.execute("CHECKPOINT")
                r.rows_deleted_last = int(deleted)
                r.rows_deleted_total += int(deleted)
        finally:
            con.close()
    r.applied_at = now_iso()
    save_history(warehouse, history)
    return r


def _prune_access_grain_tables(con: duckdb.DuckDBPyConnection, cutoff: datetime) -> None:
    """Delete the rows of the access-grain dbt tables that retention deleted from raw (those dbt
    has built; a table not built yet is skipped). The hourly run never reads that far back."""
    built = {
        (schema, table)
        for schema, table in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    }
    for schema, table in ACCESS_GRAIN_TABLES:
        if (schema, table) in built:
            con.execute(f'DELETE FROM "{schema}"."{table}" WHERE {PRUNED_COLUMN} < ?', [cutoff])


def refuse_if_pruned(warehouse: str | Path, start: datetime | None, accept: bool) -> str | None:
    """Raise HistoryPruned when rebuilding from ``start`` (None: from the beginning) would read raw
    file accesses that retention removed; with ``accept`` return the warning instead."""
    pruned = load_history(warehouse).retention.pruned_before
    if not pruned or (start is not None and start >= datetime.fromisoformat(pruned)):
        return None
    msg = (
        f"raw file accesses that ended before {pruned} were deleted by retention; rebuilding the marts "
        f"from raw {'from ' + start.isoformat() if start else 'from the beginning'} would replace that "
        f"history in the marts with what is left (jobs without their file accesses)"
    )
    if not accept:
        raise HistoryPruned(
            msg + ". Back-fill only after that time, restore the raw file accesses first, "
            "or pass --accept-pruned-history"
        )
    return msg
