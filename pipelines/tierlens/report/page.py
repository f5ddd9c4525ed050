"""The page model the template renders: sections holding facts, figures, tables and notes.

A ``Table`` is both what the page shows and the CSV file written beside it, so the two cannot
disagree; a figure names the CSV that holds its data.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass, field, replace
from typing import Any

from . import fmt

#: Row key of a dict {column key: format kind} overriding the column's format for that row only.
KINDS_KEY = "_kinds"


@dataclass(frozen=True)
class Fact:
    """One line of facts: a label and its value, and the id of the section that has the detail."""

    label: str
    value: str
    link: str | None = None


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"  # a key of fmt.FORMATTERS
    null_text: str = fmt.MISSING
    #: Another key of the row whose value is appended to the cell in HTML (e.g. a currency).
    suffix_key: str | None = None
    #: Written to the CSV file only, not shown in the HTML table.
    csv_only: bool = False
    #: Shown in HTML on a details line under its row (label: value) instead of in a column of its
    #: own, so the key columns of a wide table stay within a laptop's width; the CSV keeps it as a column.
    detail: bool = False

    def cell(self, row: dict[str, Any]) -> str:
        value = row.get(self.key)
        if value is None and self.kind != "flag":
            return self.null_text
        # a row may show one of its values in another unit (B − A under two efficiencies is in points)
        kind = row.get(KINDS_KEY, {}).get(self.key, self.kind)
        text = fmt.FORMATTERS[kind](value)
        if self.suffix_key and row.get(self.suffix_key):
            text = f"{text} {row[self.suffix_key]}"
        return text

    @property
    def numeric(self) -> bool:
        return self.kind not in fmt.TEXT_KINDS

    def css_class(self, row: dict[str, Any]) -> str:
        classes = ["num"] if self.numeric else []
        if isinstance(row.get(self.key), dt.date):
            classes.append("date")  # a day reads whole: never '2026-' over '10-01'

        if row.get(self.key) is None and self.kind != "flag":
            classes.append("missing")
        return " ".join(classes)

    def detailed(self) -> Column:
        """This column on the details line."""
        return replace(self, detail=True)

    def labelled(self, **fields: Any) -> Column:
        """This column with ``{field}`` placeholders of its label filled in."""
        return replace(self, label=self.label.format(**fields)) if fields else self


@dataclass
class Table:
    """A table shown in the page (``shown``) or only the data behind a figure; always a CSV."""

    name: str
    caption: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    flag_key: str | None = None
    shown: bool = True
    #: The rows the page shows when not all of them (a long table's best rows); the CSV has ``rows``.
    page_rows: list[dict[str, Any]] | None = None
    #: How ``page_rows`` were picked, in words ("the 10 cheapest").
    page_rows_text: str = ""
    #: Where else every row is, besides the CSV file (a `tierlens sql` command).
    every_row_text: str = ""

    @property
    def csv_name(self) -> str:
        return f"{self.name}.csv"

    @property
    def shown_rows(self) -> list[dict[str, Any]]:
        return self.rows if self.page_rows is None else self.page_rows

    @property
    def left_out(self) -> int:
        """Rows in the CSV file that the page does not show."""
        return len(self.rows) - len(self.shown_rows)

    @property
    def html_columns(self) -> list[Column]:
        return [c for c in self.columns if not c.csv_only and not c.detail]

    @property
    def detail_columns(self) -> list[Column]:
        return [c for c in self.columns if c.detail and not c.csv_only]

    def html_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "flagged": bool(self.flag_key and row.get(self.flag_key)),
                "total": bool(row.get("_total")),
                "cells": [(c.cell(row), c.css_class(row)) for c in self.html_columns],
                # a value that says nothing (no warning, no flag) is left off the details line; a 0 stays
                "details": [(c.label, c.cell(row)) for c in self.detail_columns if _says_something(row.get(c.key))],
            }
            for row in self.shown_rows
        ]

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([c.key for c in self.columns])
        for row in self.rows:
            writer.writerow([fmt.csv_value(row.get(c.key)) for c in self.columns])
        return buf.getvalue()


def _says_something(value: Any) -> bool:
    return not (value is None or value is False or value == "")


@dataclass
class FigureBlock:
    uri: str
    alt: str
    caption: str
    data_csv: str | None = None


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    no_data: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    #: Shown before the table of contents: the section that answers the reader's questions.
    lead: bool = False
    figures: list[FigureBlock] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return not self.no_data
