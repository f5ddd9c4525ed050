"""Schema versions of the warehouse, and the ordered steps that bring an older one up to date.

The warehouse keeps its history in ``raw_schema_migrations`` (one row per version applied). On
a writable open, every version above the recorded one is applied in order, each in its own
transaction together with its row in that table: a failed step leaves the warehouse at the last
complete version, never between two. A warehouse whose version is above the newest one this
tierlens knows is refused: an older tierlens must not write a newer layout.

Adding a record or a field to records.py needs one line here, a new ``Migration`` at the end:

    Migration(3, "collector_stats record", (AddTable(RecordKind.COLLECTOR_STATS),)),
    Migration(4, "file_access end reason", (AddColumns(RecordKind.FILE_ACCESS, "end_reason"),
                                            Backfill(RecordKind.FILE_ACCESS, "end_reason",
                                                     "CASE WHEN close_seen THEN 'close' END"))),

Column types come from records.py (``ddl.all_tables``) or the simulator's DDL, so a step names
columns, never types. After migrating, the warehouse is compared with those definitions
(:func:`check_schema`): a change to records.py without its step fails there, naming the table
and the column.

Version 1 is the layout of commit 9c78adb (``schema_v1``), the last one without this table. A
warehouse written by that tierlens (no ``raw_schema_migrations``) is adopted: tables or columns
it lacks are created and version 1 is recorded.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache, lru_cache
from pathlib import Path

import duckdb

from tierlens.records import GSTREAM_572, GSTREAM_V2, RecordKind
from tierlens.warehouse import schema_v1
from tierlens.warehouse.ddl import BATCHES_TABLE, Column, all_tables, create_table_sql, quote

MIGRATIONS_TABLE = "raw_schema_migrations"

MIGRATIONS_DDL = (
    f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, "
    "name VARCHAR, applied_at TIMESTAMPTZ, tierlens_version VARCHAR)"
)

#: A step names its table by record kind (raw_<kind>) or by table name (raw_batches, sim_*).
Target = RecordKind | str


class SchemaError(ValueError):
    """The warehouse's schema cannot be used by this tierlens; the message says what to do."""


@lru_cache(maxsize=1)
def tierlens_version() -> str:
    """The installed tierlens distribution's version (the package's own when not installed)."""
    try:
        return importlib.metadata.version("tierlens")
    except importlib.metadata.PackageNotFoundError:
        from tierlens import __version__

        return __version__


# ---------------------------------------------------------------------- the current definitions


def _table_name(target: Target) -> str:
    return target.table if isinstance(target, RecordKind) else target


@lru_cache(maxsize=1)
def _simulation_columns() -> dict[str, tuple[list[Column], tuple[str, ...]]]:
    """The simulator's tables as its DDL defines them, read back from an in-memory DuckDB."""
    from tierlens.records import SIMULATOR_DDL as DDL

    con = duckdb.connect()
    try:
        for ddl in DDL.values():
            con.execute(ddl)
        out = {}
        for table in DDL:
            cols = [
                Column(n, _short_type(t), not nullable, "")
                for n, t, nullable in con.execute(
                    "SELECT column_name, data_type, is_nullable FROM duckdb_columns() WHERE table_name = ? "
                    "ORDER BY column_index",
                    [table],
                ).fetchall()
            ]
            out[table] = (cols, _primary_key(con, table))
        return out
    finally:
        con.close()


def _short_type(data_type: str) -> str:
    return {"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ"}.get(data_type, data_type)


def _primary_key(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    rows = con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() WHERE table_name = ? "
        "AND constraint_type = 'PRIMARY KEY' AND database_name = current_database()",
        [table],
    ).fetchall()
    return tuple(rows[0][0]) if rows else ()


def current_tables() -> dict[str, tuple[list[Column], tuple[str, ...]]]:
    """Every table the warehouse must hold now: the raw tables of records.py, raw_rejects,
    raw_batches and the simulator's tables, each with its columns and primary key."""
    tables: dict[str, tuple[list[Column], tuple[str, ...]]] = {
        t: (cols, ("batch_id",) if t == BATCHES_TABLE else ()) for t, cols in all_tables().items()
    }
    tables.update(_simulation_columns())
    return tables


