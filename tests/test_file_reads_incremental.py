"""file_reads is rebuilt by file: a plain run re-adds only the files its partials' window can have
changed. The files it must not miss are those whose partial rows the rebuild removed, which have no
partial row in the window any more:

- a file read on an old day (a month back, far before the window) and on the newest day, whose
  newest reads move to another file: its row must fall back to the old day's reads alone;
- a file read only on the newest day, whose reads all move to another file: its row must go;
- a file whose only read has no open time, deleted from raw: its row must go.

Two synthetic days are loaded and built, the raw accesses changed, and the marts built again
incrementally. The three files' figures are counted from the rows this test puts in, and the
whole table must equal a full refresh of the same warehouse.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tierlens.pipeline import ingest
from tierlens.records import Batch
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.transform import run_dbt

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SELECT = ["-s", "+file_reads"]
FLOATS = {"mean_read_fraction", "total_read_fraction"}
NO_OPEN = "/store/test/file-read-without-open"


def _load(warehouse: Path) -> None:
    parts: dict = defaultdict(list)
    for b in generate(SyntheticOptions(days=2.0, seed=11, site=demo_site(nodes_per_type=1))):
        parts[b.kind].append(b.table)
    ingest((Batch(kind, pa.concat_tables(tables), "file-reads-test") for kind, tables in parts.items()), warehouse)


def _client_reads(con: duckdb.DuckDBPyConnection, where: str) -> int:
    """Client opens (cache fills excluded, as file_reads counts them) of raw accesses."""
    return con.execute(
        f"select count(*) from raw_file_access where coalesce(app_name, '') <> 'XrdPfc' and ({where})"
    ).fetchone()[0]


def _file_reads(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    cur = con.execute("select * from marts.file_reads")
    columns = [d[0] for d in cur.description]
    return {r[0]: dict(zip(columns, r)) for r in cur.fetchall()}


def test_files_whose_partials_a_rebuild_removed_get_the_full_refresh_row(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    _load(warehouse)
    con = duckdb.connect(str(warehouse))
    newest = con.execute("select max(start_time) from raw_file_access").fetchone()[0]
    # two files whose client reads all opened on the newest day, well inside every model's window
    old_and_new, new_only = (
        r[0]
        for r in con.execute(
            """select file_lfn from raw_file_access
               where file_lfn is not null
               group by file_lfn
               having min(start_time) >= date_trunc('day', ?::timestamptz)
                  and count(*) filter (where coalesce(app_name, '') <> 'XrdPfc') >= 2
               order by file_lfn limit 2""",
            [newest],
        ).fetchall()
    )
    # old_and_new was also read a month back: copies of its reads, far before the window
    con.execute(
        """insert into raw_file_access select * replace (unique_id || '-old' as unique_id,
               start_time - interval 30 day as start_time, end_time - interval 30 day as end_time)
           from raw_file_access where file_lfn = ?""",
        [old_and_new],
    )
    # a file whose only read has no open time (its partial row has no day)
    con.execute(
        f"""insert into raw_file_access select * replace (unique_id || '-noopen' as unique_id,
               '{NO_OPEN}' as file_lfn, null as start_time)
           from (select * from raw_file_access
                 where end_time is not null and coalesce(app_name, '') <> 'XrdPfc' order by unique_id limit 1)"""
    )
    old_reads = _client_reads(con, f"file_lfn = '{old_and_new}' and unique_id like '%-old'")
    all_reads = _client_reads(con, f"file_lfn = '{old_and_new}'")
    moved_reads = _client_reads(con, f"file_lfn = '{new_only}'")
    con.close()
    assert 0 < old_reads < all_reads and moved_reads >= 2

    result = run_dbt(warehouse, tmp_path / "dbt", "run", SELECT)
    assert result.success, "\n".join(result.failures)
    con = duckdb.connect(str(warehouse))
    built = _file_reads(con)
    assert built[old_and_new]["reads"] == all_reads
    assert built[new_only]["reads"] == moved_reads
    assert built[NO_OPEN]["reads"] == 1 and built[NO_OPEN]["last_access_day"] is None

    # the newest reads of both files are re-delivered under another file name, and the read
    # without an open time is gone
    con.execute(
        """update raw_file_access set file_lfn = file_lfn || '-moved'
           where file_lfn in (?, ?) and unique_id not like '%-old'""",
        [old_and_new, new_only],
    )
    con.execute(f"delete from raw_file_access where file_lfn = '{NO_OPEN}'")
    con.close()

    result = run_dbt(warehouse, tmp_path / "dbt", "run", SELECT)
    assert result.success, "\n".join(result.failures)
    con = duckdb.connect(str(warehouse), read_only=True)
    incremental = _file_reads(con)
    con.close()
    # the second build re-added files, not every row
    compiled = next((tmp_path / "dbt" / "target" / "compiled").rglob("file_reads.sql")).read_text()
    assert "changed_files" in compiled

    # counted from the rows put in
    assert incremental[old_and_new]["reads"] == old_reads
    assert incremental[old_and_new]["last_access_day"] < newest.date()
    assert new_only not in incremental
    assert NO_OPEN not in incremental
    assert incremental[old_and_new + "-moved"]["reads"] == all_reads - old_reads
    assert incremental[new_only + "-moved"]["reads"] == moved_reads

    # and every row as a full refresh of the same warehouse gives it
    full = tmp_path / "full.duckdb"
    shutil.copyfile(warehouse, full)
    result = run_dbt(full, tmp_path / "dbt-full", "run", [*SELECT, "--full-refresh"])
    assert result.success, "\n".join(result.failures)
    con = duckdb.connect(str(full), read_only=True)
    refreshed = _file_reads(con)
    con.close()
    assert set(incremental) == set(refreshed)
    for lfn, row in refreshed.items():
        for column, value in row.items():
            if column in FLOATS and value is not None:
                assert incremental[lfn][column] == pytest.approx(value, rel=1e-12), (lfn, column)
            else:
                assert incremental[lfn][column] == value, (lfn, column)
