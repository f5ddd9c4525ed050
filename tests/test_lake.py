"""export_lake: hive partitions by UTC day and site, atomic replacement, no symlink following; compact_lake."""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from tierlens.records import JOB, JOB_TAG, NODE, Batch, RecordKind
from tierlens.warehouse import Warehouse, export_lake, lake as lake_module

UTC = timezone.utc


def job(job_id: str, start: datetime | None, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in JOB.names}
    row.update(
        batch_system="slurm",
        cluster="t2test",
        job_id=job_id,
        step_id="",
        start_time=start,
        end_time=None,
        allocated_cores=4,
        state="RUNNING" if start else "PENDING",
    )
    row.update(overrides)
    return row


# Starts spread over three UTC days, including times that are another calendar day in a
# non-UTC zone (23:30 UTC is the next day in Europe, 00:30 UTC the previous day in America).
STARTS: list[datetime | None] = [
    datetime(2024, 5, 1, 0, 30, tzinfo=UTC),
    datetime(2024, 5, 1, 23, 30, tzinfo=UTC),
    datetime(2024, 5, 2, 1, 0, tzinfo=timezone(timedelta(hours=2))),  # 2024-05-01 23:00 UTC
    datetime(2024, 5, 2, 12, 0, tzinfo=UTC),
    datetime(2024, 5, 3, 23, 59, 59, tzinfo=UTC),
    datetime(2024, 5, 3, 0, 0, tzinfo=UTC),
    None,  # a pending job: no start time, no day
]


def expected_days(starts: list[datetime | None]) -> Counter[str | None]:
    return Counter(s.astimezone(UTC).date().isoformat() if s else None for s in starts)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    with Warehouse(tmp_path / "db" / "w.duckdb") as wh:
        wh.load(
            Batch(
                RecordKind.JOB,
                pa.Table.from_pylist(
                    [job(str(i), s) for i, s in enumerate(STARTS)] + [job("bad", STARTS[0], allocated_cores=0)],
                    schema=JOB,
                ),
                "sacct.json",
            )
        )
        wh.load(
            Batch(
                RecordKind.NODE,
                pa.Table.from_pylist(
                    [
                        {"cluster": "t2test", "node": f"wn{i:02d}", "storage_type": "nvme", "job_slots": 32}
                        for i in range(3)
                    ],
                    schema=NODE,
                ),
                "nodes.csv",
            )
        )
        yield wh


def read(path: Path, query: str = "SELECT * FROM t") -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{path}', hive_partitioning = true)")
    return con.execute(query).fetchall()


