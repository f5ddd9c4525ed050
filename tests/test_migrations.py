"""Schema versions and migrations of the warehouse, on real DuckDB files.

The starting point is a warehouse as tierlens wrote it at commit 9c78adb, the last layout without
versions: its record tables are built from that commit's Arrow schemas (tests/data/schema_9c78adb/,
each ``<kind>.arrow-schema`` an Arrow IPC schema message written from
``git show 9c78adb:pipelines/tierlens/records.py``), filled with the synthetic site's rows cut to
those schemas, then opened by today's tierlens. Every row must survive, fields added since must be
null (or hold their backfilled default), and the result must be what records.py describes.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from tierlens.cli import app
from tierlens.records import SPECS, Batch, RecordKind
from tierlens.warehouse import Warehouse, migrations as mig, schema_v1
from tierlens.warehouse.ddl import duckdb_type, quote

REPO = Path(__file__).resolve().parents[1]
OLD_SCHEMAS = Path(__file__).parent / "data" / "schema_9c78adb"
OLD_COMMIT = "9c78adb"


def old_schemas() -> dict[str, pa.Schema]:
    """record kind value -> Arrow schema at commit 9c78adb."""
    return {
        p.name.split(".")[0]: pa.ipc.read_schema(pa.py_buffer(p.read_bytes()))
        for p in sorted(OLD_SCHEMAS.glob("*.arrow-schema"))
    }


def canonical(con: duckdb.DuckDBPyConnection, sql_type: str) -> str:
    return con.execute(f"SELECT typeof(CAST(NULL AS {sql_type}))").fetchall()[0][0]


def columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str, bool]]]:
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for t, c, dt, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND database_name = current_database() AND NOT internal "
        "ORDER BY table_name, column_index"
    ).fetchall():
        out.setdefault(t, []).append((c, dt, nullable))
    return out


def sample(type_name: str, i: int) -> str:
    """A SQL literal of a DuckDB type, different per row."""
    if type_name.endswith("[]"):
        return f"[{sample(type_name[:-2], i)}]"
    if type_name == "VARCHAR":
        return f"'v{i}'"
    if type_name == "BOOLEAN":
        return "true" if i % 2 else "false"
    if type_name in ("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"):
        return f"TIMESTAMPTZ '2026-10-0{1 + i % 9} 12:00:00+00'"
    return str(i + 1)


def build_9c78adb_warehouse(path: Path) -> dict[str, pa.Table]:
    """The file tierlens at 9c78adb would have written, with rows; returns every table's rows."""
    from tierlens.orchestration import synthetic_options
    from tierlens.sources.synthetic import generate

    con = duckdb.connect(str(path))
    schemas = old_schemas()
    for kind, schema in schemas.items():
        cols = ", ".join(f"{quote(f.name)} {duckdb_type(f.type)}{'' if f.nullable else ' NOT NULL'}" for f in schema)
        con.execute(f"CREATE TABLE raw_{kind} ({cols})")
    # raw_rejects, raw_batches and the simulator's tables did not change with records.py
    for table, (cols, pk) in schema_v1.TABLES.items():
        if table.startswith("raw_") and table[4:] in schemas:
            continue
        body = [f"{quote(n)} {t}{' NOT NULL' if nn else ''}" for n, t, nn in cols]
        body += [f"PRIMARY KEY ({', '.join(pk)})"] if pk else []
        con.execute(f"CREATE TABLE {table} ({', '.join(body)})")
    # the synthetic site at small scale, cut to the old schemas
    options = synthetic_options("2026-10-01", days=0.25, nodes_per_type=1)
    for batch in generate(options):
        old = schemas[batch.kind.value]
        con.register("rows", batch.table.select(old.names).cast(old))
        con.execute(f"INSERT INTO raw_{batch.kind.value} SELECT * FROM rows")
        con.unregister("rows")
    # tables the generator does not fill get generic rows, so each has some to keep
    for table, cols in columns(con).items():
        if con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0:
            for i in range(3):
                con.execute(f"INSERT INTO {table} VALUES ({', '.join(sample(t, i) for _, t, _ in cols)})")
    before = {t: con.execute(f"SELECT * FROM {t}").to_arrow_table() for t in columns(con)}
    con.close()
    return before


@pytest.fixture
def old_warehouse(tmp_path: Path) -> tuple[Path, dict[str, pa.Table]]:
    path = tmp_path / "warehouse.duckdb"
    return path, build_9c78adb_warehouse(path)


