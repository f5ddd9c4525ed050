"""`tierlens sql`: parameters of the bundled queries, a mistyped name, where a read command finds the
demo's warehouse, and results that fit a 100-column terminal. Fast: a small warehouse of marts
(tests/support), no dbt."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from support.report_marts import HARDWARE, add_answer_marts
from tierlens.cli import app
from tierlens.warehouse import Warehouse

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
CHEAPEST = "cheapest_configuration_for_efficiency"


@pytest.fixture
def wh(tmp_path) -> Path:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    return add_answer_marts(path)


def _csv(r) -> list[dict]:
    assert r.exit_code == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


# ---- named parameters ----------------------------------------------------------------------------


def test_a_parameter_changes_the_answer_and_its_default_is_the_shipped_one(wh):
    lows = {name: low for name, *_, low, _high, _p, _plo, _phi in HARDWARE}
    reaching = lambda t: sorted(n for n, low in lows.items() if low >= t)  # noqa: E731
    default = _csv(runner.invoke(app, ["sql", CHEAPEST, "-w", str(wh), "--csv"]))
    assert sorted(r["config_name"] for r in default) == reaching(0.75)
    higher = _csv(runner.invoke(app, ["sql", CHEAPEST, "-w", str(wh), "--csv", "--param", "target=0.84"]))
    assert sorted(r["config_name"] for r in higher) == reaching(0.84) and len(higher) < len(default)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--param", "tagret=0.8"], ["unknown parameter 'tagret'", "did you mean target?", "target=0.75"]),
        (["--param", "target"], ["NAME=VALUE", "target=0.75"]),
        (["-p", "target=0.8", "-p", "target=0.9"], ["given twice"]),
    ],
)
def test_a_bad_parameter_is_one_line_naming_the_known_ones(wh, argv, words):
    r = runner.invoke(app, ["sql", CHEAPEST, "-w", str(wh), *argv], terminal_width=400)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert all(w in r.output for w in words), r.output


def test_a_query_without_parameters_refuses_one(wh):
    r = runner.invoke(app, ["sql", "ab_summary", "-w", str(wh), "-p", "x=1"], terminal_width=400)
    assert r.exit_code == 2 and "takes: none" in r.output, r.output


def test_list_and_help_show_the_parameters():
    listed = runner.invoke(app, ["sql", "--list", "--csv"])
    rows = {r["name"]: r["parameters"] for r in _csv(listed)}
    assert rows[CHEAPEST] == "target=0.75" and rows["ab_summary"] == ""
    help_text = " ".join(runner.invoke(app, ["sql", "--help"], terminal_width=120).stdout.split())
    assert "--param" in help_text and "NAME=VALUE" in help_text


def test_every_bundled_parameter_has_its_default_in_the_sql_for_the_plain_duckdb_cli():
    """The plain DuckDB CLI sets no variable: each declared default must be the SQL's own."""
    from tierlens.queries import parameters_of

    for file in sorted((REPO / "sql").glob("*.sql")):
        text = file.read_text()
        for p in parameters_of(text):
            assert f"coalesce(getvariable('{p.name}'), {p.default})" in text, (file.name, p)


def test_the_plain_sql_text_runs_on_its_defaults(wh):
    """bench/scale_bench.py and `duckdb < sql/NAME.sql` run the text as it is."""
    with duckdb.connect(str(wh), read_only=True) as con:
        plain = con.execute((REPO / "sql" / f"{CHEAPEST}.sql").read_text()).fetchall()
    assert sorted(r[1] for r in plain) == sorted(n for n, *_, low, _h, _p, _pl, _ph in HARDWARE if low >= 0.75)


# ---- a mistyped name ---------------------------------------------------------------------------


def test_a_mistyped_name_suggests_the_near_one_not_every_name(wh):
    r = runner.invoke(app, ["sql", "ab_sumary", "-w", str(wh)], terminal_width=400)
    assert r.exit_code == 2 and "did you mean ab_summary?" in r.output, r.output
    assert "worst_groups_this_week" not in r.output and len(r.output.strip().splitlines()) == 1
    r = runner.invoke(app, ["sql", "zzzz", "-w", str(wh)], terminal_width=400)
    assert r.exit_code == 2 and "--list" in r.output and "did you mean" not in r.output, r.output


# ---- the demo's warehouse, found after `make demo` -------------------------------------------------


