"""The DuckDB warehouse: raw tables for the canonical records, loaded batch by batch.

A load is one transaction: rule checks, rejects, in-batch de-duplication and the upsert by
natural key either all land or none does. Batches are identified by a hash of their kind, source
and content, so loading the same batch again is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tierlens.records import SPECS, Batch, RecordKind, Reject, conform
from tierlens.warehouse.ddl import (
    BATCHES_TABLE,
    REJECTS_TABLE,
    TABLE_COMMENTS,
    all_tables,
    literal,
    quote,
)
from tierlens.warehouse.migrations import check_schema, check_version, migrate as migrate_schema, tierlens_version
from tierlens.warehouse.prefetch import prefetched
from tierlens.warehouse.sql import DUPLICATE_REASON, ROW, KindSql, kind_sql

log = logging.getLogger(__name__)

_BATCH_VIEW = "__tierlens_batch"
_SKIP_VIEW = "__tierlens_skip"
_REJECT_VIEW = "__tierlens_rejects"
_TAGS_VIEW = "__tierlens_tags"


@dataclass(frozen=True)
class LoadResult:
    """What one ``Warehouse.load`` did. ``rows_in`` = ``rows_loaded`` + ``rows_rejected``.

    ``rows_in`` counts the table's rows plus the source's parse-level rejects; ``rows_rejected``
    counts rule rejects, in-batch duplicates and parse-level rejects.
    """

    kind: RecordKind
    source: str
    batch_id: str
    rows_in: int
    rows_loaded: int
    rows_rejected: int
    already_loaded: bool = False


@dataclass(frozen=True)
class StoredReject:
    """A row of raw_rejects."""

    batch_id: str
    record_kind: str
    source: str
    location: str
    field: str | None
    reason: str
    raw_record: str | None
    rejected_at: datetime


@dataclass(frozen=True)
class ParquetFileBatch:
    """A whole Parquet file of one record kind, written in exactly that kind's schema, loaded
    by DuckDB's Parquet reader instead of through Arrow in Python (``ParquetFileBatch.of``
    decides). Rejected rows are located as '<source>:row N', N counted from the file's first row,
    as for a Batch cut from the file."""

    kind: RecordKind
    path: Path
    num_rows: int
    rejects: tuple[Reject, ...] = ()
    locations: None = None
    row_offset: int = 0

    @property
    def source(self) -> str:
        return f"parquet:{self.path}"

    @staticmethod
    def of(kind: RecordKind, path: Path, max_rows: int) -> ParquetFileBatch | None:
        """The file as one batch, or None when it is larger than ``max_rows`` (a transaction
        stays bounded) or its schema is not exactly the record's (it then needs conform())."""
        import pyarrow.parquet as pq

        meta = pq.read_metadata(path)
        if meta.num_rows > max_rows or not meta.schema.to_arrow_schema().equals(
            SPECS[kind].schema, check_metadata=False
        ):
            return None
        return ParquetFileBatch(kind, Path(path), meta.num_rows)


@dataclass(frozen=True)
class _Probe:
    content_hash: str
    invalid: int
    valid: int
    distinct_key_hashes: int


class DiskFull(RuntimeError):
    """A load that ran out of disk: it was rolled back whole (earlier batches stay loaded)."""


def is_disk_full(e: BaseException) -> bool:
    """DuckDB's write errors are not OSErrors: their text carries the system's."""
    import errno

    if isinstance(e, OSError):
        return e.errno == errno.ENOSPC
    return isinstance(e, duckdb.Error) and "no space left on device" in str(e).lower()


