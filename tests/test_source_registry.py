"""Adding a source is one module and one entry (docs/architecture.md, "Adding a source"): a
throw-away source registered in sources/registry.py reaches `tierlens ingest`, the settings
(SOURCES and SETTINGS, hence dags/README.md's list) and the ingest DAG's tasks, and each of them
runs it. The DAG is parsed by the real Airflow of .venv-airflow, in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.airflow import AIRFLOW_PY, require_airflow
from tierlens.sources import registry

REPO = Path(__file__).resolve().parents[1]

#: the one module of the throw-away source: its options, its interval load and its command (the
#: settings import it as Airflow parses the DAG, so it imports nothing heavy at its top, and no
#: tierlens.cli module: that would attach the commands while it loads)
MODULE = '''
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional

import typer


@dataclass(frozen=True)
class Options:
    dir: str = field(default="/nowhere", metadata={"meaning": "the throw-away source's folder"})


def load(wh: Path, start, end, options: Options) -> dict:
    from tierlens.ingest.interval import load_interval

    out = load_interval("throwaway", iter(()), wh, start, end, lambda a, b: "a throw-away source")
    return out | {"folder": options.dir}


def command(warehouse_file: Annotated[Optional[Path], typer.Option("--warehouse")] = None) -> None:
    """Load the throw-away source."""
    print(f"throwaway into {warehouse_file}")
'''

#: the one entry, then what the test reads back (run before anything imports the settings)
REGISTER = """
import sys
sys.path.insert(0, {folder!r})
from tierlens.sources import registry
registry.register(registry.Source("throwaway", "throwaway_source:load", "throwaway_source:Options",
                                  commands={{"throwaway": "throwaway_source:command"}}))
"""

MAIN_SIDE = """
import json
from datetime import datetime, timezone
from typer.testing import CliRunner
from tierlens.cli import app
from tierlens.orchestration import settings
cli = CliRunner().invoke(app, ["ingest", "throwaway", "--warehouse", {wh!r}])
print("RESULT " + json.dumps({{"sources": list(settings.SOURCES), "settings": settings.SETTINGS["throwaway_dir"],
                               "sources_help": settings.SETTINGS["sources"][1],
                               "cli_exit": cli.exit_code, "cli_output": cli.output}}))
"""

AIRFLOW_SIDE = """
import json, os
from datetime import datetime, timezone
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
dag = bag.dags["tierlens_ingest"]
import tierlens_ingest
start, end = datetime(2026, 10, 1, 12, tzinfo=timezone.utc), datetime(2026, 10, 1, 13, tzinfo=timezone.utc)
os.environ["TIERLENS_SOURCES"] = "throwaway"
loaded = tierlens_ingest.load_source("throwaway", start, end)
print("RESULT " + json.dumps({{"errors": {{k: str(v)[-1500:] for k, v in bag.import_errors.items()}},
                               "tasks": sorted(t.task_id for t in dag.tasks), "loaded": loaded}}))
"""


def _run(python: Path, code: str, env: dict[str, str]) -> dict:
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.fixture
def throwaway(tmp_path):
    (tmp_path / "throwaway_source.py").write_text(MODULE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIERLENS_", "AIRFLOW"))}
    env |= {
        "PYTHONPATH": os.pathsep.join([str(REPO / "pipelines"), str(REPO / "dags"), str(tmp_path)]),
        "TIERLENS_HOME": str(tmp_path / "home"),
    }
    return tmp_path, env


def test_the_built_in_sources_are_the_registrys():
    from tierlens.cli.ingest import app
    from tierlens.orchestration import settings

    names = [s.name for s in registry.sources()]
    assert list(settings.SOURCES) == names == ["synthetic", "slurm", "condor", "xrootd"]
    commands = sorted(c.name for c in app.registered_commands)
    assert commands == sorted(n for s in registry.sources() for n in s.commands)
    for s in registry.sources():
        assert callable(s.interval_load())
        assert all(settings.SETTINGS[k] == v for k, v in s.settings.items())


@dataclass(frozen=True)
class DaysOptions:
    """Options whose setting, under the source name slurm_tagged, is slurm's slurm_tagged_days."""

    days: float = field(default=1.0, metadata={"meaning": "a setting another source has"})


def test_a_name_or_setting_taken_twice_is_refused():
    with pytest.raises(ValueError, match="registered already"):
        registry.register(registry.Source("condor", "x:y", "tierlens.ingest.condor:CondorOptions"))
    with pytest.raises(ValueError, match="slurm_tagged_days"):
        registry.register(registry.Source("slurm_tagged", "x:y", f"{__name__}:DaysOptions"))
    assert [s.name for s in registry.sources()] == ["synthetic", "slurm", "condor", "xrootd"]


def test_a_registered_source_reaches_the_cli_and_the_settings(throwaway):
    folder, env = throwaway
    wh = folder / "cli.duckdb"
    got = _run(Path(sys.executable), REGISTER.format(folder=str(folder)) + MAIN_SIDE.format(wh=str(wh)), env)
    assert got["sources"] == ["synthetic", "slurm", "condor", "xrootd", "throwaway"]
    assert got["settings"] == ["/nowhere", "the throw-away source's folder"]
    assert got["sources_help"].endswith("synthetic, slurm, condor, xrootd, throwaway")
    assert got["cli_exit"] == 0, got["cli_output"]
    assert f"throwaway into {wh}" in got["cli_output"].replace("\n", "")


def test_a_registered_source_is_a_task_of_the_ingest_dag_that_loads_it(throwaway):
    require_airflow()
    folder, env = throwaway
    env |= {"AIRFLOW_HOME": str(folder / "airflow-home"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    code = REGISTER.format(folder=str(folder)) + AIRFLOW_SIDE.format(dags=str(REPO / "dags" / "tierlens_ingest.py"))
    got = _run(AIRFLOW_PY, code, env)
    assert got["errors"] == {}
    assert got["tasks"] == sorted(
        ["ingest_synthetic", "ingest_slurm", "ingest_condor", "ingest_xrootd", "ingest_throwaway", "publish"]
    )
    loaded = got["loaded"]
    assert (loaded["source"], loaded["batches"], loaded["loaded_nothing"]) == ("throwaway", 0, "a throw-away source")
    assert loaded["folder"] == "/nowhere"
    assert (folder / "home" / "warehouse.duckdb").exists()