def test_partitions_by_utc_day(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    counts = export_lake(warehouse, lake)

    want = expected_days(STARTS)
    assert counts["raw_job"] == len(STARTS)
    got = read(lake / "raw_job" / "*" / "*" / "*.parquet", "SELECT CAST(day AS VARCHAR), count(*) FROM t GROUP BY ALL")
    assert Counter({day: n for day, n in got}) == want
    folders = sorted(p.name for p in (lake / "raw_job").iterdir())
    assert folders == sorted(["day=2024-05-01", "day=2024-05-02", "day=2024-05-03", "day=__HIVE_DEFAULT_PARTITION__"])
    assert sorted(p.name for p in (lake / "raw_job" / "day=2024-05-01").iterdir()) == ["site=t2test"]
    # Each row sits in the folder of its own UTC day and its own site.
    mismatched = read(
        lake / "raw_job" / "*" / "*" / "*.parquet",
        "SELECT count(*) FROM t WHERE CAST(timezone('UTC', start_time) AS DATE) <> day OR site <> 't2test'",
    )
    assert mismatched == [(0,)]


def test_partitions_by_site_within_a_day(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        start = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
        wh.load(
            Batch(
                RecordKind.JOB,
                pa.Table.from_pylist(
                    [job("1", start, cluster="gla"), job("2", start, cluster="ral"), job("3", start, cluster="ral")],
                    schema=JOB,
                ),
                "sacct.json",
            )
        )
        export_lake(wh, tmp_path / "lake")
    day = tmp_path / "lake" / "raw_job" / "day=2024-05-01"
    assert sorted(p.name for p in day.iterdir()) == ["site=gla", "site=ral"]
    assert read(day / "site=ral" / "*.parquet", "SELECT count(*) FROM t") == [(2,)]


def test_files_hold_the_raw_columns_and_values(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    con = duckdb.connect()
    files = con.execute(
        f"SELECT name FROM parquet_schema('{lake}/raw_job/*/*/*.parquet') WHERE name <> 'duckdb_schema'"
    ).fetchall()
    assert sorted({n for (n,) in files}) == sorted(JOB.names)  # no day or site column inside the files
    lake_rows = read(lake / "raw_job" / "*" / "*" / "*.parquet", "SELECT * EXCLUDE (day, site) FROM t ORDER BY job_id")
    assert lake_rows == warehouse.con.execute("SELECT * FROM raw_job ORDER BY job_id").fetchall()


def test_tables_without_a_day_and_bookkeeping_are_single_files(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    counts = export_lake(warehouse, lake)
    assert counts["raw_node"] == 3 and counts["raw_rejects"] == 1 and counts["raw_batches"] == 2
    assert counts["raw_job_tag"] == 0 and counts["raw_file_access"] == 0
    for table, n in (("raw_node", 3), ("raw_rejects", 1), ("raw_batches", 2), ("raw_storage_catalog", 0)):
        assert [p.name for p in (lake / table).iterdir()] == ["data_0.parquet"]
        assert read(lake / table / "data_0.parquet", "SELECT count(*) FROM t") == [(n,)]
    assert read(lake / "raw_rejects" / "data_0.parquet", "SELECT location, field FROM t") == [
        ("sacct.json:row 7", "allocated_cores")
    ]
    assert list((lake / "raw_job_tag").iterdir()) == []  # empty partitioned table: folder only


def test_export_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        wh.load(
            Batch(
                RecordKind.JOB_TAG,
                pa.Table.from_pylist(
                    [
                        {
                            "batch_system": "slurm",
                            "cluster": "c",
                            "job_id": "1",
                            "step_id": "",
                            "node": "wn1",
                            "storage_type": "ssd",
                            "tagged_at": datetime(2024, 6, 1, 23, 59, tzinfo=UTC),
                        }
                    ],
                    schema=JOB_TAG,
                ),
                "spool",
            )
        )
    counts = export_lake(path, tmp_path / "lake")
    assert counts["raw_job_tag"] == 1
    assert (tmp_path / "lake" / "raw_job_tag" / "day=2024-06-01" / "site=c" / "data_0.parquet").is_file()


def test_export_replaces_the_old_lake(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    (lake / "raw_job" / "stale.parquet").write_bytes(b"left over from an older export")
    warehouse.load(
        Batch(
            RecordKind.JOB,
            pa.Table.from_pylist([job("new", datetime(2024, 5, 9, 10, 0, tzinfo=UTC))], schema=JOB),
            "later.json",
        )
    )

    counts = export_lake(warehouse, lake)

    assert counts["raw_job"] == len(STARTS) + 1
    assert not (lake / "raw_job" / "stale.parquet").exists()
    assert read(lake / "raw_job" / "*" / "*" / "*.parquet", "SELECT count(*) FROM t") == [(len(STARTS) + 1,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "lake"]  # no staging or old copies


def test_old_lake_removal_does_not_follow_symlinks(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("not the lake's to delete")
    (lake / "raw_job" / "link").symlink_to(precious, target_is_directory=True)
    (lake / "file_link").symlink_to(precious / "keep.txt")

    export_lake(warehouse, lake)

    assert (precious / "keep.txt").read_text() == "not the lake's to delete"
    assert not os.path.lexists(lake / "raw_job" / "link")
    assert not os.path.lexists(lake / "file_link")


def test_refuses_a_lake_path_that_is_a_symlink(warehouse: Warehouse, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    (tmp_path / "lake").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValueError, match="not a real directory"):
        export_lake(warehouse, tmp_path / "lake")
    assert (elsewhere / "keep.txt").read_text() == "x"


def test_failed_export_keeps_the_old_lake(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    before = sorted(str(p.relative_to(lake)) for p in lake.rglob("*"))
    real_write = lake_module._write_table

    def write_some_then_fail(wh: Warehouse, table: str, target: Path) -> int:
        if table == "raw_node":
            raise OSError("disk full")
        return real_write(wh, table, target)

    monkeypatch.setattr(lake_module, "_write_table", write_some_then_fail)
    with pytest.raises(OSError, match="disk full"):
        export_lake(warehouse, lake)

    assert sorted(str(p.relative_to(lake)) for p in lake.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "lake"]
    monkeypatch.undo()
    assert (
        warehouse.load(Batch(RecordKind.JOB, pa.Table.from_pylist([job("after", None)], schema=JOB), "x")).rows_loaded
        == 1
    )  # connection still usable


def test_swap_without_atomic_exchange(warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    monkeypatch.setattr(lake_module, "_exchange", lambda a, b: False)
    counts = export_lake(warehouse, lake)
    assert read(lake / "raw_node" / "data_0.parquet", "SELECT count(*) FROM t") == [(counts["raw_node"],)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "lake"]


def test_read_only_warehouse_exports(tmp_path: Path, warehouse: Warehouse) -> None:
    path = warehouse.path
    warehouse.close()
    with Warehouse(path, read_only=True) as ro:
        counts = export_lake(ro, tmp_path / "lake")
    assert counts["raw_job"] == len(STARTS)


@pytest.mark.skipif(not os.uname().sysname == "Linux", reason="renameat2 is Linux only")
def test_exchange_swaps_two_directories_atomically(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "from_a").touch()
    (b / "from_b").touch()
    assert lake_module._exchange(a, b) is True
    assert [p.name for p in a.iterdir()] == ["from_b"]
    assert [p.name for p in b.iterdir()] == ["from_a"]


# --- compaction ----------------------------------------------------------------------------------


def _split_partition(folder: Path, parts: int) -> None:
    """Make one partition folder of many small files, as incremental writers leave it."""
    import pyarrow.parquet as pq

    (only,) = list(folder.glob("*.parquet"))
    table = pq.read_table(only)
    only.unlink()
    step = max(1, -(-table.num_rows // parts))
    for n, start in enumerate(range(0, table.num_rows, step)):
        pq.write_table(table.slice(start, step), folder / f"part_{n}.parquet")


def test_compact_merges_small_files_and_keeps_every_row(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    before = sorted(read(lake / "raw_job" / "*" / "*" / "*.parquet", "SELECT job_id, day FROM t"))
    day = lake / "raw_job" / "day=2024-05-01" / "site=t2test"
    _split_partition(day, 3)
    assert len(list(day.glob("*.parquet"))) == 3

    done = lake_module.compact_lake(lake)

    assert done["raw_job"] == 1 and done["raw_node"] == 0
    assert [p.name for p in day.glob("*.parquet")] == ["data_0.parquet"]
    assert sorted(read(lake / "raw_job" / "*" / "*" / "*.parquet", "SELECT job_id, day FROM t")) == before
    assert not [p for p in lake.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_compact_splits_by_rows_per_file(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    day = lake / "raw_job" / "day=2024-05-01" / "site=t2test"
    rows = len(read(day / "*.parquet"))
    _split_partition(day, rows)
    lake_module.compact_lake(lake, rows_per_file=2)
    assert len(list(day.glob("*.parquet"))) == -(-rows // 2)
    assert len(read(day / "*.parquet")) == rows


def test_compact_refuses_symlinks_and_bad_sizes(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    with pytest.raises(ValueError, match="rows_per_file"):
        lake_module.compact_lake(lake, rows_per_file=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (lake / "raw_job" / "day=2099-01-01").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="not a real directory"):
        lake_module.compact_lake(lake)
    link = tmp_path / "lake-link"
    link.symlink_to(lake)
    with pytest.raises(ValueError, match="not a real directory"):
        lake_module.compact_lake(link)
    with pytest.raises(FileNotFoundError):
        lake_module.compact_lake(tmp_path / "missing")


def test_compact_command(warehouse: Warehouse, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tierlens.cli import app

    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    _split_partition(lake / "raw_job" / "day=2024-05-01" / "site=t2test", 2)
    result = CliRunner().invoke(app, ["lake", "compact", "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    assert "raw_job 1" in result.output
    bad = CliRunner().invoke(app, ["lake", "compact", "--lake", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "no lake" in bad.output
