"""The `tierlens` command: every stage can be run on its own from here.

Each module of this package is one command group and exports its Typer ``app``; the ones without
a name (about, warehouse, transform, report, demo, doctor) put their commands at the top level.
This file only attaches them; no module imports the package back.
"""

from __future__ import annotations

import typer

from . import (about, change, collect, common, demo, doctor, export, ingest, lake, probe, report, simulate,
               transform, warehouse)

app = typer.Typer(help="tierlens: what worker-node storage and caching do to your jobs' CPU efficiency.",
                  no_args_is_help=True, add_completion=False, callback=common.root)
for group in (about, warehouse, transform, report, lake, ingest, collect, demo, doctor, simulate, export,
              change, probe):
    app.add_typer(group.app)


def main() -> None:  # pragma: no cover - console entry point
    app()