def _current_table(table: str) -> tuple[list[Column], tuple[str, ...]]:
    tables = current_tables()
    if table not in tables:
        raise KeyError(f"migration step names table {table!r}, which neither records.py nor the simulator defines")
    return tables[table]


# ---------------------------------------------------------------------- steps


def _existing(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, tuple[str, bool]]]:
    """table -> column -> (DuckDB type as DuckDB spells it, nullable), in column order."""
    tables: dict[str, dict[str, tuple[str, bool]]] = {}
    for table, column, data_type, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND database_name = current_database() "
        "ORDER BY table_name, column_index"
    ).fetchall():
        tables.setdefault(table, {})[column] = (data_type, nullable)
    return tables


@cache
def _canonical_type(sql_type: str) -> str:
    """DuckDB's own spelling of a type (TIMESTAMPTZ is 'TIMESTAMP WITH TIME ZONE')."""
    con = duckdb.connect()
    try:
        return str(con.execute(f"SELECT typeof(CAST(NULL AS {sql_type}))").fetchall()[0][0])
    finally:
        con.close()


def _create_or_complete(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[Column], primary_key: tuple[str, ...]
) -> list[str]:
    """Statements creating ``table``, or adding the columns it lacks; a column whose type
    differs is an error (no step here can convert data)."""
    have = _existing(con).get(table)
    if have is None:
        return [create_table_sql(table, columns, primary_key=primary_key or None)]
    statements = []
    for c in columns:
        if c.name not in have:
            statements.append(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(c.name)} {c.sql_type}")
        elif have[c.name][0] != _canonical_type(c.sql_type):
            raise SchemaError(
                f"{table}.{c.name} is {have[c.name][0]} in the warehouse, the schema says "
                f"{c.sql_type}; no migration converts it"
            )
    return statements


@dataclass(frozen=True)
class Baseline:
    """Version 1: the tables of commit 9c78adb (``schema_v1``); adopts a warehouse written then."""

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        out = []
        for table, (cols, pk) in schema_v1.TABLES.items():
            columns = [Column(n, t, not_null, "") for n, t, not_null in cols]
            out += _create_or_complete(con, table, columns, pk)
        return out


@dataclass(frozen=True)
class AddTable:
    """A table as records.py (or the simulator) defines it now; nothing when it exists."""

    target: Target

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        table = _table_name(self.target)
        if table in _existing(con):
            return []
        cols, pk = _current_table(table)
        return [create_table_sql(table, cols, primary_key=pk or None)]


@dataclass(frozen=True)
class AddColumns:
    """New nullable columns, typed as records.py (or the simulator) defines them now.

    A column already there with that type is left alone: a table created by a later
    ``AddTable`` from today's records.py has it from the start.
    """

    target: Target
    names: tuple[str, ...]

    def __init__(self, target: Target, *names: str) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "names", names)

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        table = _table_name(self.target)
        cols, _ = _current_table(table)
        by_name = {c.name: c for c in cols}
        missing = [n for n in self.names if n not in by_name]
        if missing:
            raise KeyError(f"AddColumns({table}): {', '.join(missing)} not in the schema of {table}")
        wanted = [by_name[n] for n in self.names]
        for c in wanted:
            if c.not_null:
                # Rows already there have no value for it; a new field must be nullable.
                raise ValueError(
                    f"AddColumns({table}): {c.name} is not nullable in records.py; "
                    f"new fields must be nullable (backfill them with Backfill)"
                )
        if table not in _existing(con):
            raise SchemaError(f"AddColumns({table}): the warehouse has no table {table}")
        return _create_or_complete(con, table, wanted, ())


@dataclass(frozen=True)
class Backfill:
    """Fill a column's nulls in rows already stored: ``value`` is a DuckDB SQL expression over
    the row's other columns (a literal such as ``'close'``, or ``CASE WHEN ... END``)."""

    target: Target
    column: str
    value: str

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        table = quote(_table_name(self.target))
        return [f"UPDATE {table} SET {quote(self.column)} = {self.value} WHERE {quote(self.column)} IS NULL"]


@dataclass(frozen=True)
class Sql:
    """Anything the declarative steps do not cover, as literal statements."""

    sql: tuple[str, ...]

    def __init__(self, *sql: str) -> None:
        object.__setattr__(self, "sql", sql)

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        return list(self.sql)


