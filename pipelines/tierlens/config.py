"""Where tierlens keeps its state.

Everything lives under one folder, the tierlens home: ``$TIERLENS_HOME`` when set, otherwise
``$XDG_DATA_HOME/tierlens`` (``~/.local/share/tierlens``). Commands take ``--warehouse`` to point
at another DuckDB file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .resources import locate

REPO_ROOT = Path(__file__).resolve().parents[2]  # meaningful only in a clone
# The shipped dbt project and queries (inside the installed package, or the clone's folders):
# see resources.py. A site's own dbt project: resources.dbt_project_dir().
DBT_PROJECT_DIR = locate("dbt")
SQL_DIR = locate("sql")


def home() -> Path:
    explicit = os.environ.get("TIERLENS_HOME")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "tierlens"


@dataclass(frozen=True)
class Paths:
    home: Path

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse.duckdb"

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    @property
    def reports(self) -> Path:
        return self.home / "reports"

    @property
    def dbt_state(self) -> Path:
        """dbt's target/ and logs/, kept out of the source tree."""
        return self.home / "dbt"


def paths() -> Paths:
    return Paths(home())
