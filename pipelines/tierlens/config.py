"""Where tierlens keeps its state.

Everything lives under one folder, the tierlens home: ``$TIERLENS_HOME`` when set, otherwise
``$XDG_DATA_HOME/tierlens`` (``~/.local/share/tierlens``). Commands take ``--warehouse`` to point
at another DuckDB file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
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


#: Where each part of the state lives, relative to the home (one table: the layout at a glance).
LAYOUT: dict[str, str] = {
    "warehouse": "warehouse.duckdb",
    "lake": "lake",
    "reports": "reports",
    "dbt_state": "dbt",  # dbt's target/ and logs/, kept out of the source tree
    "spark_warehouse": "spark-warehouse",  # spark.sql.warehouse.dir of the Airflow spark target
    "python_marts": "python-marts",  # on a Spark target, the marts the dbt Python models build on DuckDB
    "state": "state",  # watermarks of incremental sources (HTCondor schedds)
    "xrootd_spool": "spool/xrootd",  # the collector's batches, stats and journal
    "synthetic": "synthetic",  # the synthetic site's simulations, one folder per options
    "alerts": "alerts",  # completeness warnings of the DAG runs
}


@dataclass(frozen=True)
class Paths:
    home: Path
    warehouse: Path = field(init=False)
    lake: Path = field(init=False)
    reports: Path = field(init=False)
    dbt_state: Path = field(init=False)
    spark_warehouse: Path = field(init=False)
    python_marts: Path = field(init=False)
    state: Path = field(init=False)
    xrootd_spool: Path = field(init=False)
    synthetic: Path = field(init=False)
    alerts: Path = field(init=False)

    def __post_init__(self) -> None:
        for name, relative in LAYOUT.items():
            object.__setattr__(self, name, self.home / relative)


def paths() -> Paths:
    return Paths(home())


def in_clone() -> bool:
    """Whether tierlens runs from a source checkout (an editable install), not an installed package."""
    return (REPO_ROOT / "Makefile").is_file() and (REPO_ROOT / "pipelines" / "tierlens").is_dir()


def demo_warehouses(p: Paths) -> list[Path]:
    """Where a read command looks for the demo's warehouse when the home holds none, in order:
    ``tierlens demo``'s default under the home, then, in a clone and only while no TIERLENS_HOME
    is set, the one ``make demo`` writes (the Makefile sets TIERLENS_HOME to <clone>/.tierlens,
    which the shell that reads afterwards does not have). A site's install is no clone, and a
    home someone chose is never read past for a clone's demo."""
    found = [Paths(p.home / "demo").warehouse]
    if in_clone() and not os.environ.get("TIERLENS_HOME"):
        made = Paths(REPO_ROOT / ".tierlens" / "demo").warehouse
        if made not in found:
            found.append(made)
    return found
