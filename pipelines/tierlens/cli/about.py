"""`tierlens version` and `tierlens schema`: what this tierlens is and the records it speaks."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from .. import __version__
from ..records import SPECS, RecordKind, describe
from .common import console

app = typer.Typer()


@app.command()
def version() -> None:
    """Print the tierlens version."""
    console.print(__version__)


@app.command()
def schema(kind: Annotated[Optional[RecordKind], typer.Argument(help="Record kind; all when omitted.")] = None) -> None:
    """Show the canonical records: every field with its type, unit and meaning."""
    for k in [kind] if kind else list(RecordKind):
        t = Table(title=f"{k.value} (raw table {k.table}; natural key: {', '.join(SPECS[k].natural_key)})")
        for col in ("field", "type", "unit", "meaning"):
            t.add_column(col)
        for row in describe(k):
            t.add_row(*row)
        console.print(t)
