"""Warehouse.load against real DuckDB files: idempotency, upserts, rejects, atomicity."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.rows import record_row
from tierlens.records import FILE_ACCESS, JOB, JOB_TAG, NODE, Batch, RecordKind, Reject
from tierlens.warehouse import LoadResult, Warehouse, core as warehouse_core

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)


def job(job_id: str, **overrides: Any) -> dict[str, Any]:
    row = record_row(
        JOB,
        batch_system="slurm",
        cluster="t2test",
        job_id=job_id,
        step_id="",
        job_identity=f"slurm.t2test.{job_id}",
        user_name="alice",
        account="atlas",
        vo="atlas",
        partition="grid",
        node="wn01",
        node_list="wn01",
        submit_time=T0 - timedelta(minutes=5),
        start_time=T0,
        end_time=T0 + timedelta(hours=1),
        allocated_cores=8,
        cpu_user_seconds=20000.0,
        cpu_system_seconds=1000.0,
        wall_seconds=3600.0,
        state="COMPLETED",
        exit_code=0,
    )
    row.update(overrides)
    return row


def tag(job_id: str, storage_type: str = "nvme", **overrides: Any) -> dict[str, Any]:
    row = record_row(
        JOB_TAG,
        batch_system="slurm",
        cluster="t2test",
        job_id=job_id,
        step_id="",
        node="wn01",
        storage_type=storage_type,
        device_models=["Samsung PM9A3"],
        tagged_at=T0,
        tagger="slurm-spank",
    )
    row.update(overrides)
    return row


def jobs_batch(rows: list[dict[str, Any]], source: str = "sacct.json", **kwargs: Any) -> Batch:
    return Batch(RecordKind.JOB, pa.Table.from_pylist(rows, schema=JOB), source, **kwargs)


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    with Warehouse(tmp_path / "sub" / "warehouse.duckdb") as warehouse:
        yield warehouse


def rows(wh: Warehouse, query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    return wh.con.execute(query, params).fetchall() if params else wh.con.execute(query).fetchall()


# ---------------------------------------------------------------------------- schema


def test_schema_types_not_null_comments_and_utc(wh: Warehouse) -> None:
    columns = {
        (t, c): (dt, nullable, comment)
        for t, c, dt, nullable, comment in rows(
            wh, "SELECT table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns()"
        )
    }
    assert columns[("raw_job", "start_time")][0] == "TIMESTAMP WITH TIME ZONE"
    assert columns[("raw_job_tag", "device_models")][0] == "VARCHAR[]"
    assert columns[("raw_job", "allocated_cores")][0] == "INTEGER"
    assert columns[("raw_file_access", "close_seen")][:2] == ("BOOLEAN", False)
    assert columns[("raw_job", "job_id")][1] is False
    assert columns[("raw_job", "vo")][1] is True
    assert "user mode" in columns[("raw_job", "cpu_user_seconds")][2]
    assert columns[("raw_job", "cpu_user_seconds")][2].endswith("[unit: s]")
    for table in ("raw_rejects", "raw_batches", "raw_node", "raw_storage_catalog"):
        assert any(t == table for t, _ in columns)
    assert rows(wh, "SELECT current_setting('TimeZone')") == [("UTC",)]


def test_reopen_keeps_data_and_read_only_can_query(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        wh.load(jobs_batch([job("1")]))
    with Warehouse(path) as wh:  # ensure_schema on an existing file is harmless
        assert wh.counts()["raw_job"] == 1
    with Warehouse(path, read_only=True) as ro:
        assert ro.counts()["raw_job"] == 1


def test_reopen_refuses_a_schema_records_py_does_not_describe(tmp_path: Path) -> None:
    # Columns reach a warehouse through migration steps only (test_migrations.py); one that
    # differs from records.py by other means is named, not silently repaired.
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        wh.con.execute("ALTER TABLE raw_node DROP COLUMN nic_gbps")
    with pytest.raises(ValueError, match=r"raw_node\.nic_gbps: missing"):
        Warehouse(path)
    with Warehouse(path, migrate=False) as wh:
        wh.con.execute("ALTER TABLE raw_node ADD COLUMN nic_gbps DOUBLE")
        wh.con.execute("ALTER TABLE raw_node ALTER COLUMN job_slots TYPE BIGINT")
    with pytest.raises(ValueError, match=r"raw_node\.job_slots: BIGINT in the warehouse, INTEGER"):
        Warehouse(path)
    with Warehouse(path, read_only=True) as ro:  # the failed open did not keep the file
        assert ro.counts()["raw_node"] == 0


# ---------------------------------------------------------------------------- idempotency


def test_same_batch_twice_changes_nothing(wh: Warehouse) -> None:
    parse_reject = Reject(RecordKind.JOB, "sacct.json", "sacct.json:line 9", "JobID", "not a job id", '{"x"')
    batch_rows = [job("1"), job("2", allocated_cores=0), job("3")]

    first = wh.load(jobs_batch(batch_rows, rejects=[parse_reject]))
    counts = wh.counts()
    stored = rows(wh, "SELECT * FROM raw_rejects ORDER BY location")
    second = wh.load(jobs_batch(batch_rows, rejects=[parse_reject]))

    # 3 rows + 1 parse reject in; job 2 fails a rule.
    assert (first.rows_in, first.rows_loaded, first.rows_rejected, first.already_loaded) == (4, 2, 2, False)
    assert second.already_loaded is True
    assert second.batch_id == first.batch_id
    assert (second.rows_in, second.rows_loaded, second.rows_rejected) == (4, 2, 2)
    assert wh.counts() == counts
    assert counts["raw_job"] == 2 and counts["raw_rejects"] == 2 and counts["raw_batches"] == 1
    assert rows(wh, "SELECT * FROM raw_rejects ORDER BY location") == stored


def test_batch_id_depends_on_source_kind_and_content(wh: Warehouse) -> None:
    a = wh.load(jobs_batch([job("1")], source="a.json"))
    b = wh.load(jobs_batch([job("1")], source="b.json"))
    c = wh.load(jobs_batch([job("1", state="FAILED")], source="a.json"))
    assert len({a.batch_id, b.batch_id, c.batch_id}) == 3
    assert not (b.already_loaded or c.already_loaded)
    assert wh.counts()["raw_batches"] == 3
    assert wh.counts()["raw_job"] == 1  # one natural key throughout
    content = dict(rows(wh, "SELECT batch_id, content_hash FROM raw_batches"))
    assert content[a.batch_id] == content[b.batch_id] != content[c.batch_id]


# ---------------------------------------------------------------------------- upsert


def test_later_batch_replaces_row_with_same_key(wh: Warehouse) -> None:
    running = job("42", end_time=None, state="RUNNING", cpu_user_seconds=100.0, wall_seconds=60.0)
    wh.load(jobs_batch([running, job("43")], source="sacct-0800.json"))
    final = job("42", state="COMPLETED", cpu_user_seconds=25000.0, wall_seconds=3600.0)
    result = wh.load(jobs_batch([final], source="sacct-0900.json"))

    assert result.rows_loaded == 1
    assert rows(wh, "SELECT count(*) FROM raw_job") == [(2,)]
    assert rows(wh, "SELECT state, cpu_user_seconds, wall_seconds, end_time FROM raw_job WHERE job_id = '42'") == [
        ("COMPLETED", 25000.0, 3600.0, T0 + timedelta(hours=1))
    ]


def test_steps_are_distinct_keys(wh: Warehouse) -> None:
    wh.load(jobs_batch([job("7"), job("7", step_id="0"), job("7", step_id="batch")]))
    assert rows(wh, "SELECT count(*) FROM raw_job WHERE job_id = '7'") == [(3,)]


def test_list_column_and_null_timestamps_round_trip(wh: Warehouse) -> None:
    batch = Batch(
        RecordKind.JOB_TAG,
        pa.Table.from_pylist(
            [tag("1", device_models=["A", "B"]), tag("2", device_models=None, tagged_at=None)], schema=JOB_TAG
        ),
        "spool",
    )
    wh.load(batch)
    assert rows(wh, "SELECT job_id, device_models, tagged_at FROM raw_job_tag ORDER BY job_id") == [
        ("1", ["A", "B"], T0),
        ("2", None, None),
    ]


# ---------------------------------------------------------------------------- rejects


def test_rule_rejects_land_with_field_reason_and_location(wh: Warehouse) -> None:
    batch_rows = [
        job("1"),
        job("2", end_time=T0 - timedelta(seconds=1)),  # ends before it starts
        job("3", allocated_cores=0),  # no cores
        job("4", end_time=None, state="RUNNING"),  # running: NULLs are not violations
        job("5", allocated_cores=0, end_time=T0 - timedelta(hours=1)),  # two rules: the first listed wins
        job("6", cpu_system_seconds=-1.0),
    ]
    locations = [f"sacct.json:line {10 + i}" for i in range(len(batch_rows))]
    result = wh.load(jobs_batch(batch_rows, locations=locations))

    assert (result.rows_in, result.rows_loaded, result.rows_rejected) == (6, 2, 4)
    assert rows(wh, "SELECT job_id FROM raw_job ORDER BY job_id") == [("1",), ("4",)]
    got = rows(
        wh,
        "SELECT record_kind, source, location, field, reason, raw_record->>'job_id' FROM raw_rejects ORDER BY location",
    )
    assert got == [
        ("job", "sacct.json", "sacct.json:line 11", "end_time", "before start_time", "2"),
        ("job", "sacct.json", "sacct.json:line 12", "allocated_cores", "missing or below 1 core", "3"),
        ("job", "sacct.json", "sacct.json:line 14", "end_time", "before start_time", "5"),
        ("job", "sacct.json", "sacct.json:line 15", "cpu_system_seconds", "negative", "6"),
    ]
    assert rows(wh, "SELECT DISTINCT batch_id FROM raw_rejects") == [(result.batch_id,)]


def test_rejects_without_locations_name_the_row(wh: Warehouse) -> None:
    tags = [tag("1"), tag("2", storage_type="floppy"), tag("3", storage_type="raid10"), tag("4", storage_type=None)]
    # storage_type is NOT NULL in the schema, which Arrow does not enforce when a table is built
    # with it: the NULL must become a reject, not fail the batch at the column constraint.
    table = pa.Table.from_pylist(tags, schema=JOB_TAG)
    result = wh.load(Batch(RecordKind.JOB_TAG, table, "tags.spool"))

    assert (result.rows_loaded, result.rows_rejected) == (2, 2)
    assert rows(wh, "SELECT location, field, reason FROM raw_rejects ORDER BY location") == [
        ("tags.spool:row 1", "storage_type", "not a known storage type"),
        ("tags.spool:row 3", "storage_type", "not a known storage type"),
    ]
    assert rows(wh, "SELECT job_id, storage_type FROM raw_job_tag ORDER BY job_id") == [("1", "nvme"), ("3", "raid10")]


def test_rejects_count_rows_from_the_batch_row_offset(wh: Warehouse) -> None:
    table = pa.Table.from_pylist([job("1"), job("2", allocated_cores=0)], schema=JOB)
    wh.load(Batch(RecordKind.JOB, table, "parquet:jobs.parquet", row_offset=500_000))
    assert rows(wh, "SELECT location FROM raw_rejects") == [("parquet:jobs.parquet:row 500001",)]


def test_reject_raw_record_is_the_row_as_json(wh: Warehouse) -> None:
    wh.load(jobs_batch([job("9", allocated_cores=0, vo=None)]))
    (raw,) = rows(wh, "SELECT raw_record FROM raw_rejects")[0]
    record = json.loads(raw)
    assert set(record) == set(JOB.names)
    assert record["job_id"] == "9" and record["allocated_cores"] == 0 and record["vo"] is None


def test_parse_level_rejects_are_stored(wh: Warehouse) -> None:
    parse_rejects = [
        Reject(RecordKind.FILE_ACCESS, "udp.pcap", "udp.pcap:offset 128", "f-stream", "truncated packet", "\x01\x02"),
        Reject(RecordKind.FILE_ACCESS, "udp.pcap", "udp.pcap:offset 4096", "dictid", "unknown dictid 77", "77"),
    ]
    batch = Batch(RecordKind.FILE_ACCESS, FILE_ACCESS.empty_table(), "udp.pcap", rejects=parse_rejects)
    result = wh.load(batch)

    assert (result.rows_in, result.rows_loaded, result.rows_rejected) == (2, 0, 2)
    got = rows(wh, "SELECT record_kind, location, field, reason, raw_record->>'$' FROM raw_rejects ORDER BY location")
    assert got == [
        ("file_access", "udp.pcap:offset 128", "f-stream", "truncated packet", "\x01\x02"),
        ("file_access", "udp.pcap:offset 4096", "dictid", "unknown dictid 77", "77"),
    ]
    assert [r.location for r in wh.rejects(limit=1)] == ["udp.pcap:offset 128"]


def test_in_batch_duplicates_keep_the_last(wh: Warehouse) -> None:
    batch_rows = [
        job("1", state="RUNNING", end_time=None),  # row 0: superseded by row 3
        job("2"),  # row 1
        job("1", state="FAILED"),  # row 2: superseded by row 3
        job("1", state="COMPLETED"),  # row 3: kept
        job("2", allocated_cores=0),  # row 4: invalid, so row 1 stays the last valid "2"
    ]
    result = wh.load(jobs_batch(batch_rows, source="dup.json"))

    assert (result.rows_loaded, result.rows_rejected) == (2, 3)
    assert rows(wh, "SELECT job_id, state, allocated_cores FROM raw_job ORDER BY job_id") == [
        ("1", "COMPLETED", 8),
        ("2", "COMPLETED", 8),
    ]
    assert rows(wh, "SELECT location, field, reason, raw_record->>'state' FROM raw_rejects ORDER BY location") == [
        ("dup.json:row 0", "batch_system,cluster,job_id,step_id", "duplicate natural key in batch", "RUNNING"),
        ("dup.json:row 2", "batch_system,cluster,job_id,step_id", "duplicate natural key in batch", "FAILED"),
        ("dup.json:row 4", "allocated_cores", "missing or below 1 core", "COMPLETED"),
    ]


def test_duplicate_across_many_rows_and_kinds(wh: Warehouse) -> None:
    n = 5000
    accesses = [
        record_row(
            FILE_ACCESS,
            server_host="xcache01",
            unique_id=str(i % 1000),
            file_lfn=f"/store/f{i}",
            start_time=T0,
            close_seen=True,
        )
        for i in range(n)
    ]
    result = wh.load(Batch(RecordKind.FILE_ACCESS, pa.Table.from_pylist(accesses, schema=FILE_ACCESS), "fa"))
    # 1000 distinct ids; each id's last occurrence is i = 4000 + id.
    assert (result.rows_loaded, result.rows_rejected) == (1000, 4000)
    assert rows(wh, "SELECT min(file_lfn), max(file_lfn) FROM raw_file_access") == [("/store/f4000", "/store/f4999")]


def test_key_hash_collision_is_not_a_duplicate(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fewer distinct key hashes than valid rows sends the load down the exact path; with no
    # real duplicate (a 64-bit collision) nothing may be rejected.
    real_probe = Warehouse._probe

    def colliding_probe(self: Warehouse, sql: Any) -> Any:
        probe = real_probe(self, sql)
        return dataclasses.replace(probe, distinct_key_hashes=probe.distinct_key_hashes - 1)

    monkeypatch.setattr(Warehouse, "_probe", colliding_probe)
    result = wh.load(jobs_batch([job("1"), job("2"), job("3")]))
    assert (result.rows_loaded, result.rows_rejected) == (3, 0)
    assert wh.counts()["raw_rejects"] == 0


def test_load_many_and_results(wh: Warehouse) -> None:
    node_table = pa.Table.from_pylist(
        [
            {
                "cluster": "t2test",
                "node": "wn01",
                "storage_type": "ssd",
                "device_models": ["X"],
                "device_count": 1,
                "job_slots": 16,
                "nic_gbps": 25.0,
                "ab_arm": None,
            },
            {
                "cluster": "t2test",
                "node": "wn02",
                "storage_type": "hdd",
                "device_models": None,
                "device_count": 2,
                "job_slots": 0,
                "nic_gbps": 10.0,
                "ab_arm": None,
            },
        ],
        schema=NODE,
    )
    results = wh.load_many([jobs_batch([job("1")]), Batch(RecordKind.NODE, node_table, "nodes.csv")])
    assert [type(r) for r in results] == [LoadResult, LoadResult]
    assert [(r.kind, r.rows_loaded, r.rows_rejected) for r in results] == [
        (RecordKind.JOB, 1, 0),
        (RecordKind.NODE, 1, 1),
    ]
    counts = wh.counts()
    assert counts["raw_job"] == 1 and counts["raw_node"] == 1 and counts["raw_rejects"] == 1
    assert counts["raw_batches"] == 2 and counts["raw_job_tag"] == 0


# ---------------------------------------------------------------------------- atomicity


def _snapshot(wh: Warehouse) -> tuple[list[tuple[Any, ...]], ...]:
    return tuple(rows(wh, f"SELECT * FROM {t} ORDER BY ALL") for t in ("raw_job", "raw_rejects", "raw_batches"))


def test_failure_after_delete_rolls_back(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    wh.load(jobs_batch([job("1", state="RUNNING", end_time=None), job("2")], source="first"))
    before = _snapshot(wh)
    update = jobs_batch([job("1", state="COMPLETED"), job("3"), job("4", allocated_cores=0)], source="second")

    def crash(self: Warehouse, *args: Any) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(Warehouse, "_insert_valid", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        wh.load(update)
    assert _snapshot(wh) == before  # job 1's old row is back, no job 3, no reject, no batch

    monkeypatch.undo()
    result = wh.load(update)  # not recorded as loaded: it loads now
    assert not result.already_loaded and result.rows_loaded == 2
    assert rows(wh, "SELECT job_id, state FROM raw_job ORDER BY job_id") == [
        ("1", "COMPLETED"),
        ("2", "COMPLETED"),
        ("3", "COMPLETED"),
    ]


def test_failure_mid_insert_rolls_back(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    wh.load(jobs_batch([job("1"), job("2")], source="first"))
    before = _snapshot(wh)
    real_insert = Warehouse._insert_valid

    def insert_then_crash(self: Warehouse, *args: Any) -> int:
        real_insert(self, *args)
        assert rows(self, "SELECT count(*) FROM raw_job") == [(2 + 3 - 1,)]  # really written
        raise KeyboardInterrupt

    monkeypatch.setattr(Warehouse, "_insert_valid", insert_then_crash)
    with pytest.raises(KeyboardInterrupt):
        wh.load(jobs_batch([job("2", state="FAILED"), job("5"), job("6")], source="second"))
    assert _snapshot(wh) == before


def test_connection_usable_after_a_failed_load(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warehouse_core, "_batch_id", lambda *a: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError):
        wh.load(jobs_batch([job("1")]))
    monkeypatch.undo()
    assert wh.load(jobs_batch([job("1")])).rows_loaded == 1


# ---------------------------------------------------------------------------- bad schema


def test_uncastable_field_is_named(wh: Warehouse) -> None:
    batch = jobs_batch([job("1")], source="broken.json")
    batch.table = batch.table.set_column(JOB.get_field_index("allocated_cores"), "allocated_cores", pa.array(["eight"]))
    with pytest.raises(ValueError, match=r"broken\.json.*allocated_cores"):
        wh.load(batch)
    assert wh.counts()["raw_batches"] == 0


def test_missing_field_is_named(wh: Warehouse) -> None:
    batch = jobs_batch([job("1")], source="short.json")
    batch.table = batch.table.drop_columns(["wall_seconds"])
    with pytest.raises(ValueError, match=r"short\.json.*wall_seconds"):
        wh.load(batch)


def test_castable_table_is_cast(wh: Warehouse) -> None:
    batch = jobs_batch([job("1")], source="loose.json")
    batch.table = batch.table.set_column(
        JOB.get_field_index("allocated_cores"), "allocated_cores", pa.array([4], pa.int64())
    )
    assert wh.load(batch).rows_loaded == 1
    assert rows(wh, "SELECT allocated_cores FROM raw_job") == [(4,)]


# ---------------------------------------------------------------------------- load_many prefetch


def test_load_many_prefetch_keeps_order_and_bounds_batches_alive(wh: Warehouse) -> None:
    produced: list[int] = []
    loaded_when_produced: list[int] = []

    def batches() -> Any:
        for i in range(6):
            loaded_when_produced.append(wh_counts["raw_batches"])
            produced.append(i)
            yield jobs_batch([job(str(i))], source=f"s{i}")

    wh_counts = {"raw_batches": 0}
    seen: list[str] = []

    def on_result(result: LoadResult) -> None:
        wh_counts["raw_batches"] += 1
        seen.append(result.source)

    results = wh.load_many(batches(), prefetch=True, on_result=on_result)
    assert [r.source for r in results] == seen == [f"s{i}" for i in range(6)]
    # Batch i may be produced while batch i-1 loads, never before batch i-2 finished loading.
    assert all(done >= i - 1 for i, done in enumerate(loaded_when_produced))
    assert wh.counts()["raw_job"] == 6


def test_load_many_source_error_keeps_earlier_batches(wh: Warehouse) -> None:
    def batches() -> Any:
        yield jobs_batch([job("1")], source="ok")
        raise OSError("sacct.json: truncated")

    with pytest.raises(OSError, match="truncated"):
        wh.load_many(batches(), prefetch=True)
    assert wh.counts()["raw_job"] == 1


def test_load_many_load_error_stops_the_producer(wh: Warehouse) -> None:
    produced: list[int] = []

    def batches() -> Any:
        for i in range(100):
            produced.append(i)
            batch = jobs_batch([job(str(i))], source=f"s{i}")
            if i == 1:
                batch.table = batch.table.drop_columns(["state"])  # load() rejects this one
            yield batch

    with pytest.raises(ValueError, match="state"):
        wh.load_many(batches(), prefetch=True)
    assert len(produced) <= 3
    assert wh.counts()["raw_job"] == 1


# ---------------------------------------------------------------------------- Parquet read by DuckDB


def _mixed_jobs(n: int) -> list[dict[str, Any]]:
    out = [job(str(i), cpu_user_seconds=float(i), allocated_cores=1 + i % 8) for i in range(n)]
    out[3] = job("3", allocated_cores=0)  # a rule reject
    out[7] = job("5", cpu_user_seconds=7.0)  # repeats job 5: a duplicate
    out[9] = job("9", end_time=T0 - timedelta(hours=2))  # end before start
    return out


def _warehouse_state(wh: Warehouse) -> tuple[list, list]:
    loaded = rows(wh, f"SELECT {', '.join(JOB.names)} FROM raw_job ORDER BY job_id, step_id")
    rejected = rows(wh, "SELECT location, field, reason, raw_record FROM raw_rejects ORDER BY location")
    return loaded, rejected


def test_parquet_file_loaded_by_duckdb_equals_the_arrow_path(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tierlens.pipeline import parquet_batches
    from tierlens.warehouse.core import ParquetFileBatch

    path = tmp_path / "jobs.parquet"
    pq.write_table(pa.Table.from_pylist(_mixed_jobs(300), schema=JOB), path, row_group_size=64)
    direct = list(parquet_batches(RecordKind.JOB, [path], direct=True))
    arrow = list(parquet_batches(RecordKind.JOB, [path]))
    assert [type(b) for b in direct] == [ParquetFileBatch] and isinstance(arrow[0], Batch)
    states = []
    for name, batches in (("direct", direct), ("arrow", arrow)):
        with Warehouse(tmp_path / f"{name}.duckdb") as w:
            first = w.load_many(batches)
            again = w.load_many(batches)  # idempotent by content
            assert [r.already_loaded for r in again] == [True]
            assert (first[0].rows_in, first[0].rows_loaded, first[0].rows_rejected) == (300, 297, 3)
            states.append(_warehouse_state(w))
    assert states[0] == states[1]
    loaded, rejected = states[0]
    assert [r[0] for r in rejected] == [f"parquet:{path}:row {i}" for i in (3, 5, 9)]
    cpu_user = JOB.get_field_index("cpu_user_seconds")
    assert [r[cpu_user] for r in loaded if r[2] == "5"] == [7.0]  # the later row of a duplicate won


def test_parquet_direct_only_for_exact_schema_and_bounded_files(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tierlens.warehouse.core import ParquetFileBatch

    exact, other = tmp_path / "exact.parquet", tmp_path / "other.parquet"
    table = pa.Table.from_pylist(_mixed_jobs(20), schema=JOB)
    pq.write_table(table, exact)
    pq.write_table(
        table.set_column(
            JOB.get_field_index("allocated_cores"), "allocated_cores", table["allocated_cores"].cast(pa.int64())
        ),
        other,
    )
    assert ParquetFileBatch.of(RecordKind.JOB, exact, 20) is not None
    assert ParquetFileBatch.of(RecordKind.JOB, exact, 19) is None  # over the transaction bound
    assert ParquetFileBatch.of(RecordKind.JOB, other, 20) is None  # needs conform(): Arrow path


# ---------------------------------------------------------------------------- landing, clustering

HOLD_LOCK = r"""
import duckdb, sys
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.readline()
"""


def test_an_ingest_lands_its_batches_while_another_process_writes_and_the_next_writer_loads_them(tmp_path):
    import subprocess
    import sys

    from tierlens.ingest.interval import load_interval
    from tierlens.warehouse.landing import landed_files

    path = tmp_path / "warehouse.duckdb"
    Warehouse(path).close()
    late = [job(str(i), end_time=T0 + timedelta(minutes=30 - i)) for i in range(5)]  # out of time order
    bad = job("bad", allocated_cores=-1)
    batch = jobs_batch(
        late + [bad],
        locations=[f"sacct.json:line {i}" for i in range(6)],
        rejects=[Reject(RecordKind.JOB, "sacct.json", "sacct.json:line 9", "job", "unparsable", "{")],
    )
    start, end = T0 - timedelta(hours=1), T0 + timedelta(hours=2)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        busy = load_interval("test", [batch], path, start, end)  # returns at once, nothing waited for
        # the rows, and the parse rejects in a batch of their own (intervals.interval_batches)
        assert busy["landed"] == 2 and "lock" in busy["warehouse_busy"].lower()
    finally:
        holder.communicate("done\n", timeout=60)
    assert len(landed_files(path)) == 2
    # the next writer (here the next ingest, with nothing new) loads what landed first
    after = load_interval("test", [], path, start, end)
    assert after["landed_loaded"] == 2 and landed_files(path) == []
    with Warehouse(path, read_only=True) as w:
        # stored in end_time order whatever order the source gave (clustered by time)
        assert rows(w, "SELECT job_id FROM raw_job ORDER BY rowid") == [("4",), ("3",), ("2",), ("1",), ("0",)]
        rejects = rows(w, "SELECT location, field FROM raw_rejects ORDER BY location")
        # the landed batch kept its locations (the rule reject) and its parse reject
        assert rejects == [("sacct.json:line 5", "allocated_cores"), ("sacct.json:line 9", "job")]


def test_raw_span_starts_at_the_first_day_any_record_touches(tmp_path: Path) -> None:
    """An access opened before midnight and closed after it is filed under the day it opened: a
    back-fill of the whole span (transform --full-refresh, --backfill without dates) must start
    there, not at the first end time. Retention's figure stays by end time."""
    from tierlens.warehouse.history import raw_span

    with Warehouse(tmp_path / "w.duckdb") as w:
        w.con.execute("""INSERT INTO raw_file_access (server_host, unique_id, file_lfn, server_role, start_time,
                         end_time, close_seen) VALUES
                         ('xrd1', 'a', '/f', 'origin', TIMESTAMPTZ '2024-12-31 23:50:00+00', TIMESTAMPTZ '2025-01-01 00:10:00+00', true),
                         ('xrd1', 'b', '/f', 'origin', TIMESTAMPTZ '2025-01-02 10:00:00+00', NULL, false)""")
        w.con.execute("""INSERT INTO raw_job (batch_system, cluster, job_id, step_id, start_time, end_time) VALUES
                         ('slurm', 'c', '1', '', TIMESTAMPTZ '2025-01-01 08:00:00+00', TIMESTAMPTZ '2025-01-03 08:00:00+00')""")
        span = raw_span(w.con)
    assert (span.oldest_day, span.newest_day, span.oldest_file_access_day) == (
        datetime(2024, 12, 31).date(),
        datetime(2025, 1, 3).date(),
        datetime(2025, 1, 1).date(),
    )
