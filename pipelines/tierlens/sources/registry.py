"""Every source tierlens ingests, one entry each: its name, its `tierlens ingest` commands, its
settings and the ingest DAG's task.

The command line (cli/ingest.py), the settings (orchestration/settings.py: ``SOURCES`` and
``SETTINGS``) and the ingest DAG (dags/tierlens_ingest.py: one task ``ingest_<name>``) are all
built from this list, so adding a source is one module (its ``batches()`` and what the entry
names) and one entry here. Entries name their functions as ``"module:function"`` and are resolved
when used: the settings and the DAG file import this module without importing any source. The
DAG imports a task's module, so that module must not import ``tierlens.cli`` at its top (the CLI
attaches every command as it loads; built-in tasks live in orchestration/tasks.py, commands in
cli/ingest.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Optional

#: A source's DAG task: load the records of [start, end) into the warehouse and return the
#: XCom; the last argument looks up Airflow Variables (orchestration.settings.Lookup).
IntervalLoad = Callable[[Path, datetime, datetime, Optional[Callable[[str], Optional[str]]]], dict]


@dataclass(frozen=True)
class Source:
    """One source: ``tierlens ingest`` commands, ingest DAG task ``ingest_<name>``, settings."""

    name: str
    #: the DAG task, ``"module:function"`` of an IntervalLoad
    task: str
    #: `tierlens ingest COMMAND` -> ``"module:function"`` of a Typer command function
    commands: Mapping[str, str] = field(default_factory=dict)
    #: its settings (name -> (default, meaning)), listed with the others in dags/README.md
    settings: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def load(self) -> IntervalLoad:
        return resolve(self.task)

    def command_functions(self) -> dict[str, Callable]:
        return {name: resolve(ref) for name, ref in self.commands.items()}


def resolve(ref: str) -> Callable:
    """``"package.module:function"`` -> the function (ValueError naming a bad reference)."""
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"source registry: {ref!r} is not 'module:function'")
    return getattr(importlib.import_module(module), name)


_TASKS = "tierlens.orchestration.tasks"
_CLI = "tierlens.cli.ingest"

_SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add a source (after the built-in ones, in task order); its name and settings must be new."""
    if source.name in _SOURCES:
        raise ValueError(f"source {source.name!r} is registered already")
    taken = {s for other in _SOURCES.values() for s in other.settings}
    if taken & source.settings.keys():
        raise ValueError(f"source {source.name!r}: settings {sorted(taken & source.settings.keys())} are taken")
    _SOURCES[source.name] = source
    return source


def sources() -> tuple[Source, ...]:
    """Every registered source, in the ingest DAG's task order."""
    return tuple(_SOURCES.values())


def source(name: str) -> Source:
    try:
        return _SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known: {', '.join(_SOURCES)}") from None


def _builtin(name: str, commands: tuple[str, ...] = (), **settings: tuple[str, str]) -> Source:
    """A built-in source: its task is orchestration/tasks.py's ``load_<name>``, its commands are
    cli/ingest.py's functions of the same names (a dash in the command, an underscore in the function)."""
    return register(
        Source(
            name,
            f"{_TASKS}:load_{name}",
            commands={c: f"{_CLI}:{c.replace('-', '_')}" for c in commands},
            settings=settings,
        )
    )


_builtin(
    "synthetic",
    synthetic_start=(
        "",
        "synthetic site: first simulated day (UTC); default start_date, so the first scheduled hours have data",
    ),
    # a week (the report's period): simulated by the first ingest task, ~3 s per node and day
    synthetic_days=("7", "synthetic site: days simulated (after 3 days of warm-up)"),
    synthetic_seed=("42", "synthetic site: seed"),
    synthetic_nodes_per_type=("2", "synthetic site: worker nodes per storage type"),
)
_builtin(
    "slurm",
    ("slurm", "slurm-spool"),
    slurm_sacct=("sacct", "sacct command"),
    slurm_clusters=("", "sacct --clusters"),
    slurm_spool=("", "comma-separated spool folders of the SPANK plugin (job tags)"),
    slurm_tagged_days=(
        "8",
        "days before each interval whose spool-tagged jobs without a job row are asked for by id "
        "(the maximum wall time plus a day); 0: never",
    ),
)
_builtin(
    "condor",
    ("condor",),
    condor_history=("", "comma-separated HTCondor history files or SPOOL folders"),
    condor_cluster=("htcondor", "pool name for ads without TierlensCluster"),
)
_builtin(
    "xrootd",
    ("xrootd", "xrootd-osg"),
    xrootd_dir=("", "folder where `tierlens collect xrootd` writes file_access Parquet batches"),
)
