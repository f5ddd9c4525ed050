"""Raw retention prunes the access-grain dbt tables with the raw file accesses; the marts keep
their history.

Two synthetic days are loaded and built, plus 50 copies of accesses moved three months back (what
a 1-month retention must delete). After retention, those 50 are gone from raw_file_access and from
every access-grain intermediate table, every other access is still there, and a mart built from
them (file_reads, from per-day partials) is unchanged. Expected counts come from the rows this test
puts in, not from what retention reports.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tierlens.pipeline import ingest
from tierlens.records import Batch
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.transform import run_dbt
from tierlens.warehouse.history import ACCESS_GRAIN_TABLES, apply_retention

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OLD = 50


def _load(warehouse: Path) -> None:
    parts: dict = defaultdict(list)
    for b in generate(SyntheticOptions(days=2.0, seed=7, site=demo_site(nodes_per_type=1))):
        parts[b.kind].append(b.table)
    ingest((Batch(kind, pa.concat_tables(tables), "retention-test") for kind, tables in parts.items()), warehouse)


def _add_old_accesses(con: duckdb.DuckDBPyConnection) -> None:
    """OLD accesses copied 90 days back: what a month's retention must delete."""
    con.execute(f"""insert into raw_file_access select * replace (unique_id || '-old' as unique_id,
                      start_time - interval 90 day as start_time, end_time - interval 90 day as end_time)
                    from (select * from raw_file_access where end_time is not null order by unique_id limit {OLD})""")


def _counts(con: duckdb.DuckDBPyConnection, relation: str) -> tuple[int, int]:
    """(rows copied three months back, other rows) of an access-grain relation."""
    return con.execute(
        f"select count(*) filter (where unique_id like '%-old'), "
        f"count(*) filter (where unique_id not like '%-old') from {relation}"
    ).fetchone()


def test_retention_prunes_access_grain_tables_and_marts_keep_history(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    _load(warehouse)
    con = duckdb.connect(str(warehouse))
    _add_old_accesses(con)
    raw_before = _counts(con, "raw_file_access")
    con.close()
    assert raw_before[0] == OLD
    result = run_dbt(warehouse, tmp_path / "dbt", "run", ["-s", "+int_file_access_by_job", "+file_reads"])
    assert result.success, "\n".join(result.failures)

    con = duckdb.connect(str(warehouse))
    before = {table: _counts(con, f'"{schema}"."{table}"') for schema, table in ACCESS_GRAIN_TABLES}
    assert all(c == raw_before for c in before.values()), before  # one row per raw access
    mart_before = con.execute("select * from marts.file_reads").fetchall()
    con.close()

    apply_retention(warehouse, 1)

    con = duckdb.connect(str(warehouse), read_only=True)
    assert _counts(con, "raw_file_access") == (0, raw_before[1])
    for schema, table in ACCESS_GRAIN_TABLES:
        assert _counts(con, f'"{schema}"."{table}"') == (0, raw_before[1]), table
    mart_after = con.execute("select * from marts.file_reads").fetchall()
    con.close()
    assert sorted(map(repr, mart_after)) == sorted(map(repr, mart_before))


def test_retention_cut_short_after_its_delete_still_records_what_it_deleted(tmp_path: Path, monkeypatch) -> None:
    """The raw delete commits at once: a retention that dies right after it (here the access-grain
    prune fails, as a SIGKILL there would stop it) must already have recorded pruned_before, or the
    run again deletes nothing, records nothing, and a later back-fill is not refused."""
    from tierlens.warehouse import history

    warehouse = tmp_path / "warehouse.duckdb"
    _load(warehouse)
    con = duckdb.connect(str(warehouse))
    _add_old_accesses(con)
    newest = con.execute("select max(end_time) from raw_file_access").fetchone()[0]
    con.close()

    def killed(con: duckdb.DuckDBPyConnection, cutoff: object) -> None:
        raise KeyboardInterrupt("killed after the raw delete")

    monkeypatch.setattr(history, "_prune_access_grain_tables", killed)
    with pytest.raises(KeyboardInterrupt):
        apply_retention(warehouse, 1)
    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("select count(*) from raw_file_access where unique_id like '%-old'").fetchone()[0] == 0
    con.close()
    expected = history.retention_cutoff(newest, 1).isoformat()
    assert history.load_history(warehouse).retention.pruned_before == expected
    monkeypatch.undo()
    again = apply_retention(warehouse, 1)
    assert again.rows_deleted_last == 0 and again.pruned_before == expected
    with pytest.raises(history.HistoryPruned):
        history.refuse_if_pruned(warehouse, None, accept=False)
