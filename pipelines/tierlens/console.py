"""The console's tables: one number format and a table that fits the terminal (or CSV/JSON).

Every command and the demo print rows through here, so a figure reads the same wherever it is
shown. Kept out of the cli package: the demo and other stages use it without importing the
command line.
"""

from __future__ import annotations

import csv
import json
import math
import os
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

#: the width tables are laid out for when there is no terminal to measure (output to a file or a
#: pipe, `make demo` under CI) and no COLUMNS: rich's own 80 cuts the demo's tables
NO_TERMINAL_WIDTH = 100


def table_width() -> int:
    """The terminal's width (or COLUMNS), else NO_TERMINAL_WIDTH."""
    if os.environ.get("COLUMNS", "").isdigit():
        return console.width
    for fd in (1, 0, 2):
        try:
            if os.get_terminal_size(fd).columns:
                return console.width
        except (AttributeError, ValueError, OSError):
            continue
    return NO_TERMINAL_WIDTH


def _console_of(width: int) -> Console:
    """The console, or one as wide as ``width`` when that is wider than the console thinks it is
    (rich's print never goes past its console's width)."""
    return console if console.width == width else Console(width=width)


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
    more: str = "--format csv or json gives every column",
) -> None:
    """``rows`` on the console as a table that fits the terminal, or as CSV or JSON on stdout.

    A table too wide for the terminal keeps one row per line with the columns that fit, in the
    query's order (the first ones are the keys), and names the others with how to see them
    (``more``); no column name or value is cut. An empty result says why (``empty_reason``)
    instead of printing headers only."""
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
    width = table_width()
    to = _console_of(width)
    if not rows:
        to.print(f"{title}: no rows. {empty_reason}".rstrip(), highlight=False, markup=False, soft_wrap=True)
        return
    text = [[number_text(v, c) for v, c in zip(row, columns)] for row in rows]
    numbers = [
        all(isinstance(r[i], (int, float, Decimal)) for r in rows if r[i] is not None) for i in range(len(columns))
    ]
    full = [max([len(c), *(len(row[i]) for row in text)]) for i, c in enumerate(columns)]
    if _needed(full) <= width or _needed(_widest_words(columns, text)) <= width:
        shown = list(range(len(columns)))
    else:
        shown = _columns_that_fit(full, width)
    table = Table(
        title=title, caption=f"{len(rows):,} row(s)", caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    one_line = len(shown) < len(columns)
    for i in shown:
        c = columns[i]
        table.add_column(
            c, overflow="fold", no_wrap=one_line, min_width=len(c), justify="right" if numbers[i] else "left"
        )
    for row in text:
        table.add_row(*(Text(row[i]) for i in shown))
    to.print(table)
    if one_line:
        hidden = [c for i, c in enumerate(columns) if i not in shown]
        to.print(
            f"{len(shown)} of {len(columns)} columns fit {width} characters; not shown: {', '.join(hidden)}. {more}",
            style="dim",
            highlight=False,
            markup=False,
        )


def _needed(widths: Sequence[int]) -> int:
    """The characters a table of columns this wide takes: three between columns and at the edges."""
    return sum(widths) + 3 * len(widths) + 1


def _widest_words(columns: Sequence[str], text: list[list[str]]) -> list[int]:
    """Each column's narrowest width that keeps its name and every word of its values whole (its
    text wrapped at spaces)."""
    return [max([len(c), *(len(w) for row in text for w in row[i].split())]) for i, c in enumerate(columns)]


def _columns_that_fit(full: Sequence[int], width: int) -> list[int]:
    """The columns, in order, that fit ``width`` on one line each row (a column too wide is passed
    over for narrower ones after it); the first column always, folded if it must be."""
    kept = [0]
    used = _needed([full[0]])
    for i in range(1, len(full)):
        if used + full[i] + 3 <= width:
            kept.append(i)
            used += full[i] + 3
    return kept


def _json_value(v: object) -> object:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    return str(v)