class Warehouse:
    """A DuckDB file holding the raw tables. Use as a context manager or call ``close()``.

    A writable open migrates an older schema first (``migrations.py``); a read-only one refuses
    a schema other than this tierlens' own. ``migrate=False`` opens as it is (for ``tierlens
    migrate`` and repairs).
    """

    def __init__(self, path: str | Path, read_only: bool = False, migrate: bool = True) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con: duckdb.DuckDBPyConnection = duckdb.connect(str(self.path), read_only=read_only)
        # Canonical times are UTC; without this, TIMESTAMPTZ renders and truncates (day
        # partitions, ::DATE) in whatever zone the host happens to be in.
        try:
            self.con.execute("SET TimeZone = 'UTC'")
            # DuckDB draws a progress bar on the terminal for long statements; the CLI has its own.
            self.con.execute("SET enable_progress_bar = false")
            if read_only:
                check_version(self.con, self.path, writable=False)
            elif migrate:
                self.ensure_schema()
        except BaseException:
            self.con.close()  # a refused schema must not leave the file locked by this process
            raise

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ schema

    def ensure_schema(self) -> None:
        """Bring the schema up to this tierlens' version (``migrations.py``), check it against
        records.py, and keep table and column comments in step with it."""
        migrate_schema(self.con, self.path)
        check_schema(self.con, self.path)
        self._sync_comments()

    def _sync_comments(self) -> None:
        have = {
            (t, c): comment
            for t, c, comment in self.con.execute(
                "SELECT table_name, column_name, comment FROM duckdb_columns() "
                "WHERE schema_name = 'main' AND database_name = current_database()"
            ).fetchall()
        }
        have_tables = {
            t: comment
            for t, comment in self.con.execute(
                "SELECT table_name, comment FROM duckdb_tables() "
                "WHERE schema_name = 'main' AND database_name = current_database()"
            ).fetchall()
        }
        from ..records import SIMULATOR_COMMENTS as SIMULATION_COMMENTS

        for table, comment in SIMULATION_COMMENTS.items():
            if have_tables.get(table) != comment:
                self.con.execute(f"COMMENT ON TABLE {quote(table)} IS {literal(comment)}")
        for table, columns in all_tables().items():
            if have_tables.get(table) != TABLE_COMMENTS[table]:
                self.con.execute(f"COMMENT ON TABLE {quote(table)} IS {literal(TABLE_COMMENTS[table])}")
            for column in columns:
                if have.get((table, column.name)) != column.comment:
                    self.con.execute(
                        f"COMMENT ON COLUMN {quote(table)}.{quote(column.name)} IS {literal(column.comment)}"
                    )

    # ------------------------------------------------------------------ gaps

    def tagged_without_accounting(
        self,
        batch_system: str,
        since: datetime,
        until: datetime,
        clusters: list[str] | None = None,
        tags: pa.Table | None = None,
    ) -> list[str]:
        """Ids of jobs the plugin tagged in [since, until) that have no job row: jobs the batch
        system's accounting has not delivered (a time-window query that missed them).

        ``clusters``: only those; None: the clusters this warehouse holds jobs of since ``since``.
        ``tags``: job_tag rows to look in instead of raw_job_tag (the plugin's spool, where the
        ingest keeps only the tags of jobs it loaded). A job tagged at T ended at T or later, so
        job rows ending before ``since`` are not read."""
        cluster_filter = (
            "t.cluster IN (SELECT unnest(?::VARCHAR[]))"
            if clusters is not None
            else "t.cluster IN (SELECT DISTINCT cluster FROM raw_job WHERE batch_system = ? "
            "AND (end_time >= ? OR end_time IS NULL))"
        )
        params: list[object] = [batch_system, since, until]
        params += [clusters] if clusters is not None else [batch_system, since]
        if tags is not None:
            self.con.register(_TAGS_VIEW, tags)
        try:
            rows = self.con.execute(
                f"""
                SELECT DISTINCT t.job_id FROM {_TAGS_VIEW if tags is not None else "raw_job_tag"} t
                WHERE t.batch_system = ? AND t.tagged_at >= ? AND t.tagged_at < ? AND {cluster_filter}
                  AND NOT EXISTS (
                      SELECT 1 FROM raw_job j
                      WHERE j.batch_system = t.batch_system AND j.cluster = t.cluster AND j.job_id = t.job_id
                        AND (j.end_time >= ? OR j.end_time IS NULL))
                """,
                [*params, since],
            ).fetchall()
        finally:
            if tags is not None:
                self.con.unregister(_TAGS_VIEW)
        return sorted((r[0] for r in rows), key=lambda j: (len(j), j))

    # ------------------------------------------------------------------ loading

    def load(self, batch: Batch | ParquetFileBatch) -> LoadResult:
        """Validate and upsert one batch in one transaction; a no-op if it was loaded before.
        Raises DiskFull, naming the file and the batch, when the disk fills up mid-load."""
        try:
            return self._load(batch)
        except Exception as e:
            if not is_disk_full(e):
                raise
            raise DiskFull(
                f"the disk is full: {e} (while loading {batch.kind.value} batch {batch.source} into "
                f"{self.path}); nothing of this batch was loaded, the batches before it were. Free space "
                "on that filesystem and run it again: loading a batch twice changes nothing"
            ) from e

    def _load(self, batch: Batch | ParquetFileBatch) -> LoadResult:
        sql = kind_sql(batch.kind)
        rows = self._register_batch(batch)
        try:
            with _stopwatch(batch, "probe"):
                probe = self._probe(sql)
            content_hash = _content_hash(probe.content_hash, rows, batch.row_offset, batch.rejects)
            batch_id = _batch_id(batch.kind, batch.source, content_hash)
            with self._transaction():
                # Checked inside the transaction, so "loaded before" and "load now" cannot be
                # interleaved with another connection loading the same batch.
                previous = self._previous_load(batch_id)
                if previous is not None:
                    return previous
                return self._load_new(batch, sql, probe, content_hash, batch_id, rows)
        finally:
            if isinstance(batch, ParquetFileBatch):
                self.con.execute(f"DROP VIEW IF EXISTS {quote(_BATCH_VIEW)}")
            else:
                self.con.unregister(_BATCH_VIEW)

    def _register_batch(self, batch: Batch | ParquetFileBatch) -> int:
        """Make the batch the view _BATCH_VIEW (its rows plus ROW, the 0-based row index)."""
        if isinstance(batch, ParquetFileBatch):
            # DuckDB's own Parquet reader: no decoding into Arrow in Python first
            columns = ", ".join(quote(c) for c in SPECS[batch.kind].schema.names)
            self.con.execute(
                f"CREATE OR REPLACE TEMP VIEW {quote(_BATCH_VIEW)} AS SELECT {columns}, "
                f"file_row_number AS {quote(ROW)} FROM read_parquet({literal(str(batch.path))}, "
                "file_row_number = true)"
            )
            return batch.num_rows
        table = _with_row_index(_conform(batch))
        self.con.register(_BATCH_VIEW, table)
        return table.num_rows

    def load_many(
        self, batches: Iterable[Batch], prefetch: bool = False, on_result: Callable[[LoadResult], None] | None = None
    ) -> list[LoadResult]:
        """Load batches in order, each in its own transaction (a failure keeps earlier ones).

        With ``prefetch`` the iterable is advanced one batch ahead on a background thread, so
        a source reading or parsing the next batch overlaps this one's load (the iterable must
        then not use this warehouse's connection). Off by default: on 2 cores DuckDB already
        keeps both busy and the overlap measured no faster (bench/README.md); it pays where
        the ingest host has cores to spare. ``on_result`` is called after each batch.
        """
        results = []
        # closing(): stop the producer thread now, not when the generator is collected.
        with closing(prefetched(batches) if prefetch else (b for b in batches)) as stream:
            for batch in stream:
                result = self.load(batch)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        return results

    def _probe(self, sql: KindSql) -> _Probe:
        row = fetch_one(self.con, sql.probe(_BATCH_VIEW))
        assert row is not None
        return _Probe(str(row[0]), int(row[1]), int(row[2]), int(row[3]))

    def _previous_load(self, batch_id: str) -> LoadResult | None:
        row = fetch_one(
            self.con,
            f"SELECT record_kind, source, rows_in, rows_loaded, rows_rejected FROM {BATCHES_TABLE} WHERE batch_id = ?",
            [batch_id],
        )
        if row is None:
            return None
        return LoadResult(RecordKind(row[0]), row[1], batch_id, row[2], row[3], row[4], already_loaded=True)

    def _load_new(
        self, batch: Batch | ParquetFileBatch, sql: KindSql, probe: _Probe, content_hash: str, batch_id: str, rows: int
    ) -> LoadResult:
        now = datetime.now(timezone.utc)
        # Nothing of this batch id should exist (raw_batches said so), but a hand-edited
        # warehouse could hold orphans; replacing them keeps a reload from duplicating rejects.
        self.con.execute(f"DELETE FROM {REJECTS_TABLE} WHERE batch_id = ?", [batch_id])
        rejected = 0
        if probe.invalid:
            with _stopwatch(batch, "rule rejects"):
                rejected += self._store_rule_rejects(batch, sql, batch_id, now)
        skip_view = None
        if probe.distinct_key_hashes < probe.valid:
            with _stopwatch(batch, "duplicates"):
                duplicates = self._store_duplicates(batch, sql, batch_id, now)
            rejected += duplicates
            skip_view = _SKIP_VIEW if duplicates else None
        if batch.rejects:
            self._store_parse_rejects(batch.rejects, batch_id, now)
            rejected += len(batch.rejects)
        try:
            all_valid = probe.invalid == 0
            with _stopwatch(batch, "delete"):
                self._delete_existing(sql, all_valid)
            with _stopwatch(batch, "insert"):
                loaded = self._insert_valid(sql, all_valid, skip_view)
        finally:
            if skip_view:
                self.con.unregister(_SKIP_VIEW)
        rows_in = rows + len(batch.rejects)
        self.con.execute(
            f"INSERT INTO {BATCHES_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                batch_id,
                batch.kind.value,
                batch.source,
                content_hash,
                rows_in,
                loaded,
                rejected,
                now,
                tierlens_version(),
            ],
        )
        return LoadResult(batch.kind, batch.source, batch_id, rows_in, loaded, rejected)

    def _delete_existing(self, sql: KindSql, all_valid: bool) -> None:
        # Probing an empty table is cheap, but skipping it keeps the first load of a fresh
        # warehouse a plain insert.
        if fetch_one(self.con, f"SELECT 1 FROM {quote(sql.table)} LIMIT 1") is not None:
            self.con.execute(sql.delete_existing(_BATCH_VIEW, all_valid))

    def _insert_valid(self, sql: KindSql, all_valid: bool, skip_view: str | None) -> int:
        row = fetch_one(self.con, sql.insert(_BATCH_VIEW, all_valid, skip_view))
        return int(row[0]) if row else 0

    def _store_rule_rejects(self, batch: Batch | ParquetFileBatch, sql: KindSql, batch_id: str, now: datetime) -> int:
        rejects = self.con.sql(sql.rule_rejects(_BATCH_VIEW)).to_arrow_table()
        self._store_rejects(batch, rejects, batch_id, now)
        return rejects.num_rows

    def _store_duplicates(self, batch: Batch | ParquetFileBatch, sql: KindSql, batch_id: str, now: datetime) -> int:
        duplicates = self.con.sql(sql.duplicates(_BATCH_VIEW)).to_arrow_table()
        if duplicates.num_rows == 0:  # the distinct-hash check was a 64-bit collision
            return 0
        n = duplicates.num_rows
        rejects = pa.table(
            {
                "row_index": duplicates["row_index"],
                "field": pa.array([sql.key_field] * n, pa.string()),
                "reason": pa.array([DUPLICATE_REASON] * n, pa.string()),
                "raw_record": duplicates["raw_record"],
            }
        )
        self._store_rejects(batch, rejects, batch_id, now)
        self.con.register(_SKIP_VIEW, duplicates.select(["row_index"]))
        return n

    def _store_rejects(self, batch: Batch | ParquetFileBatch, rejects: pa.Table, batch_id: str, now: datetime) -> None:
        """rejects: row_index, field, reason, raw_record; adds provenance and inserts."""
        if batch.locations is not None:
            locations = pa.array([batch.locations[i] for i in rejects["row_index"].to_numpy()], pa.string())
        else:
            # Batch.location(i) without the per-row Python: '<source>:row <row_offset + i>'.
            row_numbers = pc.add(rejects["row_index"], batch.row_offset)
            locations = pc.binary_join_element_wise(f"{batch.source}:row ", pc.cast(row_numbers, pa.string()), "")
        table = rejects.append_column("location", locations)
        self.con.register(_REJECT_VIEW, table)
        try:
            self.con.execute(
                f"INSERT INTO {REJECTS_TABLE} SELECT ?, ?, ?, location, field, reason, raw_record, ? "
                f"FROM {_REJECT_VIEW} ORDER BY row_index",
                [batch_id, batch.kind.value, batch.source, now],
            )
        finally:
            self.con.unregister(_REJECT_VIEW)

    def _store_parse_rejects(self, rejects: list[Reject], batch_id: str, now: datetime) -> None:
        # Parse rejects never became Arrow rows; their raw text is stored as a JSON string so
        # raw_record is always valid JSON (``raw_record->>'$'`` gives the text back).
        self.con.executemany(
            f"INSERT INTO {REJECTS_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [batch_id, r.kind.value, r.source, r.location, r.field, r.reason, json.dumps(r.raw), now]
                for r in rejects
            ],
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    # ------------------------------------------------------------------ inspection

    def counts(self) -> dict[str, int]:
        """Rows per raw table, including raw_rejects and raw_batches."""
        result = {}
        for table in all_tables():
            row = fetch_one(self.con, f"SELECT count(*) FROM {quote(table)}")
            result[table] = int(row[0]) if row else 0
        return result

    def rejects(self, limit: int = 100) -> list[StoredReject]:
        """The most recent rejects, newest batch first, in source order within a batch."""
        rows = self.con.execute(
            f"SELECT batch_id, record_kind, source, location, field, reason, raw_record, rejected_at "
            f"FROM {REJECTS_TABLE} ORDER BY rejected_at DESC, rowid LIMIT ?",
            [limit],
        ).fetchall()
        return [StoredReject(*row) for row in rows]


