"""tierlens as a site installs it: the sdist and wheel built with `python -m build`, the wheel installed
with its dependencies into a fresh virtualenv outside the clone, and the demo and the bundled queries
run from a folder that is not the clone."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
QUERY = "efficiency_by_storage_type"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a shell on a site's host: nothing that points back into the clone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIERLENS_", "PYTHON", "VIRTUAL_ENV"))}
    env["TIERLENS_HOME"] = str(home)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(REPO) not in p)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Builds the sdist, then the wheel from the unpacked sdist: MANIFEST.in must carry what setup.py bundles.
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], REPO, dict(os.environ), timeout=600)
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory, dist) -> dict:
    """A fresh virtualenv (its own site-packages, no access to the shared one) with the wheel and its
    dependencies installed by pip, and a working folder outside the clone."""
    root = tmp_path_factory.mktemp("site")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], root, dict(os.environ), timeout=120)
    wheel = next(dist.glob("tierlens-*.whl"))
    env = _clean_env(root / "home")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], root, env, timeout=900)
    work = root / "work"
    work.mkdir()
    return {"venv": venv, "env": env, "work": work, "tierlens": str(venv / "bin" / "tierlens")}


def _shipped_queries() -> dict[str, str]:
    """name -> question, read from the clone's sql/ files here, independently of tierlens' parser."""
    out = {}
    for p in sorted((REPO / "sql").glob("*.sql")):
        first = p.read_text().splitlines()[0]
        assert first.startswith("-- Question: "), f"{p.name} must start with its question"
        out[p.stem] = first.removeprefix("-- Question: ").strip()
    return out


@pytest.mark.timeout(900)
def test_sdist_and_wheel_carry_the_dbt_project_and_queries(dist):
    sdist = next(dist.glob("tierlens-*.tar.gz"))
    wheel = next(dist.glob("tierlens-*.whl"))
    shipped = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "dbt").rglob("*")
        if p.is_file() and not {"target", "logs", "dbt_packages"} & set(p.relative_to(REPO / "dbt").parts)
    ] + [f"sql/{n}.sql" for n in _shipped_queries()]
    with tarfile.open(sdist) as t:
        in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    with zipfile.ZipFile(wheel) as z:
        in_wheel = set(z.namelist())
    assert {"LICENSE", "setup.py", "MANIFEST.in"} <= in_sdist
    assert set(shipped) <= in_sdist
    assert {f"tierlens/_bundled/{s}" for s in shipped} <= in_wheel
    assert "tierlens/_bundled/plugins/htcondor/tierlens_startd_cron.py" in in_wheel
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in in_wheel)


@pytest.mark.timeout(900)
def test_installed_wheel_runs_the_demo_and_the_bundled_queries(site):
    env, work, exe = site["env"], site["work"], site["tierlens"]
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert _run([exe, "--version"], work, env, 60).stdout.split() == ["tierlens", version]

    # The package finds its files inside the virtualenv, not in the clone.
    where = _run(
        [
            str(site["venv"] / "bin" / "python"),
            "-c",
            "from tierlens import resources as r; print(r.dbt_project_dir()); print(r.sql_dir())",
        ],
        work,
        env,
        60,
    ).stdout.split()
    assert all(Path(w).is_relative_to(site["venv"]) for w in where), where

    # doctor on this "host": the shipped dbt project is found inside the virtualenv.
    doc = subprocess.run([exe, "doctor", "--json"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert doc.returncode in (0, 1), doc.stderr
    dbt = next(f for f in json.loads(doc.stdout)["findings"] if f["area"] == "dbt" and f["check"] == "project")
    assert dbt["status"] == "ok" and Path(dbt["detail"]).is_relative_to(site["venv"])

    _run([exe, "demo", "--days", "1"], work, env, 600)
    warehouse = Path(env["TIERLENS_HOME"]) / "demo" / "warehouse.duckdb"
    assert warehouse.is_file()

    listed = _run([exe, "sql", "--list"], work, dict(env, COLUMNS="400"), 60).stdout
    for name, question in _shipped_queries().items():
        line = next((ln for ln in listed.splitlines() if f" {name} " in ln), None)
        assert line is not None and question in line, (name, question)

    out = _run([exe, "sql", QUERY, "--csv", "--warehouse", str(warehouse)], work, env, 120).stdout
    rows = list(csv.reader(io.StringIO(out)))
    # The same file run here by DuckDB directly against the installed demo's warehouse.
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cur = con.execute((REPO / "sql" / f"{QUERY}.sql").read_text())
        expected = [[d[0] for d in cur.description], *cur.fetchall()]
        jobs_in_window = con.execute(
            "SELECT count(*) FROM marts.job_efficiency WHERE day > (SELECT max(day) FROM marts.job_efficiency) - 28"
        ).fetchone()[0]
    finally:
        con.close()
    assert rows[0] == expected[0]
    assert len(rows) - 1 == len(expected) - 1 > 0
    jobs_col = rows[0].index("jobs")
    assert [int(r[jobs_col]) for r in rows[1:]] == [int(r[jobs_col]) for r in expected[1:]]
    assert sum(int(r[jobs_col]) for r in rows[1:]) == jobs_in_window


# ---- the same lookups in this process (the clone) ------------------------------------------


def test_sql_list_and_sql_by_name_in_the_clone(tmp_path):
    from typer.testing import CliRunner

    from tierlens.cli import app
    from tierlens.resources import bundled_queries, find_query
    from tierlens.warehouse import Warehouse

    assert {q.name: q.question for q in bundled_queries()} == _shipped_queries()
    assert find_query("rejects_summary") == find_query("rejects_summary.sql") == REPO / "sql" / "rejects_summary.sql"
    own = tmp_path / "mine.sql"
    own.write_text("select 42 as answer")
    assert find_query(str(own)) == own
    with pytest.raises(FileNotFoundError, match="bundled queries: ab_summary"):
        find_query("../sql/ab_summary")

    wh = tmp_path / "warehouse.duckdb"
    Warehouse(wh).close()
    runner = CliRunner()
    r = runner.invoke(app, ["sql", "rejects_summary", "--csv", "-w", str(wh)])
    assert r.exit_code == 0, r.output
    header = next(csv.reader(io.StringIO(r.stdout)))
    con = duckdb.connect(str(wh), read_only=True)
    try:
        expected = [d[0] for d in con.execute((REPO / "sql" / "rejects_summary.sql").read_text()).description]
    finally:
        con.close()
    assert header == expected
    r = runner.invoke(app, ["sql", str(own), "--csv", "-w", str(wh)])
    assert r.stdout.split() == ["answer", "42"]
    r = runner.invoke(app, ["sql", "no_such_query", "-w", str(wh)])
    assert r.exit_code == 2 and "tierlens sql --list" in r.output  # a name near none gets the list command