def test_fixture_schemas_are_commit_9c78adb_and_version_1_is_built_from_them() -> None:
    schemas = old_schemas()
    assert sorted(schemas) == sorted(k.value for k in RecordKind if k.value in schemas) and len(schemas) == 5
    known = (
        subprocess.run(
            ["git", "-C", str(REPO), "cat-file", "-e", f"{OLD_COMMIT}^{{commit}}"], capture_output=True
        ).returncode
        == 0
    )
    if known:  # a clone with history: the fixture is that commit's records.py, exactly
        src = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{OLD_COMMIT}:pipelines/tierlens/records.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        module_path = Path(sys.modules[__name__].__file__).parent / ".records_9c78adb_tmp.py"
        try:
            module_path.write_text(src)
            spec = importlib.util.spec_from_file_location("records_9c78adb", module_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        finally:
            module_path.unlink()
            sys.modules.pop("records_9c78adb", None)
        for kind, spec_ in module.SPECS.items():
            assert spec_.schema.equals(schemas[kind.value], check_metadata=True), kind
    for kind, schema in schemas.items():
        frozen, pk = schema_v1.TABLES[f"raw_{kind}"]
        assert [(f.name, duckdb_type(f.type), not f.nullable) for f in schema] == list(frozen)
        assert pk == ()


def test_9c78adb_warehouse_migrates_and_keeps_every_row(old_warehouse) -> None:
    path, before = old_warehouse
    with Warehouse(path) as wh:
        con = wh.con
        versions = con.execute(
            "SELECT version, tierlens_version FROM raw_schema_migrations ORDER BY version"
        ).fetchall()
        assert [v for v, _ in versions] == list(range(1, mig.LATEST + 1))
        assert {tv for _, tv in versions} == {importlib.metadata.version("tierlens")}
        backfills = {
            (mig._table_name(s.target), s.column): s.value
            for m in mig.MIGRATIONS
            for s in m.steps
            if isinstance(s, mig.Backfill)
        }
        after = columns(con)
        for table, rows in before.items():
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == rows.num_rows > 0, table
            con.register("before_rows", rows)
            old = ", ".join(quote(n) for n in rows.column_names)
            for a, b in (("before_rows", table), (table, "before_rows")):
                lost = con.execute(
                    f"SELECT count(*) FROM (SELECT {old} FROM {a} EXCEPT ALL SELECT {old} FROM {b})"
                ).fetchall()[0][0]
                assert lost == 0, f"{table}: {lost} row(s) of {a} not in {b}"
            con.unregister("before_rows")
            for name, _, _ in after[table]:
                if name in rows.column_names:
                    continue
                expected = backfills.get((table, name), "NULL")
                wrong = con.execute(
                    f"SELECT count(*) FROM {table} WHERE {quote(name)} IS DISTINCT FROM ({expected})"
                ).fetchall()[0][0]
                assert wrong == 0, f"{table}.{name}: {wrong} row(s) not {expected}"
        for table in set(after) - set(before) - {mig.MIGRATIONS_TABLE}:
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0, table
        # the migrated warehouse takes new batches, recording which tierlens loaded them
        node = before["raw_node"].select(before["raw_node"].column_names).slice(0, 1)
        node_rows = node.to_pylist()
        node_rows[0]["node"] = "wn-after-migration"
        full = pa.Table.from_pylist(
            [{f.name: node_rows[0].get(f.name) for f in SPECS[RecordKind.NODE].schema}],
            schema=SPECS[RecordKind.NODE].schema,
        )
        result = wh.load(Batch(RecordKind.NODE, full, "after-migration"))
        assert result.rows_loaded == 1
        assert con.execute(
            "SELECT tierlens_version FROM raw_batches WHERE batch_id = ?", [result.batch_id]
        ).fetchall() == [(importlib.metadata.version("tierlens"),)]
        assert (
            con.execute("SELECT count(*) FROM raw_batches WHERE tierlens_version IS NULL").fetchall()[0][0]
            == before["raw_batches"].num_rows
        )


def test_migrated_raw_tables_are_records_py(old_warehouse, tmp_path: Path) -> None:
    """Names, order, types and nullability of every raw table against records.py; the simulator's
    tables against their DDL; and a migrated warehouse has the layout of a new one."""
    path, _ = old_warehouse
    Warehouse(path).close()
    fresh = tmp_path / "fresh.duckdb"
    Warehouse(fresh).close()
    con = duckdb.connect(str(path), read_only=True)
    have = columns(con)
    for kind in RecordKind:
        expected = [(f.name, canonical(con, duckdb_type(f.type)), f.nullable) for f in SPECS[kind].schema]
        assert have[kind.table] == expected, kind
    from tierlens.simulator.store import DDL

    scratch = duckdb.connect()
    for ddl in DDL.values():
        scratch.execute(ddl)
    sim = columns(scratch)
    for table in DDL:
        assert have[table] == sim[table], table
    assert have["raw_batches"][-1] == ("tierlens_version", "VARCHAR", True)
    assert mig.schema_differences(con, nullability=True) == []
    new = duckdb.connect(str(fresh), read_only=True)
    assert columns(new) == have
    constraints = (
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
        "WHERE constraint_type IN ('PRIMARY KEY', 'NOT NULL') ORDER BY ALL"
    )
    assert new.execute(constraints).fetchall() == con.execute(constraints).fetchall()
    new.close()
    con.close()


def test_dry_run_lists_the_statements_and_changes_nothing(old_warehouse) -> None:
    path, before = old_warehouse
    con = duckdb.connect(str(path))
    planned = mig.migrate(con, path, dry_run=True)
    assert mig.current_version(con) == 0 and "raw_schema_migrations" not in columns(con)
    assert [c for c, _, _ in columns(con)["raw_batches"]] == list(before["raw_batches"].column_names)
    done = mig.migrate(con, path)
    assert planned == done and [m.version for m in done] == list(range(1, mig.LATEST + 1))
    assert 'ALTER TABLE "raw_batches" ADD COLUMN "tierlens_version" VARCHAR' in done[1].statements
    assert mig.migrate(con, path) == []
    con.close()


def test_migrate_command(old_warehouse) -> None:
    path, _ = old_warehouse
    runner = CliRunner()
    dry = runner.invoke(app, ["migrate", "--warehouse", str(path), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"schema version 0, this tierlens: {mig.LATEST}; would apply {mig.LATEST}" in dry.output
    assert 'ADD COLUMN "tierlens_version"' in dry.output
    real = runner.invoke(app, ["migrate", "--warehouse", str(path)])
    assert real.exit_code == 0 and f"applied {mig.LATEST} migration(s)" in real.output
    again = runner.invoke(app, ["migrate", "--warehouse", str(path), "--dry-run"])
    assert f"schema version {mig.LATEST}" in again.output and "would apply 0" in again.output


def test_newer_warehouse_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO raw_schema_migrations VALUES (?, 'from the future', ?, '99.0')",
        [mig.LATEST + 1, datetime.now(timezone.utc)],
    )
    con.close()
    for read_only in (False, True):
        with pytest.raises(mig.SchemaError, match=rf"version {mig.LATEST + 1} is newer .* tierlens 99\.0"):
            Warehouse(path, read_only=read_only)
    result = CliRunner().invoke(app, ["migrate", "--warehouse", str(path)])
    assert result.exit_code == 2 and "upgrade tierlens" in result.output


def test_older_warehouse_read_only_asks_for_migrate(old_warehouse) -> None:
    path, _ = old_warehouse
    with pytest.raises(mig.SchemaError, match="run `tierlens migrate"):
        Warehouse(path, read_only=True)


def test_failed_migration_leaves_the_previous_version_whole(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    broken = mig.Migration(
        mig.LATEST + 1,
        "half",
        (mig.Sql("CREATE TABLE half_done (x INTEGER)"), mig.Sql("ALTER TABLE no_such_table ADD COLUMN y INTEGER")),
    )
    monkeypatch.setattr(mig, "MIGRATIONS", mig.MIGRATIONS + (broken,))
    monkeypatch.setattr(mig, "LATEST", broken.version)
    with pytest.raises(mig.SchemaError, match=r"migration \d+ \(half\): ALTER TABLE no_such_table"):
        Warehouse(path)
    monkeypatch.undo()
    with Warehouse(path, read_only=True) as wh:
        assert mig.current_version(wh.con) == mig.LATEST
        assert "half_done" not in columns(wh.con)


def test_a_record_change_needs_its_migration_step(tmp_path: Path, monkeypatch) -> None:
    """What the lead does at merge: a field appended to a record, then one line in MIGRATIONS."""
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        wh.con.execute("INSERT INTO raw_node (cluster, node, storage_type, job_slots) VALUES ('c', 'n1', 'hdd', 8)")
    spec = SPECS[RecordKind.NODE]
    gained = pa.schema(list(spec.schema) + [pa.field("scratch_bytes", pa.int64(), metadata={"doc": "test"})])
    monkeypatch.setitem(
        SPECS, RecordKind.NODE, type(spec)(spec.kind, gained, spec.natural_key, spec.day_column, spec.rules)
    )
    with pytest.raises(mig.SchemaError, match=r"raw_node\.scratch_bytes: missing"):
        Warehouse(path)
    step = mig.Migration(
        mig.LATEST + 1,
        "node scratch size",
        (
            mig.AddColumns(RecordKind.NODE, "scratch_bytes"),
            mig.Backfill(RecordKind.NODE, "scratch_bytes", "job_slots * 1000"),
        ),
    )
    monkeypatch.setattr(mig, "MIGRATIONS", mig.MIGRATIONS + (step,))
    monkeypatch.setattr(mig, "LATEST", step.version)
    with Warehouse(path) as wh:
        assert wh.con.execute("SELECT node, scratch_bytes FROM raw_node").fetchall() == [("n1", 8000)]
        assert mig.current_version(wh.con) == step.version


def test_client_fairness_built_before_its_day_column_keeps_every_window(tmp_path: Path) -> None:
    """A warehouse at version 9 whose dbt build made marts.client_fairness without `day`: the
    migration adds it, each row's UTC day of window_start, and keeps every row (raw retention may
    have deleted the accesses a rebuild would need)."""
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    windows = [
        datetime(2026, 1, 1, 23, 0, tzinfo=timezone.utc),
        datetime(2026, 1, 2, 0, 0, tzinfo=timezone.utc),
        datetime(2026, 3, 29, 1, 0, tzinfo=timezone.utc),
    ]
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM raw_schema_migrations WHERE version >= 10")
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.client_fairness (server_host VARCHAR, window_start TIMESTAMPTZ, jain_index DOUBLE)")
    con.executemany(
        "INSERT INTO marts.client_fairness VALUES ('origin', ?, ?)", [[w, 0.5 + i / 10] for i, w in enumerate(windows)]
    )
    con.close()
    with Warehouse(path) as wh:
        rows = wh.con.execute(
            "SELECT window_start, jain_index, day FROM marts.client_fairness ORDER BY window_start"
        ).fetchall()
        assert mig.current_version(wh.con) == mig.LATEST
    assert [(r[0].astimezone(timezone.utc), r[1]) for r in rows] == [(w, 0.5 + i / 10) for i, w in enumerate(windows)]
    assert [r[2] for r in rows] == [w.date() for w in windows]


def test_ab_uncertainty_built_by_the_old_bootstrap_is_dropped_and_other_marts_kept(tmp_path: Path) -> None:
    """A warehouse at version 12 holds ab_uncertainty rows from the previous resampling method; an
    incremental run would replace only its rebuilt days and leave two methods in one table, so the
    migration drops it (the next transform builds it whole) and touches no other mart."""
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM raw_schema_migrations WHERE version >= 13")
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.ab_uncertainty (period_grain VARCHAR, efficiency_ci_low DOUBLE)")
    con.execute("INSERT INTO marts.ab_uncertainty VALUES ('all', 0.01)")
    con.execute("CREATE TABLE marts.ab_comparison (arm VARCHAR)")
    con.execute("INSERT INTO marts.ab_comparison VALUES ('A')")
    con.close()
    with Warehouse(path) as wh:
        tables = {
            t
            for (t,) in wh.con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'marts'").fetchall()
        }
        kept = wh.con.execute("SELECT arm FROM marts.ab_comparison").fetchall()
        assert mig.current_version(wh.con) == mig.LATEST
    assert tables == {"ab_comparison"} and kept == [("A",)]


@pytest.mark.parametrize("incremental_already", [False, True])
def test_data_completeness_built_before_it_was_incremental_is_dropped(tmp_path: Path, incremental_already) -> None:
    """The incremental data_completeness reads which of its rows are still provisional; a table
    built by the whole-table model has no such column, and the next transform would fail on it.
    The step drops that table only: one that has the column keeps its rows."""
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM raw_schema_migrations WHERE version >= 14")
    con.execute("CREATE SCHEMA marts")
    extra = ", provisional BOOLEAN" if incremental_already else ""
    con.execute(f"CREATE TABLE marts.data_completeness (day DATE, grain VARCHAR, share DOUBLE{extra})")
    con.execute(
        f"INSERT INTO marts.data_completeness VALUES ('2026-10-01', 'cluster', 0.9{', false' * incremental_already})"
    )
    con.close()
    with Warehouse(path) as wh:
        left = wh.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts' AND table_name = 'data_completeness'"
        ).fetchone()[0]
        rows = wh.con.execute("SELECT count(*) FROM marts.data_completeness").fetchone()[0] if left else 0
        assert mig.current_version(wh.con) == mig.LATEST
    assert (left, rows) == ((1, 1) if incremental_already else (0, 0))


def test_the_gstream_groups_are_the_columns_their_migrations_added():
    """records.py groups FILE_ACCESS's g-stream fields by the release that appended them; the
    migration of each release adds its group, and the groups together are every cache_ field in
    the schema's order."""
    from tierlens import records
    from tierlens.warehouse.migrations import MIGRATIONS, AddColumns

    added = {
        m.version: [
            n for s in m.steps if isinstance(s, AddColumns) and s.target == RecordKind.FILE_ACCESS for n in s.names
        ]
        for m in MIGRATIONS
    }
    assert added[4][-len(records.GSTREAM_V2) :] == list(records.GSTREAM_V2)
    assert added[7] == list(records.GSTREAM_572)
    cache_fields = [f.name for f in records.FILE_ACCESS if f.name.startswith("cache_")]
    assert cache_fields == list(records.GSTREAM_FIELDS)
