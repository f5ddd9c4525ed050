"""The command line: where state lives, and the small commands around the pipeline."""

from __future__ import annotations

import csv
import io
import re
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
        rows.append(
            {f.name: None for f in JOB}
            | {
                "batch_system": "slurm",
                "cluster": "c",
                "job_id": str(i),
                "step_id": "",
                "start_time": t0,
                "end_time": t0 + timedelta(seconds=600),
                "wall_seconds": 600.0,
                "allocated_cores": 0 if i == bad_cores_at else 2,
                "cpu_user_seconds": 900.0,
                "cpu_system_seconds": 10.0,
                "state": "COMPLETED",
            }
        )
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
    table = _jobs(1).set_column(
        JOB.get_field_index("allocated_cores"), "allocated_cores", pa.array(["many"], pa.string())
    )
    with pytest.raises(ValueError, match=r"sacct\.json.*allocated_cores"):
        Batch(RecordKind.JOB, table, "sacct.json")


# ---- console tables: one number format, fit the terminal, say why they are empty ----------------


@pytest.mark.parametrize(
    "value, column, text",
    [
        (1156, "jobs", "1,156"),
        (1043, "jobs", "1,043"),
        (16760.4, "core_hours", "16,760"),
        (0.08021, "years", "0.08021"),
        (0.5, "efficiency", "0.5"),
        (2.0, "x", "2"),
        (123.456, "x", "123.5"),
        (0.0, "x", "0"),
        (-0.0386, "x", "-0.0386"),
        (2026, "year", "2026"),
        (123456, "job_id", "123456"),
        (None, "x", ""),
        (True, "x", "true"),
    ],
)
def test_one_number_format_without_exponents(value, column, text):
    from tierlens.cli.common import number_text

    assert number_text(value, column) == text


def _wide_warehouse(tmp_path: Path) -> tuple[Path, Path]:
    wh = tmp_path / "w.duckdb"
    ingest([Batch(RecordKind.JOB, _jobs(3), "s")], wh)
    q = tmp_path / "wide.sql"
    cols = ", ".join(f"cpu_user_seconds * {i} AS a_rather_long_column_name_{i}" for i in range(8))
    q.write_text(f"-- Question: a wide one\nSELECT job_id, {cols} FROM raw_job ORDER BY job_id;\n")
    return wh, q


@pytest.mark.parametrize("columns", [60, 100, 400])
def test_a_wide_result_fits_the_terminal_with_every_column_name_whole(tmp_path, columns):
    wh, q = _wide_warehouse(tmp_path)
    r = runner.invoke(app, ["sql", str(q), "-w", str(wh)], env={"COLUMNS": str(columns)}, terminal_width=columns)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= columns and "…" not in r.stdout
    top = next(n for n, ln in enumerate(lines) if ln.split()[:1] == ["job_id"])
    header = lines[top].split()
    shown = [int(c.rsplit("_", 1)[1]) for c in header[1:]]
    caption = next(n for n, ln in enumerate(lines) if "3 row(s)" in ln)
    rows = [ln.split() for ln in lines[top + 2 : caption] if ln.strip()]
    assert len(rows) == 3 and all(row[1:] == [f"{900 * i:,}" for i in shown] for row in rows), r.stdout  # a row a line
    named = set(re.findall(r"a_rather_long_column_name_\d", r.stdout))
    assert {f"a_rather_long_column_name_{i}" for i in range(8)} == named  # shown, or named as not shown
    assert (len(shown) == 8) == (columns == 400) and "3 row(s)" in r.stdout


def test_csv_and_json_give_the_unrounded_values(tmp_path):
    wh, q = _wide_warehouse(tmp_path)
    as_json = runner.invoke(app, ["sql", str(q), "-w", str(wh), "--format", "json"])
    rows = __import__("json").loads(as_json.stdout)
    assert [r["a_rather_long_column_name_7"] for r in rows] == [900.0 * 7] * 3
    as_csv = runner.invoke(app, ["sql", str(q), "-w", str(wh), "--format", "csv"])
    assert list(csv.reader(io.StringIO(as_csv.stdout)))[1][-1] == str(900.0 * 7)
    both = runner.invoke(app, ["sql", str(q), "-w", str(wh), "--format", "json", "--csv"])
    assert both.exit_code == 2


