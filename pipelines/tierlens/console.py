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
from rich.console import Console, ConsoleDimensions
from rich.table import Table
from rich.text import Text

#: The width tables are laid out for when there is no terminal to measure (output to a file or a
#: pipe, `make demo` under CI) and no COLUMNS: rich's own 80 cuts the demo's buying guide.
NO_TERMINAL_WIDTH = 100


def _has_terminal() -> bool:
    for fd in (1, 0, 2):
        try:
            if os.get_terminal_size(fd).columns:
                return True
        except (AttributeError, ValueError, OSError):
            continue
    return False


class SiteConsole(Console):
    """rich's console, NO_TERMINAL_WIDTH wide when nothing says how wide to be (no terminal, no
    COLUMNS, no width set). One console for every command and the demo: a width set on it (a test,
    the demo's caller) holds for every table printed through it."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        told = self._width is not None or str(self._environ.get("COLUMNS", "")).isdigit()
        if told or self.is_dumb_terminal or _has_terminal():
            return size
        return ConsoleDimensions(NO_TERMINAL_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = SiteConsole()


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
    more: str = "--format csv or json gives every column.",
    on: Console | None = None,
) -> None:
    """``rows`` on the console as a table that fits the terminal, or as CSV or JSON on stdout.

    A table too wide for the terminal keeps one row per line with the columns that fit, in the
    query's order (the first ones are the keys), and names the others with how to see them
    (``more``); no column name or value is cut. An empty result says why (``empty_reason``)
    instead of printing headers only. ``on``: the console to print on (default: the one console)."""
    out_console = on or console
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
        out_console.print(f"{title}: no rows. {empty_reason}".rstrip(), highlight=False, markup=False, soft_wrap=True)
        return
    width = out_console.width
    text = [[number_text(v, c) for v, c in zip(row, columns)] for row in rows]
    full = [max([len(c), *(len(row[i]) for row in text)]) for i, c in enumerate(columns)]
    if _needed(full) <= width or _needed(_widest_words(columns, text)) <= width:
        shown = list(range(len(columns)))
    else:
        shown = _columns_that_fit(full, width)
    one_line = len(shown) < len(columns)
    table = Table(
        title=title, caption=f"{len(rows):,} row(s)", caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for i in shown:
        numbers = all(isinstance(r[i], (int, float, Decimal)) for r in rows if r[i] is not None)
        table.add_column(
            columns[i],
            overflow="fold",
            no_wrap=one_line,
            min_width=len(columns[i]),
            justify="right" if numbers else "left",
        )
    for row in text:
        table.add_row(*(Text(row[i]) for i in shown))
    out_console.print(table)
    if one_line:
        hidden = [c for i, c in enumerate(columns) if i not in shown]
        out_console.print(
            f"{len(shown)} of {len(columns)} columns fit {width} characters; not shown: {', '.join(hidden)}. {more}",
            style="dim",
            highlight=False,
            markup=False,
        )


def _needed(widths: Sequence[int]) -> int:
    """The characters a table of columns this wide takes: three between columns and at the edges."""
    return sum(widths) + 3 * len(widths) + 1


def _widest_words(columns: Sequence[str], text: list[list[str]]) -> list[int]:
    """Each column's narrowest width that keeps its name and every word of its values whole."""
    return [max([len(c), *(len(w) for row in text for w in row[i].split())]) for i, c in enumerate(columns)]


def _columns_that_fit(full: Sequence[int], width: int) -> list[int]:
    """The columns, in order, that fit ``width`` on one line each row (a column too wide is passed
    over for narrower ones after it); the first column always, folded if it must be."""
    kept, used = [0], _needed([full[0]])
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
