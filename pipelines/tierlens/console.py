"""The console's tables: one number format and a table that fits the terminal (or CSV/JSON).

Every command and the demo print rows through here, so a figure reads the same wherever it is
shown. Kept out of the cli package: the demo and other stages use it without importing the
command line.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from enum import Enum

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

console = Console()


class OutputFormat(str, Enum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


#: Integer columns printed as they are, without thousands separators: identifiers and years.
_PLAIN_INTEGER_COLUMNS = re.compile(r"(^|_)(id|year|version|port|pid)$")


def number_text(value: object, column: str = "") -> str:
    """One number format for every console table: thousands separators, about four significant
    digits, never an exponent; None as an empty cell. CSV and JSON keep the values unrounded."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value) if _PLAIN_INTEGER_COLUMNS.search(column) else f"{value:,}"
    if isinstance(value, (float, Decimal)):
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        decimals = min(10, 3 - math.floor(math.log10(abs(v))))
        text = f"{v:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(value)


def print_rows(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence],
    out: OutputFormat | bool = OutputFormat.TABLE,
    empty_reason: str = "",
) -> None:
    """``rows`` on the console as a table that fits the terminal, or as CSV or JSON on stdout.

    A table wider than the terminal is printed one row per block (column: value), so no column name
    or value is cut; an empty result says why (``empty_reason``) instead of printing headers only."""
    fmt = OutputFormat.CSV if out is True else (OutputFormat.TABLE if out is False else out)
    rows = list(rows)
    if fmt is OutputFormat.CSV:
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        w.writerows(rows)
        return
    if fmt is OutputFormat.JSON:
        sys.stdout.write(json.dumps([dict(zip(columns, r)) for r in rows], indent=1, default=_json_value) + "\n")
        return
    if not rows:
        console.print(f"{title}: no rows. {empty_reason}".rstrip(), highlight=False, markup=False)
        return
    text = [[number_text(v, c) for v, c in zip(row, columns)] for row in rows]
    table = Table(
        title=title, caption=f"{len(rows):,} row(s)", caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for i, c in enumerate(columns):
        numbers = all(isinstance(r[i], (int, float, Decimal)) for r in rows if r[i] is not None)
        table.add_column(c, overflow="fold", min_width=len(c), justify="right" if numbers else "left")
    for row in text:
        table.add_row(*(Text(v) for v in row))
    if _fits(columns, text):
        console.print(table)
    else:
        _print_blocks(title, columns, text)


def _fits(columns: Sequence[str], text: list[list[str]]) -> bool:
    """Whether a table of ``text`` can show every column name and every value word whole in this
    terminal: the widest word of each column, plus three characters between columns and the edges."""
    widest = [max([len(c), *(len(w) for row in text for w in row[i].split())]) for i, c in enumerate(columns)]
    return sum(widest) + 3 * len(columns) + 1 <= console.width


def _print_blocks(title: str, columns: Sequence[str], text: list[list[str]]) -> None:
    """One block per row, a line per column: what psql calls expanded display."""
    console.print(title, style="bold", highlight=False, markup=False)
    name_width = max(len(c) for c in columns)
    for n, row in enumerate(text, 1):
        block = Table(
            show_header=False, box=None, padding=(0, 1), title=f"row {n:,} of {len(text):,}", title_justify="left"
        )
        block.add_column(width=name_width, no_wrap=True, style="cyan")
        block.add_column(overflow="fold")
        for c, v in zip(columns, row):
            block.add_row(Text(c), Text(v))
        console.print(block)
    console.print(
        f"{len(text):,} row(s), one per block: the table is wider than this terminal "
        "(--format csv or json for the whole table on a line per row)",
        style="dim",
        highlight=False,
    )


def _json_value(v: object) -> object:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    return str(v)
