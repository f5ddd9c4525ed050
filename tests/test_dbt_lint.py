"""The dbt project's own consistency: its sources file is generated from records.py, its incremental
models declare the contract the strategy macros read, and its SQL
(and sql/'s) passes the project's sqlfluff rules (.sqlfluff)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tierlens.records import SPECS
from tierlens.warehouse import dbt_sources

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "dbt" / dbt_sources.SOURCES_FILE


def test_sources_file_is_what_records_py_defines():
    assert dbt_sources.check(SOURCES) is None, "run `make dbt-sources`"


def test_sources_file_holds_every_field_of_the_records_it_lists():
    tables = {t["name"]: t for s in yaml.safe_load(SOURCES.read_text())["sources"] for t in s["tables"]}
    for kind in dbt_sources.RAW_KINDS:
        fields = SPECS[kind].schema
        columns = tables[kind.table]["columns"]
        assert [c["name"] for c in columns] == fields.names
        for field, column in zip(fields, columns):
            doc = field.metadata[b"doc"].decode()
            assert column["description"].startswith(doc) and column["data_type"], (kind, field.name)


def test_check_fails_on_a_stale_file(tmp_path, capsys):
    project = tmp_path / "dbt"
    target = project / dbt_sources.SOURCES_FILE
    target.parent.mkdir(parents=True)
    stale = SOURCES.read_text().replace("data_type: bigint", "data_type: integer", 1)
    target.write_text(stale)
    assert dbt_sources.check(target) is not None
    assert dbt_sources.main(["--check", "--project-dir", str(project)]) == 1
    assert "data_type: integer" in capsys.readouterr().err
    assert dbt_sources.main(["--project-dir", str(project)]) == 0
    assert target.read_text() == SOURCES.read_text()


@pytest.mark.timeout(900)
def test_sql_passes_sqlfluff():
    exe = Path(sys.executable).parent / "sqlfluff"
    cmd = [
        str(exe) if exe.exists() else shutil.which("sqlfluff") or "sqlfluff",
        "lint",
        "dbt",
        "sql",
        "--processes",
        "2",
        "--disable-progress-bar",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


@pytest.mark.timeout(300)
def test_every_incremental_model_declares_its_contract(tmp_path):
    """Each incremental model's config, as dbt resolves it, holds what the strategy macros read:
    its event time, grain and a lookback. A lookback the delete cannot find reads as 0 days, and
    the delete and the rebuilt rows then cover different days: a one-shot build (the demo) hides
    that, only an hourly run shows it."""
    exe = Path(sys.executable).parent / "dbt"
    env = {
        **os.environ,
        "TIERLENS_WAREHOUSE": str(tmp_path / "parse.duckdb"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "False",
    }
    cmd = [str(exe), "parse", "--project-dir", str(REPO / "dbt"), "--profiles-dir", str(REPO / "dbt")]
    cmd += ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    nodes = json.loads((tmp_path / "target" / "manifest.json").read_text())["nodes"].values()
    # replace_days: the one strategy of the models that grow with time (the run log only appends)
    incremental = [
        n for n in nodes if n["resource_type"] == "model" and n["config"].get("incremental_strategy") == "replace_days"
    ]
    assert len(incremental) >= 10, [n["name"] for n in incremental]
    missing = {
        n["name"]: [key for key in ("event_time", "grain", "lookback_days") if n["config"].get(key) in (None, "", [])]
        for n in incremental
    }
    assert {name: keys for name, keys in missing.items() if keys} == {}