def _built_columns(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> set[str]:
    """The columns of a table dbt built; empty when it has not built it."""
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? "
        "AND database_name = current_database()",
        [schema, table],
    ).fetchall()
    return {c for (c,) in rows}


@dataclass(frozen=True)
class ModelColumn:
    """A column a dbt model gained, added to the table it already built and filled from the row's
    other columns, so an incremental model keeps the history it holds (raw retention may have
    deleted what a rebuild would need). Nothing when dbt has not built the table yet."""

    schema: str
    table: str
    column: str
    data_type: str
    value: str

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        have = _built_columns(con, self.schema, self.table)
        if not have or self.column in have:
            return []
        table = f"{quote(self.schema)}.{quote(self.table)}"
        return [
            f"ALTER TABLE {table} ADD COLUMN {quote(self.column)} {self.data_type}",
            f"UPDATE {table} SET {quote(self.column)} = {self.value}",
        ]


@dataclass(frozen=True)
class ModelOutdated:
    """A table dbt built by an older definition of its model that an incremental run cannot build
    on (it lacks ``column``, which the model's own window rule reads): dropped, so the next
    transform builds it whole. Nothing when the table is not there or already has the column."""

    schema: str
    table: str
    column: str

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        have = _built_columns(con, self.schema, self.table)
        if not have or self.column in have:
            return []
        return [f"DROP TABLE {quote(self.schema)}.{quote(self.table)}"]


#: The model in which every incremental build records the days it rebuilds; it came with the first
#: incremental models, so intermediate tables built without it were built by a release before them.
_INCREMENTAL_MARKER = ("intermediate", "int_incremental_window")


@dataclass(frozen=True)
class BuiltWhole:
    """The intermediate and marts tables of a release whose models were all rebuilt whole on every
    run (its intermediate schema holds tables, none of them ``int_incremental_window``): dropped, so
    the next transform builds them whole from raw. An incremental run would otherwise build on
    tables made by older definitions (failing where they lack its window's ``day`` column, keeping
    their rows beside its new days where not). No history is lost: such a release rebuilt every
    table from raw on each run, so raw holds all they held. Nothing in any other warehouse."""

    def statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        intermediate = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'intermediate'"
        ).fetchone()[0]
        if not intermediate or _built_columns(con, *_INCREMENTAL_MARKER):
            return []
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name IN ('intermediate', 'marts') ORDER BY ALL"
        ).fetchall()
        return [f"DROP TABLE {quote(schema)}.{quote(table)}" for schema, table in tables]


Step = Baseline | AddTable | AddColumns | Backfill | Sql | ModelColumn | ModelOutdated | BuiltWhole


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    steps: tuple[Step, ...]


