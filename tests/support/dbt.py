"""Running the dbt project the way tierlens does, and the raw tables it reads, for the tests that
build a small warehouse by hand and check the marts against numbers they compute themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tierlens import records
from tierlens.records import RecordKind

REPO = Path(__file__).resolve().parents[2]
DBT_DIR = REPO / "dbt"

RAW_REJECTS_DDL = """CREATE TABLE IF NOT EXISTS raw_rejects (batch_id VARCHAR, record_kind VARCHAR,
    source VARCHAR, location VARCHAR, field VARCHAR, reason VARCHAR, raw_record VARCHAR,
    rejected_at TIMESTAMPTZ)"""
RAW_BATCHES_DDL = """CREATE TABLE IF NOT EXISTS raw_batches (batch_id VARCHAR, record_kind VARCHAR,
    source VARCHAR, content_hash VARCHAR, rows_in BIGINT, rows_loaded BIGINT, rows_rejected BIGINT,
    loaded_at TIMESTAMPTZ)"""


def create_raw_tables(path: Path) -> None:
    """The loader's Warehouse when it exists, else the tables straight from records.SPECS."""
    try:
        from tierlens.warehouse import Warehouse  # type: ignore[attr-defined]
    except ImportError:
        Warehouse = None
    if Warehouse is not None:
        Warehouse(path).close()  # creates the raw tables (ensure_schema)
    con = duckdb.connect(str(path))
    try:
        existing = {
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main'"
            ).fetchall()
        }
        for kind in RecordKind:
            if kind.table not in existing:
                con.from_arrow(records.SPECS[kind].schema.empty_table()).create(kind.table)
        con.execute(RAW_REJECTS_DDL)
        con.execute(RAW_BATCHES_DDL)
    finally:
        con.close()


def insert(con: duckdb.DuckDBPyConnection, kind: RecordKind, rows: list[dict]) -> None:
    tbl = pa.Table.from_pylist(rows, schema=records.SPECS[kind].schema)
    con.register("incoming", tbl)
    con.execute(f"INSERT INTO {kind.table} BY NAME SELECT * FROM incoming")
    con.unregister("incoming")


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def build_with_upstream(warehouse: Path, state: Path, model: str) -> None:
    """Build ``model`` and every model it reads, through tierlens' own dbt run (the tests of
    models outside that set left out: cautious indirect selection); a failed build fails the test."""
    from tierlens.transform import run_dbt as tierlens_run_dbt

    result = tierlens_run_dbt(warehouse, state, "build", ["--select", f"+{model}", "--indirect-selection", "cautious"])
    assert result.success, result.failures


def table_rows(warehouse: Path, table: str) -> list[dict]:
    """Every row of ``table`` (schema.name) as a dict, read from a read-only connection."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return rows(con, f"select * from {table}")
    finally:
        con.close()


def dict_rows(keys: tuple[str, ...], values: list[tuple]) -> list[dict]:
    """Rows written as tuples in a test's table, as the dicts insert() takes."""
    return [dict(zip(keys, v)) for v in values]


NODE_KEYS = ("cluster", "node", "storage_type", "device_models", "device_count", "job_slots", "nic_gbps", "ab_arm")
CATALOG_KEYS = (
    "config_name",
    "storage_type",
    "device_model",
    "devices_per_node",
    "unit_price",
    "currency",
    "capacity_bytes",
    "endurance_tbw",
)


def dbt_executable() -> str:
    candidate = Path(sys.executable).parent / "dbt"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("dbt")
    if not found:
        pytest.skip("dbt is not installed")
    return found


def run_dbt(warehouse: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    """dbt itself with ``args`` on ``warehouse``, as tierlens.transform.run_dbt starts it: in the
    warehouse's folder, the profile naming the file, from the host's shared parse (saved_parse.py)."""
    from tierlens.saved_parse import share, slot_for_run, start_from_shared

    warehouse = warehouse.resolve()
    env = dict(os.environ, TIERLENS_WAREHOUSE=warehouse.name, DBT_SEND_ANONYMOUS_USAGE_STATS="False", DO_NOT_TRACK="1")
    target = args[args.index("--target") + 1] if "--target" in args else None
    slot = slot_for_run(DBT_DIR, warehouse.name, target, args)
    start_from_shared(state / "target", slot)
    cmd = [
        dbt_executable(),
        *args,
        "--project-dir",
        str(DBT_DIR),
        "--profiles-dir",
        str(DBT_DIR),
        "--target-path",
        str(state / "target"),
        "--log-path",
        str(state / "logs"),
    ]
    proc = subprocess.run(cmd, env=env, cwd=warehouse.parent, capture_output=True, text=True, timeout=600)
    share(state / "target", slot)
    return proc
