"""The `tierlens` command: every stage can be run on its own from here.

Each module of this package is one command group and exports its Typer ``app``; the ones without
a name (about, warehouse, transform, report, demo, doctor) put their commands at the top level.
This file only attaches them; no module imports the package back.
"""

from __future__ import annotations

import typer

from . import (
    about,
    change,
    collect,
    common,
    demo,
    doctor,
    export,
    ingest,
    lake,
    probe,
    report,
    simulate,
    transform,
    warehouse,
)


def _flags_show_no_type() -> None:
    """Typer's help (0.2x with its own click) prints a type beside every option, ``<bool>`` beside a
    flag such as --version or --help, which reads as if the flag took a value: flags get none."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - another Typer layout: its help is as it is
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_tierlens_flags", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._tierlens_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_show_no_type()

app = typer.Typer(
    help="tierlens: what worker-node storage and caching do to your jobs' CPU efficiency.",
    no_args_is_help=True,
    add_completion=False,
    callback=common.root,
)
for group in (
    about,
    warehouse,
    transform,
    report,
    lake,
    ingest,
    collect,
    demo,
    doctor,
    simulate,
    export,
    change,
    probe,
):
    app.add_typer(group.app)
