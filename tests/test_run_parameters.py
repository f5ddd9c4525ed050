"""The run parameters of a dbt run (transform.RunParameters: a back-fill's days, the tests' scope)
reach dbt in its environment, and only the run's own: a value left in the calling shell is not
passed on. Whether dbt reads them, and keeps its saved parse across back-fill chunks, is
tests/test_cli_history.py's claim (a real back-fill)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from tierlens.transform import CORE_SCOPE, RUN_PARAMETER_VARIABLES, RunParameters, backfill, dbt_environment


def test_a_backfill_passes_its_days_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERLENS_TEST_SCOPE", "core")  # left over in the shell
    env = dbt_environment(tmp_path / "w.duckdb", backfill(date(2026, 3, 30), date(2026, 4, 2)))
    assert env["TIERLENS_BACKFILL_START"] == "2026-03-30"
    assert env["TIERLENS_BACKFILL_END"] == "2026-04-02"
    assert "TIERLENS_TEST_SCOPE" not in env
    assert env["TIERLENS_WAREHOUSE"] == str((tmp_path / "w.duckdb").resolve())


def test_a_plain_build_clears_every_parameter_from_the_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TIERLENS_BACKFILL_START", "TIERLENS_BACKFILL_END", "TIERLENS_TEST_SCOPE"):
        monkeypatch.setenv(name, "2020-01-01")
    monkeypatch.setenv("TIERLENS_DUCKDB_MEMORY_LIMIT", "1GB")  # a setting, not a parameter: kept
    env = dbt_environment(tmp_path / "w.duckdb")
    assert not {"TIERLENS_BACKFILL_START", "TIERLENS_BACKFILL_END", "TIERLENS_TEST_SCOPE"} & env.keys()
    assert env["TIERLENS_DUCKDB_MEMORY_LIMIT"] == "1GB"


def test_core_scope_and_the_variables_dbt_reads() -> None:
    assert CORE_SCOPE.environment() == {"TIERLENS_TEST_SCOPE": "core"}
    assert RunParameters().environment() == {}
    # dbt/macros/run_parameters.sql reads 'TIERLENS_' ~ name | upper, for each field
    macro = (Path(__file__).resolve().parents[1] / "dbt" / "macros" / "run_parameters.sql").read_text()
    assert "'TIERLENS_' ~ (name | upper)" in macro
    assert RUN_PARAMETER_VARIABLES == ("TIERLENS_BACKFILL_START", "TIERLENS_BACKFILL_END", "TIERLENS_TEST_SCOPE")
