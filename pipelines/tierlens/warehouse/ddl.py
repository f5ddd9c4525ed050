"""DDL of the raw tables, derived from the Arrow schemas in tierlens.records.

The raw tables hold the canonical records unchanged, so their columns are generated from the
schemas rather than written by hand: a field added to records.py reaches an existing warehouse
through a step in ``migrations.py`` (applied the next time it is opened), and the field docs become column
comments that ``duckdb`` users see with ``SELECT * FROM duckdb_columns()`` or ``DESCRIBE``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tierlens.records import SPECS, RecordKind, RecordSpec

REJECTS_TABLE = "raw_rejects"
BATCHES_TABLE = "raw_batches"


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str
    not_null: bool
    comment: str


def duckdb_type(type_: pa.DataType) -> str:
    """The DuckDB type that holds an Arrow type without loss."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return "VARCHAR"
    if pa.types.is_timestamp(type_):
        # Every canonical time is UTC; a zone-less timestamp would be a contract violation, but
        # map it faithfully rather than guess a zone.
        return "TIMESTAMPTZ" if type_.tz is not None else "TIMESTAMP"
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return f"{duckdb_type(type_.value_type)}[]"
    simple = {
        pa.bool_(): "BOOLEAN",
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.uint8(): "UTINYINT",
        pa.uint16(): "USMALLINT",
        pa.uint32(): "UINTEGER",
        pa.uint64(): "UBIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.date32(): "DATE",
        pa.binary(): "BLOB",
    }
    if type_ in simple:
        return simple[type_]
    raise TypeError(f"no DuckDB mapping for Arrow type {type_}")


def _field_comment(field: pa.Field) -> str:
    meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
    doc = meta.get("doc", "")
    unit = meta.get("unit", "")
    return f"{doc} [unit: {unit}]" if unit else doc


def record_columns(spec: RecordSpec) -> list[Column]:
    return [Column(f.name, duckdb_type(f.type), not f.nullable, _field_comment(f)) for f in spec.schema]


REJECT_COLUMNS: list[Column] = [
    Column("batch_id", "VARCHAR", True, "Batch the record arrived in (raw_batches.batch_id)."),
    Column("record_kind", "VARCHAR", True, f"Record kind: {', '.join(k.value for k in RecordKind)}."),
    Column("source", "VARCHAR", True, "Source that produced the record, e.g. a file name."),
    Column(
        "location",
        "VARCHAR",
        True,
        "Where in the source: 'FILE:line N', 'FILE:offset N' or '<source>:row N' (0-based row of the batch).",
    ),
    Column("field", "VARCHAR", False, "Field that failed (comma separated natural key for duplicates)."),
    Column("reason", "VARCHAR", True, "Why the record was rejected."),
    Column(
        "raw_record",
        "VARCHAR",
        False,
        "The record as JSON: the row for rule rejects, a JSON string of the source text for parse rejects.",
    ),
    Column("rejected_at", "TIMESTAMPTZ", True, "When the batch was loaded. [unit: UTC]"),
]

BATCH_COLUMNS: list[Column] = [
    Column(
        "batch_id",
        "VARCHAR",
        True,
        "Deterministic id: hash of record kind, source and content; loading the same batch again is a no-op.",
    ),
    Column("record_kind", "VARCHAR", True, "Record kind of the batch."),
    Column("source", "VARCHAR", True, "Source that produced the batch."),
    Column(
        "content_hash",
        "VARCHAR",
        True,
        "Hash of the rows and parse rejects alone (same content from two sources shares it).",
    ),
    Column("rows_in", "BIGINT", True, "Records in the batch: table rows plus parse-level rejects. [unit: rows]"),
    Column("rows_loaded", "BIGINT", True, "Rows inserted into the raw table. [unit: rows]"),
    Column(
        "rows_rejected",
        "BIGINT",
        True,
        "Records written to raw_rejects (rule, duplicate and parse rejects). [unit: rows]",
    ),
    Column("loaded_at", "TIMESTAMPTZ", True, "When the batch was committed. [unit: UTC]"),
    Column(
        "tierlens_version",
        "VARCHAR",
        False,
        "Version of tierlens that loaded the batch; null for batches loaded before schema version 2.",
    ),
]


def table_comment(kind: RecordKind) -> str:
    spec = SPECS[kind]
    return (
        f"Canonical {kind.value} records (tierlens.records.{kind.name}), unchanged; "
        f"natural key ({', '.join(spec.natural_key)}), one row per key (later batches replace)."
    )


TABLE_COMMENTS: dict[str, str] = {
    **{kind.table: table_comment(kind) for kind in RecordKind},
    REJECTS_TABLE: "Records that did not reach a raw table, with the reason; kept per batch.",
    BATCHES_TABLE: "One row per loaded batch: provenance and counts; makes loading idempotent.",
}


def create_table_sql(table: str, columns: list[Column], primary_key: str | tuple[str, ...] | None = None) -> str:
    cols = [f"{quote(c.name)} {c.sql_type}{' NOT NULL' if c.not_null else ''}" for c in columns]
    if primary_key:
        keys = (primary_key,) if isinstance(primary_key, str) else primary_key
        cols.append(f"PRIMARY KEY ({', '.join(quote(k) for k in keys)})")
    return f"CREATE TABLE IF NOT EXISTS {quote(table)} (\n  " + ",\n  ".join(cols) + "\n)"


def all_tables() -> dict[str, list[Column]]:
    tables = {kind.table: record_columns(SPECS[kind]) for kind in RecordKind}
    tables[REJECTS_TABLE] = REJECT_COLUMNS
    tables[BATCHES_TABLE] = BATCH_COLUMNS
    return tables


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
