"""export_lake: hive partitions by UTC day and site, atomic replacement, no symlink following; compact_lake."""

from __future__ import annotations

import os
import shutil
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


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test warehouse, built once: creating one takes seconds, copying its folder none."""
    folder = tmp_path_factory.mktemp("template") / "db"
    with Warehouse(folder / "w.duckdb") as wh:
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
    return folder


@pytest.fixture
def warehouse(template: Path, tmp_path: Path) -> Warehouse:
    shutil.copytree(template, tmp_path / "db")
    with Warehouse(tmp_path / "db" / "w.duckdb") as wh:
        yield wh


def listing(folder: Path) -> list[str]:
    """What an engine lists in a folder: names starting with _ or . are the lake's own."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(("_", ".")))


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
    folders = listing(lake / "raw_job")
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
        assert listing(lake / table) == ["data_0.parquet"]
        assert read(lake / table / "data_0.parquet", "SELECT count(*) FROM t") == [(n,)]
    assert read(lake / "raw_rejects" / "data_0.parquet", "SELECT location, field FROM t") == [
        ("sacct.json:row 7", "allocated_cores")
    ]
    assert listing(lake / "raw_job_tag") == []  # empty partitioned table: folder (and manifest) only


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
    monkeypatch.setattr(lake_module.lake_commit, "exchange", lambda a, b: False)
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
    assert lake_module.lake_commit.exchange(a, b) is True
    assert [p.name for p in a.iterdir()] == ["from_b"]
    assert [p.name for p in b.iterdir()] == ["from_a"]


# --- appends, compaction --------------------------------------------------------------------------


def load_jobs(wh: Warehouse, rows: list[dict[str, Any]], source: str) -> None:
    wh.load(Batch(RecordKind.JOB, pa.Table.from_pylist(rows, schema=JOB), source))


def differences(lake: Path, reference: Path, table: str) -> tuple[int, int, int]:
    """Rows of a table in ``lake`` and not in ``reference``, the other way round, and rows in all,
    each engine's way of reading it: every Parquet file below the table folder."""
    con = duckdb.connect()
    with_files = [r for r in (lake, reference) if list((r / table).rglob("*.parquet"))]
    if not with_files:
        return 0, 0, 0

    def rows(root: Path) -> str:
        where = "" if root in with_files else " LIMIT 0"  # no file: no rows, the other's columns
        return f"(SELECT * FROM read_parquet('{(root if where == '' else with_files[0]) / table}/**/*.parquet', hive_partitioning = false){where})"

    extra = con.execute(f"SELECT count(*) FROM ({rows(lake)} EXCEPT ALL {rows(reference)})").fetchall()[0][0]
    missing = con.execute(f"SELECT count(*) FROM ({rows(reference)} EXCEPT ALL {rows(lake)})").fetchall()[0][0]
    total = con.execute(f"SELECT count(*) FROM {rows(lake)}").fetchall()[0][0]
    return extra, missing, total


def assert_equals_full_export(wh: Warehouse, lake: Path, tmp_path: Path) -> None:
    fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}"
    counts = export_lake(wh, fresh)
    for table, n in counts.items():
        assert differences(lake, fresh, table) == (0, 0, n), table


def files(lake: Path) -> list[str]:
    return sorted(str(p.relative_to(lake)) for p in lake.rglob("*") if p.is_file() and p.name != "_lake.lock")


def hour(n: int) -> datetime:
    return datetime(2024, 5, 3, 10, 0, tzinfo=UTC) + timedelta(hours=n)