#: Every schema version, in order. Append; never edit or reorder a released one.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "baseline: the schema of commit 9c78adb", (Baseline(),)),
    Migration(2, "raw_batches.tierlens_version", (AddColumns(BATCHES_TABLE, "tierlens_version"),)),
    Migration(
        3,
        "collector_stats record: datagrams, kernel drops, sequence gaps per collector interval",
        (AddTable(RecordKind.COLLECTOR_STATS),),
    ),
    Migration(
        4,
        "file_access: how an access ended, the server's pid and address, the cache's own figures",
        (
            AddColumns(RecordKind.FILE_ACCESS, "end_reason", "server_pid", "server_addr", *GSTREAM_V2),
            # rows written before the field existed: a seen close is a close; an unclosed row
            # may have timed out or been cut by a shutdown, which the old collector did not record
            Backfill(RecordKind.FILE_ACCESS, "end_reason", "CASE WHEN close_seen THEN 'close' END"),
        ),
    ),
    Migration(
        5,
        "site_change record: configuration changes for the before/after analysis",
        (AddTable(RecordKind.SITE_CHANGE),),
    ),
    Migration(
        6,
        "hardware prediction: device probes, catalog datasheet figures, evidence and buying-guide tables",
        (
            AddTable(RecordKind.DEVICE_PROBE),
            AddColumns(
                RecordKind.STORAGE_CATALOG, "seq_read_mb_per_s", "seq_write_mb_per_s", "rand_read_iops_4k", "raid_level"
            ),
            AddColumns("sim_efficiency_parameters", "evidence"),
            AddColumns("sim_efficiency_predictions", "evidence"),
            AddTable("sim_efficiency_type_loo"),
            AddTable("sim_hardware_options"),
        ),
    ),
    Migration(
        7,
        "XRootD 5.7.2+ cache evidence (b_todisk, b_prefetch) and the collector's count of what it does not know",
        (
            AddColumns(RecordKind.FILE_ACCESS, *GSTREAM_572),
            AddColumns(RecordKind.COLLECTOR_STATS, "unknown_records", "unknown_kinds"),
        ),
    ),
    Migration(8, "job: Slurm's SLUID of the job's run (26.05+)", (AddColumns(RecordKind.JOB, "sluid"),)),
    Migration(
        9,
        "buying guide: whole-node prices (node, power, cores per job) and what drives the price interval",
        (
            AddColumns(
                "sim_hardware_options",
                "cores_per_job",
                "node_config",
                "node_cores",
                "node_price",
                "whole_node_price",
                "power_watts",
                "power_price_per_node_hour",
                "interval_driver",
            ),
        ),
    ),
    Migration(
        10,
        "client_fairness becomes incremental by its window's UTC day (column day)",
        (ModelColumn("marts", "client_fairness", "day", "DATE", "CAST(timezone('UTC', window_start) AS DATE)"),),
    ),
    Migration(
        11,
        "source_interval record: what each scheduled ingest interval brought, or why nothing",
        (AddTable(RecordKind.SOURCE_INTERVAL),),
    ),
    Migration(
        12,
        "buying guide: a full node's scratch writes per hour, the warning when the device cannot keep up, "
        "and the structural error on published figures beside the site's",
        (
            AddColumns(
                "sim_hardware_options",
                "staged_gb_per_node_hour",
                "write_warning",
                "published_structural_error",
                "structural_error_source",
            ),
        ),
    ),
    Migration(
        13,
        "ab_uncertainty resamples with a seeded Poisson block bootstrap: its rows built by the old bootstrap "
        "are dropped, so the next transform builds every row by one method",
        (Sql("DROP TABLE IF EXISTS marts.ab_uncertainty"),),
    ),
    Migration(
        14,
        "data_completeness built as a whole table, before its rows said when they are final: dropped, "
        "so the next transform builds the incremental one (which reads which rows are provisional)",
        (ModelOutdated("marts", "data_completeness", "provisional"),),
    ),
    Migration(
        15,
        "device_probe: read latency distributions under throttled background writes, and the device's "
        "I/O scheduler, file system and discard setting",
        (
            AddColumns(
                RecordKind.DEVICE_PROBE,
                "p50_latency_seconds",
                "p999_latency_seconds",
                "max_latency_seconds",
                "write_utilisation_target",
                "write_utilisation",
                "io_scheduler",
                "filesystem",
                "discard",
                "discard_max_bytes",
            ),
        ),
    ),
    Migration(
        16,
        "buying guide: the probe's p99 read latency under background writes at half the stage-in bandwidth",
        (AddColumns("sim_hardware_options", "under_write_read_p99_ms"),),
    ),
    Migration(
        17,
        "dbt tables of a release before the incremental models, and a storage_catalog seed before its "
        "datasheet columns: dropped, so the next transform builds them whole (a seed cannot gain columns "
        "in place)",
        (BuiltWhole(), ModelOutdated("seeds", "storage_catalog", "raid_level")),
    ),
)

LATEST = MIGRATIONS[-1].version


# ---------------------------------------------------------------------- applying