@pytest.fixture
def clone(tmp_path, monkeypatch) -> Path:
    """A clone where `make demo` ran: its Makefile's TIERLENS_HOME is <clone>/.tierlens, the demo's
    warehouse <clone>/.tierlens/demo/warehouse.duckdb; the shell that reads has no TIERLENS_HOME."""
    from tierlens import config

    root = tmp_path / "clone"
    (root / "pipelines" / "tierlens").mkdir(parents=True)
    (root / "Makefile").write_text("export TIERLENS_HOME ?= $(CURDIR)/.tierlens\n")
    demo = root / ".tierlens" / "demo" / "warehouse.duckdb"
    demo.parent.mkdir(parents=True)
    Warehouse(demo).close()
    add_answer_marts(demo)
    monkeypatch.setattr(config, "REPO_ROOT", root)
    monkeypatch.delenv("TIERLENS_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return root


def test_a_read_command_finds_the_demo_of_the_clone_without_an_export(clone):
    r = runner.invoke(app, ["sql", "ab_with_confidence", "--csv"], terminal_width=400)
    assert r.exit_code == 0, r.output
    demo = clone / ".tierlens" / "demo" / "warehouse.duckdb"
    assert f"reading the demo's at {demo}" in " ".join(r.stderr.split()), r.stderr
    assert "site" in r.stdout


def test_a_set_tierlens_home_is_not_overridden_by_the_clone(clone, tmp_path, monkeypatch):
    """A site (or a test) that chose its home gets that home's answer, not the clone's demo."""
    monkeypatch.setenv("TIERLENS_HOME", str(tmp_path / "site"))
    r = runner.invoke(app, ["sql", "ab_summary"], terminal_width=400)
    assert r.exit_code == 1 and "no warehouse at" in r.output, r.output


def test_a_mistyped_warehouse_suggests_a_warehouse_that_exists(tmp_path, monkeypatch, wh):
    # the README's own export: the home is the demo's folder itself
    monkeypatch.setenv("TIERLENS_HOME", str(wh.parent))
    wh.rename(wh.parent / "warehouse.duckdb")
    r = runner.invoke(app, ["sql", "ab_summary", "-w", str(tmp_path / "typo.duckdb")], terminal_width=400)
    assert r.exit_code == 1, r.output
    said = " ".join(r.output.split())
    assert str(wh.parent / "warehouse.duckdb") in said and "demo/demo" not in said, said


# ---- the site-wide row first, and tables that fit 100 columns ------------------------------------


def _with_more_groupings(wh: Path) -> Path:
    """Groupings that sort before 'site' by name, and a week of the site, as the real mart has."""
    with duckdb.connect(str(wh)) as con:
        for grouping, value, grain in (("account", "atlas-prod", "all"), ("job_class", "analysis", "all")) + (
            ("site", "all jobs", "week"),
        ):
            con.execute(
                "INSERT INTO marts.ab_uncertainty SELECT * REPLACE (? AS grouping, ? AS group_value, ? AS period_grain) "
                "FROM marts.ab_uncertainty WHERE grouping = 'site'",
                [grouping, value, grain],
            )
        # the high cache-hit subset sorts after 'all' by name, and so should stay after it
        con.execute(
            "INSERT INTO marts.ab_uncertainty SELECT * REPLACE ('high_hit_ratio' AS subset) "
            "FROM marts.ab_uncertainty WHERE grouping = 'site' AND period_grain = 'all'"
        )
    return wh


def test_the_site_wide_row_comes_first(wh):
    rows = _csv(runner.invoke(app, ["sql", "ab_with_confidence", "-w", str(_with_more_groupings(wh)), "--csv"]))
    assert [(r["subset"], r["grouping"], r["period_grain"]) for r in rows[:2]] == [
        ("all", "site", "all"),
        ("all", "site", "week"),
    ]
    assert rows[-1]["subset"] == "high_hit_ratio"


def _header(stdout: str, first: str) -> list[str]:
    """The column names of a table whose first column is ``first`` (the title above may wrap)."""
    return next(ln.split() for ln in stdout.splitlines() if ln.split()[:1] == [first])


def _lines_of_rows(stdout: str, first_words: list[str]) -> list[str]:
    return [ln for ln in stdout.splitlines() if ln.split()[:1] and ln.split()[0] in first_words]


def test_a_wide_result_prints_a_row_per_line_with_the_columns_that_fit_and_names_the_rest(wh):
    wh = _with_more_groupings(wh)
    r = runner.invoke(app, ["sql", "ab_with_confidence", "-w", str(wh)], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 100 and "…" not in r.stdout
    assert "row 1 of" not in r.stdout  # no block per row
    rows = _lines_of_rows(r.stdout, ["all", "high_hit_ratio"])
    assert len(rows) == 6, r.stdout  # every row on one line
    said = " ".join(r.stdout.split())
    shown = _header(r.stdout, "subset")
    assert shown[:3] == ["subset", "grouping", "group_value"]
    hidden = [c for c in ("efficiency_b_minus_a", "ci_high", "conclusion", "warning") if c not in shown]
    assert hidden and re.search(r"\d+ of 17 columns fit 100 characters; not shown: ", said), said
    assert all(c in said.split("not shown:", 1)[1] for c in hidden) and "--columns" in said and "--csv" in said


def test_columns_chooses_what_a_narrow_terminal_shows(wh):
    argv = ["sql", "ab_with_confidence", "-w", str(wh), "--columns", "group_value,efficiency_b_minus_a,conclusion"]
    r = runner.invoke(app, argv, env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    assert _header(r.stdout, "group_value") == ["group_value", "efficiency_b_minus_a", "conclusion"]
    assert "not shown" not in r.stdout and "0.0624" in r.stdout
    as_csv = _csv(runner.invoke(app, [*argv, "--csv"]))
    assert list(as_csv[0]) == ["group_value", "efficiency_b_minus_a", "conclusion"]
    bad = runner.invoke(
        app, ["sql", "ab_with_confidence", "-w", str(wh), "--columns", "efficency"], env={"COLUMNS": "400"}
    )
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "efficiency_a" in bad.output, bad.output


def test_without_a_terminal_tables_are_laid_out_for_100_columns(wh):
    """`make demo` under CI or piped to a file: rich alone would cut its tables at 80."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    script = (
        "from tierlens.console import print_rows\n"
        "print_rows('t', [f'column_{i}' for i in range(8)], [[f'v{i}' for i in range(8)]])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    widths = [len(ln) for ln in out.stdout.splitlines()]
    assert 80 < max(widths) <= 100 and "not shown" not in out.stdout, out.stdout
    assert _header(out.stdout, "column_0") == [f"column_{i}" for i in range(8)], out.stdout