# ---------------------------------------------------------------------- helpers


def fetch_one(con: duckdb.DuckDBPyConnection, query: str, params: list[object] | None = None) -> tuple | None:
    """First row of a query, consuming the whole result.

    DuckDB 2's Python API refuses further work on a connection while a result is unfinished,
    and fetchone() on a one-row result does not finish it.
    """
    rows = con.execute(query, params).fetchall() if params else con.execute(query).fetchall()
    return rows[0] if rows else None


def _conform(batch: Batch) -> pa.Table:
    # Batch conforms on construction, but it is a mutable dataclass: check again so a replaced
    # table cannot reach SQL, where the error would name neither source nor field.
    return conform(batch.kind, batch.table, batch.source)


#: Rows per Arrow record batch handed to DuckDB: its row-group size. DuckDB scans a registered
#: Arrow table one record batch per task, so a batch read as one 1 M-row chunk is scanned by a
#: single thread; on DuckDB 1.5 that doubled the insert's time (bench/README.md).
SCAN_CHUNK_ROWS = 122_880


def _with_row_index(table: pa.Table) -> pa.Table:
    table = table.append_column(ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    # zero-copy slices, aligned across columns
    return pa.Table.from_batches(table.to_batches(max_chunksize=SCAN_CHUNK_ROWS), table.schema)


def _content_hash(table_hash: str, rows: int, row_offset: int, rejects: list[Reject]) -> str:
    # row_offset is part of the content: it changes where rejects say their rows came from.
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{rows}\0{row_offset}\0{table_hash}\0".encode())
    for r in rejects:
        h.update(json.dumps([r.kind.value, r.source, r.location, r.field, r.reason, r.raw]).encode())
        h.update(b"\0")
    return h.hexdigest()


def _batch_id(kind: RecordKind, source: str, content_hash: str) -> str:
    return hashlib.blake2b(f"{kind.value}\0{source}\0{content_hash}".encode(), digest_size=16).hexdigest()


@contextmanager
def _stopwatch(batch: Batch | ParquetFileBatch, step: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    log.debug("%s %s: %s %.3f s", batch.kind.value, batch.source, step, time.perf_counter() - started)