@dataclass(frozen=True)
class Applied:
    """One version applied (or, in a dry run, that would be): its statements in order."""

    version: int
    name: str
    statements: tuple[str, ...]


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The recorded version; 0 for a new or pre-versioning (9c78adb) warehouse."""
    if MIGRATIONS_TABLE not in _existing(con):
        return 0
    row = con.execute(f"SELECT max(version) FROM {MIGRATIONS_TABLE}").fetchall()
    return int(row[0][0]) if row and row[0][0] is not None else 0


def check_version(con: duckdb.DuckDBPyConnection, path: str | Path, writable: bool) -> int:
    """The warehouse's version, or a SchemaError when this tierlens cannot use it as it is."""
    version = current_version(con)
    if version > LATEST:
        by = con.execute(f"SELECT tierlens_version FROM {MIGRATIONS_TABLE} ORDER BY version DESC LIMIT 1").fetchall()
        raise SchemaError(
            f"{path}: warehouse schema version {version} is newer than this tierlens "
            f"({tierlens_version()}) knows (up to {LATEST}); it was migrated by tierlens "
            f"{by[0][0] if by else 'unknown'}: upgrade tierlens to use it"
        )
    if version < LATEST and not writable:
        raise SchemaError(
            f"{path}: warehouse schema version {version}, this tierlens needs {LATEST}: "
            f"run `tierlens migrate --warehouse {path}` (or any writing command) first"
        )
    return version


def migrate(
    con: duckdb.DuckDBPyConnection, path: str | Path = "warehouse", dry_run: bool = False, target: int | None = None
) -> list[Applied]:
    """Apply the versions above the recorded one up to ``target``, each in one transaction.

    With ``dry_run`` every version is applied and rolled back, so the statements listed are the
    ones a real run would execute on this warehouse.
    """
    version = check_version(con, path, writable=True)
    target = LATEST if target is None else target
    applied: list[Applied] = []
    if dry_run:
        with _transaction(con, commit=False):
            applied = [_apply(con, m) for m in MIGRATIONS if version < m.version <= target]
        return applied
    for m in MIGRATIONS:
        if version < m.version <= target:
            with _transaction(con, commit=True):
                applied.append(_apply(con, m))
    return applied


def _apply(con: duckdb.DuckDBPyConnection, migration: Migration) -> Applied:
    con.execute(MIGRATIONS_DDL)
    done: list[str] = []
    for step in migration.steps:
        for statement in step.statements(con):
            try:
                con.execute(statement)
            except duckdb.Error as e:
                raise SchemaError(f"migration {migration.version} ({migration.name}): {statement}: {e}") from e
            done.append(statement)
    con.execute(
        f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?, ?, ?)",
        [migration.version, migration.name, datetime.now(timezone.utc), tierlens_version()],
    )
    return Applied(migration.version, migration.name, tuple(done))


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection, commit: bool) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT" if commit else "ROLLBACK")


# ---------------------------------------------------------------------- checking


def schema_differences(con: duckdb.DuckDBPyConnection, nullability: bool = False) -> list[str]:
    """How the warehouse's tables differ from records.py and the simulator's DDL (empty: none).

    Nullability is compared only on request: a warehouse adopted from before versioning may
    hold a column records.py declares NOT NULL as nullable (it was added to a table with rows).
    """
    have = _existing(con)
    problems = []
    for table, (columns, _) in current_tables().items():
        if table not in have:
            problems.append(f"{table}: missing (no migration step adds it)")
            continue
        got = list(have[table].items())
        for i, c in enumerate(columns):
            if c.name not in have[table]:
                problems.append(f"{table}.{c.name}: missing (no migration step adds it)")
                continue
            data_type, nullable = have[table][c.name]
            if data_type != _canonical_type(c.sql_type):
                problems.append(f"{table}.{c.name}: {data_type} in the warehouse, {c.sql_type} in the schema")
            if nullability and nullable == c.not_null:
                problems.append(f"{table}.{c.name}: {'nullable' if nullable else 'NOT NULL'} in the warehouse")
            if i < len(got) and got[i][0] != c.name:
                problems.append(
                    f"{table}.{c.name}: column {i + 1} in the schema, but the warehouse has "
                    f"{got[i][0]} there (new fields go at the end of a record)"
                )
        extra = [n for n in have[table] if n not in {c.name for c in columns}]
        if extra:
            problems.append(f"{table}: columns {', '.join(extra)} are not in the schema")
    return problems


def check_schema(con: duckdb.DuckDBPyConnection, path: str | Path) -> None:
    problems = schema_differences(con)
    if problems:
        raise SchemaError(
            f"{path}: the warehouse (schema version {current_version(con)}) does not match "
            "records.py: "
            + "; ".join(problems)
            + ". Each change to records.py needs a step in tierlens/warehouse/migrations.py"
        )