def test_hourly_appends_equal_a_full_export(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert lake_module.append_lake(warehouse, lake) is None  # no lake yet: the first append exports it
    day3 = lake / "raw_job" / "day=2024-05-03" / "site=t2test"
    assert listing(day3) == ["data_0.parquet"]

    # Hour 1: new jobs on two days and a second site (a batch spanning several partitions).
    load_jobs(warehouse, [job("h1a", hour(1)), job("h1b", hour(-40)), job("h1c", hour(1), cluster="gla")], "h1")
    done = lake_module.append_lake(warehouse, lake)
    assert done is not None and done["raw_job"].appended_partitions == 3
    assert done["raw_job"].rewritten_partitions == 0 and done["raw_job"].rows_written == 3
    assert not done["raw_job"].digested_all  # it grew by what the batch loaded: only the grown partitions read
    assert not done["raw_node"].scanned  # no node batch and no row count change: not even read
    assert listing(day3) == ["data_0.parquet", "part-000001.parquet"]
    assert_equals_full_export(warehouse, lake, tmp_path)

    # Hour 2: a record re-sent with changed values (the job ended), and the pending job "6" that
    # started: it leaves the null-day partition for day 2024-05-03.
    load_jobs(
        warehouse,
        [job("h1a", hour(1), end_time=hour(2), state="COMPLETED", wall_seconds=3600.0), job("6", hour(2))],
        "h2",
    )
    done = lake_module.append_lake(warehouse, lake)
    assert done is not None
    assert (done["raw_job"].rewritten_partitions, done["raw_job"].removed_partitions) == (1, 1)
    assert done["raw_job"].digested_all  # two rows replaced: every partition compared
    assert not (lake / "raw_job" / "day=__HIVE_DEFAULT_PARTITION__").exists()
    assert listing(day3) == ["part-000002.parquet"]
    assert_equals_full_export(warehouse, lake, tmp_path)

    # The same batch again, and an append with nothing new: the lake does not change at all.
    before = files(lake)
    load_jobs(
        warehouse,
        [job("h1a", hour(1), end_time=hour(2), state="COMPLETED", wall_seconds=3600.0), job("6", hour(2))],
        "h2",
    )
    done = lake_module.append_lake(warehouse, lake)
    assert done is not None and not any(t.committed for t in done.values())
    assert files(lake) == before


def test_reader_between_the_writes_and_the_switch_sees_the_last_commit(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, old = tmp_path / "lake", tmp_path / "old"
    export_lake(warehouse, lake)
    export_lake(warehouse, old)
    # One batch over three days: a reader must see all of it or none of it.
    load_jobs(warehouse, [job(f"m{i}", hour(-24 * i)) for i in range(3)], "multi-day")
    seen: list[tuple[int, int, int]] = []
    real_switch = lake_module.lake_commit._switch

    def read_then_switch(gen: Any, manifest: Any) -> None:
        if gen.table == "raw_job":
            assert len(list(gen.folder.rglob("part-*.parquet"))) == 3  # written, not switched in
            seen.append(differences(lake, old, "raw_job"))
        real_switch(gen, manifest)

    monkeypatch.setattr(lake_module.lake_commit, "_switch", read_then_switch)
    lake_module.append_lake(warehouse, lake)
    assert seen == [(0, 0, len(STARTS))]  # the old lake exactly
    assert differences(lake, old, "raw_job") == (3, 0, len(STARTS) + 3)  # after the switch: all three


def test_an_append_killed_before_its_switch_changes_nothing_and_reruns(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    before = files(lake)
    load_jobs(warehouse, [job("k1", hour(1)), job("k2", hour(-30))], "killed")

    def killed(gen: Any, manifest: Any) -> None:
        raise KeyboardInterrupt  # as a SIGINT between the file writes and the exchange

    monkeypatch.setattr(lake_module.lake_commit, "_switch", killed)
    with pytest.raises(KeyboardInterrupt):
        lake_module.append_lake(warehouse, lake)
    assert files(lake) == before
    monkeypatch.undo()
    # A kill -9 leaves its hidden folder behind: the next append removes it.
    (lake / ".raw_job.next-deadbeef0000" / "day=2024-05-03").mkdir(parents=True)
    lake_module.append_lake(warehouse, lake)
    assert not [p for p in lake.iterdir() if p.name.startswith(".")]
    assert_equals_full_export(warehouse, lake, tmp_path)


def test_append_on_a_file_system_without_hard_links_copies(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    lake = tmp_path / "lake"
    export_lake(warehouse, lake)

    refused: list[Any] = []

    def no_links(*args: Any, **kw: Any) -> None:
        refused.append(args)
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(lake_module.lake_commit.os, "link", no_links)
    load_jobs(warehouse, [job("nolink", hour(1))], "no-links")
    lake_module.append_lake(warehouse, lake)
    monkeypatch.undo()
    assert_equals_full_export(warehouse, lake, tmp_path)
    assert len(refused) > 3  # every unchanged file of the committed tables was copied instead


def test_retention_removes_whole_partitions(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    # What apply_retention does to raw_file_access, here to jobs: a delete of old rows.
    warehouse.con.execute("DELETE FROM raw_job WHERE start_time < TIMESTAMPTZ '2024-05-02 00:00:00+00'")
    done = lake_module.append_lake(warehouse, lake)
    assert done is not None and done["raw_job"].removed_partitions == 1
    assert listing(lake / "raw_job") == ["day=2024-05-02", "day=2024-05-03", "day=__HIVE_DEFAULT_PARTITION__"]
    assert_equals_full_export(warehouse, lake, tmp_path)


def test_a_lake_without_manifests_is_exported_and_a_foreign_one_refused(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    (lake / "raw_job" / "_lake_manifest.json").unlink()  # as an older tierlens left it
    assert lake_module.append_lake(warehouse, lake) is None
    manifest = lake / "raw_node" / "_lake_manifest.json"
    manifest.write_text(manifest.read_text().replace('"format_version": 1', '"format_version": 9'))
    with pytest.raises(ValueError, match="format_version is 9"):
        lake_module.append_lake(warehouse, lake)
    manifest.write_text("{")
    with pytest.raises(ValueError, match="unreadable lake manifest"):
        lake_module.append_lake(warehouse, lake)


def appended_lake(warehouse: Warehouse, tmp_path: Path, hours: int) -> Path:
    """A lake whose day 2024-05-03 partition got one file per hourly append."""
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    for n in range(hours):
        load_jobs(warehouse, [job(f"c{n}", hour(n))], f"hour-{n}")
        lake_module.append_lake(warehouse, lake)
    return lake


def test_compact_merges_small_files_and_keeps_every_row(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = appended_lake(warehouse, tmp_path, 3)
    day = lake / "raw_job" / "day=2024-05-03" / "site=t2test"
    assert len(listing(day)) == 4
    seen = []
    real_switch = lake_module.lake_commit._switch

    def read_then_switch(gen: Any, manifest: Any) -> None:
        seen.append(sorted(listing(day)))
        real_switch(gen, manifest)

    monkeypatch.setattr(lake_module.lake_commit, "_switch", read_then_switch)
    done = lake_module.compact_lake(lake)

    assert done["raw_job"] == 1 and done["raw_node"] == 0 and done["raw_batches"] == 1
    assert seen[0] == ["data_0.parquet", "part-000001.parquet", "part-000002.parquet", "part-000003.parquet"]
    assert listing(day) == ["part-000004-0.parquet"]
    assert not [p for p in lake.iterdir() if p.name.startswith(".")]  # no staging left behind
    load_jobs(warehouse, [job("after", hour(5))], "after-compaction")
    lake_module.append_lake(warehouse, lake)  # appends go on from the compacted manifest
    assert_equals_full_export(warehouse, lake, tmp_path)


def test_compact_splits_by_rows_per_file(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = appended_lake(warehouse, tmp_path, 3)
    day = lake / "raw_job" / "day=2024-05-03" / "site=t2test"
    rows = len(read(day / "*.parquet"))
    lake_module.compact_lake(lake, rows_per_file=2)
    assert len(listing(day)) == -(-rows // 2)
    assert len(read(day / "*.parquet")) == rows


def test_compact_of_a_lake_without_manifest_merges_folders(warehouse: Warehouse, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    (lake / "raw_job" / "_lake_manifest.json").unlink()  # as an older tierlens left it
    day = lake / "raw_job" / "day=2024-05-01" / "site=t2test"
    table = pq.read_table(day / "data_0.parquet")
    (day / "data_0.parquet").unlink()
    for n in range(table.num_rows):
        pq.write_table(table.slice(n, 1), day / f"part_{n}.parquet")
    assert lake_module.compact_lake(lake)["raw_job"] == 1
    assert listing(day) == ["data_0.parquet"] and len(read(day / "*.parquet")) == table.num_rows


def test_compact_refuses_symlinks_and_bad_sizes(warehouse: Warehouse, tmp_path: Path) -> None:
    lake = appended_lake(warehouse, tmp_path, 2)
    with pytest.raises(ValueError, match="rows_per_file"):
        lake_module.compact_lake(lake, rows_per_file=0)
    elsewhere = tmp_path / "elsewhere"
    day = lake / "raw_job" / "day=2024-05-03"
    day.rename(elsewhere)
    day.symlink_to(elsewhere)
    with pytest.raises(ValueError, match="not a real directory"):
        lake_module.compact_lake(lake)
    assert len(list((elsewhere / "site=t2test").iterdir())) == 3  # nothing done through the link
    link = tmp_path / "lake-link"
    link.symlink_to(lake)
    with pytest.raises(ValueError, match="not a real directory"):
        lake_module.compact_lake(link)
    with pytest.raises(FileNotFoundError):
        lake_module.compact_lake(tmp_path / "missing")


def test_append_and_compact_commands(warehouse: Warehouse, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tierlens.cli import app

    lake = tmp_path / "lake"
    path = warehouse.path
    export_lake(warehouse, lake)
    load_jobs(warehouse, [job("cli", hour(1))], "cli")
    warehouse.close()
    result = CliRunner().invoke(app, ["lake", "append", "--warehouse", str(path), "--out", str(lake)])
    assert result.exit_code == 0, result.output
    assert "raw_job: 1 partition(s) appended, 0 rewritten, 0 removed, 1 row(s)" in result.output
    result = CliRunner().invoke(app, ["lake", "compact", "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    assert "raw_job 1" in result.output
    bad = CliRunner().invoke(app, ["lake", "compact", "--lake", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "no lake" in bad.output


def test_spark_reads_whole_commits_only(warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark as dbt registers the lake (lake_sources.sql): the table folder, every file below it."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    lake = tmp_path / "lake"
    export_lake(warehouse, lake)
    load_jobs(warehouse, [job(f"s{i}", hour(-24 * i)) for i in range(3)], "spark-multi-day")
    spark = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("tierlens-lake-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        # A JVM that lives seconds: the client compiler alone starts and reads it faster.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    try:

        def jobs_seen() -> int:
            return spark.read.option("recursiveFileLookup", "true").parquet(str(lake / "raw_job")).count()

        seen = []
        real_switch = lake_module.lake_commit._switch

        def read_then_switch(gen: Any, manifest: Any) -> None:
            if gen.table == "raw_job":
                seen.append(jobs_seen())
            real_switch(gen, manifest)

        monkeypatch.setattr(lake_module.lake_commit, "_switch", read_then_switch)
        lake_module.append_lake(warehouse, lake)
        assert seen == [len(STARTS)]  # the three new files written, not one of them seen
        assert jobs_seen() == len(STARTS) + 3  # and the manifest beside them is not read as data
    finally:
        spark.stop()
