"""Every source tierlens ingests, one entry each: its name, its interval load, its options (hence
its settings) and its `tierlens ingest` commands.

The command line (cli/ingest.py), the settings (orchestration/settings.py: ``SOURCES`` and
``SETTINGS``) and the ingest DAG (dags/tierlens_ingest.py: one task ``ingest_<name>``) are all
built from this list, so adding a source is one module (its options dataclass and its interval
load, as in ingest/) and one entry here. Entries name their functions and classes as
``"module:name"``, resolved when used, but the options class is resolved as the settings are
built, while Airflow parses every DAG file: the module holding it must import nothing heavy at
its top (the built-in ones import only dataclasses; pyarrow alone takes about a second). For the
same reason a command's module is only imported by the command line.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from pathlib import Path

#: A source's interval load: the records of [start, end) into the warehouse, by the options;
#: returns the DAG task's XCom (ingest/interval.py: load_interval says what it holds).
IntervalLoad = Callable[[Path, datetime, datetime, object], dict]


@dataclass(frozen=True)
class Source:
    """One source: interval load, options, ``tierlens ingest`` commands (the DAG task is ``ingest_<name>``)."""

    name: str
    #: ``"module:function"`` of its IntervalLoad
    load: str
    #: ``"module:Class"`` of its options dataclass: a field whose metadata has a ``meaning`` is the
    #: setting ``<name>_<field>`` (default the field's); see orchestration/settings.py: source_options
    options: str
    #: `tierlens ingest COMMAND` -> ``"module:function"`` of a Typer command function
    commands: Mapping[str, str] = field(default_factory=dict)

    def interval_load(self) -> IntervalLoad:
        return resolve(self.load)

    def options_class(self) -> type:
        return resolve(self.options)

    @property
    def settings(self) -> dict[str, tuple[str, str]]:
        """Its settings (name -> (default, meaning)), listed with the others in dags/README.md."""
        return {
            f"{self.name}_{f.name}": (setting_text(f.default), f.metadata["meaning"])
            for f in fields(self.options_class())
            if "meaning" in f.metadata
        }

    def command_functions(self) -> dict[str, Callable]:
        return {name: resolve(ref) for name, ref in self.commands.items()}


def setting_text(value: object) -> str:
    """An option's default as a setting's text: a tuple comma-separated, 8.0 as 8."""
    if value is MISSING:
        raise ValueError("a source's options need a default for each setting")
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def resolve(ref: str) -> Callable:
    """``"package.module:name"`` -> the object (ValueError naming a bad reference)."""
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"source registry: {ref!r} is not 'module:name'")
    return getattr(importlib.import_module(module), name)


_INGEST = "tierlens.ingest"
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


def _builtin(name: str, options: str, commands: tuple[str, ...] = ()) -> Source:
    """A built-in source: its interval load and options are ingest/<name>.py's ``load_interval``
    and ``options``, its commands cli/ingest.py's functions of the same names (a dash in the
    command, an underscore in the function)."""
    return register(
        Source(
            name,
            f"{_INGEST}.{name}:load_interval",
            f"{_INGEST}.{name}:{options}",
            commands={c: f"{_CLI}:{c.replace('-', '_')}" for c in commands},
        )
    )


_builtin("synthetic", "SyntheticSourceOptions")
_builtin("slurm", "SlurmOptions", ("slurm", "slurm-spool"))
_builtin("condor", "CondorOptions", ("condor",))
_builtin("xrootd", "XrootdOptions", ("xrootd", "xrootd-osg"))
