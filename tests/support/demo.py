"""The demo fixture: `tierlens demo` on a small site, run once a session, its home and what it
printed kept (tests/test_demo_e2e.py and tests/test_figure_agreement.py share it, and make test runs
them on one worker)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

DAYS = 3.0
SEED = 11
NODES_PER_TYPE = 1
#: What the fixture runs: `make demo`'s command (test_make_demo_runs_what_the_fixture_runs) with a
#: smaller site, and its own home in place of $TIERLENS_HOME/demo.
DEMO_ARGS = ["demo", "--days", str(DAYS), "--seed", str(SEED), "--nodes-per-type", str(NODES_PER_TYPE)]


@dataclass(frozen=True)
class DemoRun:
    home: Path
    #: the terminal output, laid out for COLUMNS=100 (what `make demo` prints without a terminal)
    output: str


#: A folder to keep the run in and take it from when it is there (home/ and output.txt): while
#: working on the report or a query, the tests reread one demo instead of running it each time.
#: Unset (make test): a fresh run in a temporary folder.
KEEP = "TIERLENS_TEST_DEMO_KEEP"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    from tierlens.cli import app

    keep = Path(os.environ[KEEP]) if os.environ.get(KEEP) else None
    if keep is not None and (keep / "output.txt").is_file():
        return DemoRun(keep / "home", (keep / "output.txt").read_text())
    home = keep / "home" if keep is not None else tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(app, [*DEMO_ARGS, "--home", str(home)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    if keep is not None:
        (keep / "output.txt").write_text(result.stdout)
    return DemoRun(home, result.stdout)