def test_an_empty_result_says_why(tmp_path):
    wh = tmp_path / "w.duckdb"
    q = tmp_path / "none.sql"
    q.write_text(
        "-- Question: jobs after 2100?\nSELECT job_id FROM raw_job WHERE end_time > TIMESTAMPTZ '2100-01-01';\n"
    )
    ingest([Batch(RecordKind.JOB, _jobs(0), "s")], wh)
    r = runner.invoke(app, ["sql", str(q), "-w", str(wh)], terminal_width=200)
    assert r.exit_code == 0 and "no rows" in r.stdout and "no job records yet" in r.stdout, r.stdout
    ingest([Batch(RecordKind.JOB, _jobs(2), "t")], wh)
    r = runner.invoke(app, ["sql", str(q), "-w", str(wh)], terminal_width=200)
    assert "2 job records ending 2026-10-01 to 2026-10-01" in " ".join(r.stdout.split()) and "no marts" in r.stdout


def test_read_commands_name_the_warehouse_they_tried_and_never_create_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TIERLENS_HOME", str(tmp_path / "home"))
    for argv in (
        ["sql", "ab_summary"],
        ["status"],
        ["rejects"],
        ["report"],
        ["change", "list"],
        ["lake", "export"],
        ["sql", "ab_summary", "-w", str(tmp_path / "typo.duckdb")],
    ):
        r = runner.invoke(app, argv, terminal_width=400)
        assert r.exit_code == 1 and r.exception is None or isinstance(r.exception, SystemExit), (argv, r.exception)
        assert "no warehouse at" in r.output and "tierlens demo" in r.output, (argv, r.output)
    assert not (tmp_path / "home").exists() and not (tmp_path / "typo.duckdb").exists()


def test_help_shows_flags_without_a_value_type():
    r = runner.invoke(app, ["--help"], terminal_width=120)
    lines = {ln.split()[1]: ln for ln in r.stdout.splitlines() if ln.strip("│ ").startswith("--")}
    assert "<bool>" not in lines["--version"] and "<bool>" not in lines["--help"], r.stdout
    r = runner.invoke(app, ["sql", "--help"], terminal_width=120)
    assert "<bool>" not in r.stdout and "<path>" in r.stdout
    assert runner.invoke(app, ["--version"]).stdout.startswith("tierlens ")


def _doc_paragraph(path: Path, phrase: str) -> str:
    """The paragraph of ``path`` holding ``phrase``, its line breaks made spaces."""
    for block in path.read_text().split("\n\n"):
        if phrase in block:
            return " ".join(block.split())
    raise AssertionError(f"{path.name}: no paragraph with {phrase!r}")


def test_the_docs_describe_the_layout_the_terminal_prints(tmp_path):
    """README.md and docs/site-manager.md say what a wide result looks like: read from what
    `tierlens sql` prints for one, without a terminal (100 characters), not from the docs."""
    wh, q = _wide_warehouse(tmp_path)
    r = runner.invoke(app, ["sql", str(q), "-w", str(wh)])
    assert r.exit_code == 0, r.output
    said = " ".join(r.stdout.split())
    note = re.search(r"(\d+) of (\d+) columns fit (\d+) characters; not shown: [^.]+\. (.+)", said)
    assert note and note.group(3) == "100", said
    # every way the note gives to see the rest, as the docs must name them
    ways = re.findall(r"--[a-z]+(?: [A-Z,.]+| json)?", note.group(4))
    assert {"--columns NAME,...", "--csv", "--format json"} <= set(ways), note.group(4)
    repo = Path(__file__).resolve().parents[1]
    for doc in (repo / "README.md", repo / "docs" / "site-manager.md"):
        text = _doc_paragraph(doc, "wider than the terminal")
        assert "block per row" not in text and "one block" not in text, (doc.name, text)
        assert "a row a line with the columns that fit" in text, (doc.name, text)
        assert f"{note.group(3)} characters wide when there is no terminal" in text, (doc.name, text)
        assert "--columns NAME,..." in text.replace("`--columns NAME,...`", "--columns NAME,..."), (doc.name, text)
        assert "--format json" in text, (doc.name, text)
