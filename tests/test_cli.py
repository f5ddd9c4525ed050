"""The command line: where state lives, and the small commands around the pipeline."""

from __future__ import annotations

import csv
import io

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from tierlens import config
from tierlens.cli import app
from tierlens.pipeline import ingest
from tierlens.records import JOB, SPECS, Batch, RecordKind

runner = CliRunner()


def test_home_follows_tierlens_home_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("TIERLENS_HOME", str(tmp_path / "h"))
    assert config.paths().warehouse == tmp_path / "h" / "warehouse.duckdb"
    monkeypatch.delenv("TIERLENS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert config.paths().warehouse == tmp_path / "xdg" / "tierlens" / "warehouse.duckdb"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert config.home() == Path.home() / ".local" / "share" / "tierlens"


def test_schema_lists_every_field_with_its_unit():
    result = runner.invoke(app, ["schema", "job"])
    assert result.exit_code == 0, result.output
    for f in JOB:
        assert f.name in result.output
    assert "cores" in result.output and "UTC" in result.output


def _jobs(n: int, bad_cores_at: int | None = None) -> pa.Table:
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    rows = []
    for i in range(n):
        rows.append({f.name: None for f in JOB} | {
            "batch_system": "slurm", "cluster": "c", "job_id": str(i), "step_id": "",
            "start_time": t0, "end_time": t0 + timedelta(seconds=600), "wall_seconds": 600.0,
            "allocated_cores": 0 if i == bad_cores_at else 2, "cpu_user_seconds": 900.0,
            "cpu_system_seconds": 10.0, "state": "COMPLETED"})
    return pa.Table.from_pylist(rows, schema=JOB)


def test_status_and_rejects_report_what_the_warehouse_holds(tmp_path):
    wh = tmp_path / "w.duckdb"
    ingest([Batch(RecordKind.JOB, _jobs(5, bad_cores_at=3), "test-source")], wh)
    status = runner.invoke(app, ["status", "--warehouse", str(wh)])
    assert status.exit_code == 0, status.output
    line = next(ln for ln in status.output.splitlines() if SPECS[RecordKind.JOB].kind.table in ln)
    assert line.split()[-2] == "4"
    rejects = runner.invoke(app, ["rejects", "--warehouse", str(wh), "--csv"])
    assert rejects.exit_code == 0, rejects.output
    rows = list(csv.reader(io.StringIO(rejects.output)))
    assert rows[0] == ["record", "source", "location", "field", "reason"]
    assert [r[:4] for r in rows[1:]] == [["job", "test-source", "test-source:row 3", "allocated_cores"]]


def test_status_without_a_warehouse_says_how_to_make_one(tmp_path):
    result = runner.invoke(app, ["status", "--warehouse", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 1
    assert "tierlens demo" in result.output


def test_sql_reports_a_bad_query_with_the_file_name(tmp_path):
    wh = tmp_path / "w.duckdb"
    ingest([Batch(RecordKind.JOB, _jobs(1), "s")], wh)
    q = tmp_path / "broken.sql"
    q.write_text("-- Question: nothing\nSELECT no_such_column FROM raw_job;\n")
    result = runner.invoke(app, ["sql", str(q), "--warehouse", str(wh)])
    assert result.exit_code == 1
    assert "broken.sql" in result.output


def test_batch_with_a_wrong_type_names_source_and_field():
    table = _jobs(1).set_column(JOB.get_field_index("allocated_cores"), "allocated_cores",
                                pa.array(["many"], pa.string()))
    with pytest.raises(ValueError, match=r"sacct\.json.*allocated_cores"):
        Batch(RecordKind.JOB, table, "sacct.json")
