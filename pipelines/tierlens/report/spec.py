"""What a report section is, as data, and the one runner that turns a spec into a page section.

A section module declares a ``SectionSpec``: its id, title and intro, the marts it needs (and the
hint shown when they are empty), the tables it may write (each a CSV file) and the figures it may
draw. Its ``body`` only queries and fills rows in; the runner does the rest: the "no data" guard for
missing or empty marts, turning an unreadable warehouse into "no data" instead of a crash, and
putting the tables in the order the spec lists them. The registry (``registry.py``) derives the
report's ids, table of contents and CSV names from the specs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..warehouse import QUERY_ERRORS
from .page import Column, Fact, FigureBlock, Section, Table
from .period import ReportPeriod, clip_data
from .reader import MartReader


@dataclass(frozen=True)
class TableSpec:
    """A table of a section and its CSV file ``<name>.csv``. The caption and column labels may hold
    ``{field}`` placeholders that the body fills in when it adds the table."""

    name: str
    caption: str
    columns: tuple[Column, ...]
    shown: bool = True
    flag_key: str | None = None
    #: A long table shows its first ``top`` rows (the body orders them best first, or picks them:
    #: ``SectionOut.table(page_rows=...)``) and says how many it left out and where they are; the CSV
    #: file keeps every row.
    top: int | None = None
    #: How the page's rows were picked, in words; ``{top}`` is filled in.
    top_text: str = "the first {top}"
    #: Where else every row is, besides the CSV file (a `tierlens sql` command), or "".
    every_row_text: str = ""

    @property
    def csv_name(self) -> str:
        return f"{self.name}.csv"


@dataclass(frozen=True)
class PlotSpec:
    """A figure: the function of ``plots`` that draws it, its text, and the table holding its data.
    The caption may hold ``{field}`` placeholders that the body fills in when it draws the figure."""

    name: str
    draw: Callable[..., str]
    alt: str
    caption: str
    data: str


class Shown(Enum):
    """When the sections of a group are in the report at all (their marts decide)."""

    ALWAYS = "always"
    ANY_MART_EXISTS = "when the warehouse has any of the group's marts"
    MART_HAS_ROWS = "when one of the group's marts has rows"


@dataclass(frozen=True)
class Group:
    name: str
    shown: Shown


CORE = Group("core", Shown.ALWAYS)
ANALYSIS = Group("analysis", Shown.ANY_MART_EXISTS)
PREDICTION = Group("prediction", Shown.MART_HAS_ROWS)
OPERATIONS = Group("operations", Shown.ANY_MART_EXISTS)
HARDWARE = Group("hardware", Shown.MART_HAS_ROWS)


@dataclass(frozen=True)
class SectionSpec:
    id: str
    title: str
    intro: str
    body: Callable[[MartReader, SectionOut], None]
    #: Checked in order before the body runs: the first missing or empty one makes the section "no data".
    marts: tuple[str, ...] = ()
    #: Appended to "marts.<name> is empty." when a needed mart has no rows.
    empty_hint: str = ""
    tables: tuple[TableSpec, ...] = ()
    plots: tuple[PlotSpec, ...] = ()
    group: Group = CORE
    #: Shown before the table of contents, as the page's first screen (the answers).
    lead: bool = False

    @property
    def csv_names(self) -> tuple[str, ...]:
        return tuple(t.csv_name for t in self.tables)

    def table_spec(self, name: str) -> TableSpec:
        return _named(self.tables, name, self.id)

    def plot_spec(self, name: str) -> PlotSpec:
        return _named(self.plots, name, self.id)


def _named(specs: Sequence[Any], name: str, section_id: str) -> Any:
    for spec in specs:
        if spec.name == name:
            return spec
    raise KeyError(f"section {section_id!r} declares no table or plot {name!r}")


class SectionOut:
    """What a section's body writes to: the section being built, through its spec."""

    def __init__(self, spec: SectionSpec, section: Section, period: ReportPeriod | None = None):
        self.spec = spec
        self.section = section
        #: The report's period: rows about a time outside it are left out of tables and figures.
        self.period = period

    def table(
        self,
        name: str,
        rows: list[dict[str, Any]],
        *,
        shown: bool | None = None,
        columns: Sequence[Column] | None = None,
        page_rows: list[dict[str, Any]] | None = None,
        **fields: Any,
    ) -> None:
        """Add the declared table ``name`` with ``rows``; ``fields`` fill its caption's and labels'
        placeholders. A table with a ``top`` shows ``page_rows`` (default: its first ``top`` rows)."""
        t = self.spec.table_spec(name)
        rows = clip_data(self.period, rows)
        if page_rows is not None:
            page_rows = clip_data(self.period, page_rows)
        elif t.top is not None and len(rows) > t.top:
            page_rows = rows[: t.top]
        self.section.tables.append(
            Table(
                t.name,
                t.caption.format(**fields) if fields else t.caption,
                [c.labelled(**fields) for c in (columns if columns is not None else t.columns)],
                rows,
                flag_key=t.flag_key,
                shown=t.shown if shown is None else shown,
                page_rows=page_rows,
                page_rows_text=t.top_text.format(top=t.top),
                every_row_text=t.every_row_text,
            )
        )

    def figure(self, name: str, *data: Any, **fields: Any) -> None:
        """Draw the declared figure ``name`` from ``data`` (the arguments of its plot function);
        ``fields`` fill its caption's placeholders."""
        p = self.spec.plot_spec(name)
        data = tuple(clip_data(self.period, d) for d in data)
        caption = p.caption.format(**fields) if fields else p.caption
        self.section.figures.append(FigureBlock(p.draw(*data), p.alt, caption, f"{p.data}.csv"))

    def fact(self, label: str, shown: str, link: str | None = None) -> None:
        """A line of facts; ``link``: the id of the section with its detail (dropped when that
        section is not in the report)."""
        self.section.facts.append(Fact(label, shown, link))

    def note(self, text: str) -> None:
        self.section.notes.append(text)

    def no_data(self, reason: str) -> None:
        self.section.no_data.append(reason)


def first_of_each(rows: Sequence[dict[str, Any]], key: str, top: int) -> list[dict[str, Any]]:
    """The first ``top`` rows of each value of ``key`` (rows ordered best first within it): a long
    table's page rows when it answers its question once per group (per job class)."""
    seen: dict[Any, int] = {}
    page = []
    for r in rows:
        seen[r[key]] = seen.get(r[key], 0) + 1
        if seen[r[key]] <= top:
            page.append(r)
    return page


def run_section(spec: SectionSpec, wh: MartReader, period: ReportPeriod | None = None) -> Section:
    """The section of ``spec``: "no data" with the reason when a mart it needs is missing, empty
    or unreadable; otherwise whatever its body found, tables in the order the spec declares them."""
    section = Section(spec.id, spec.title, spec.intro, lead=spec.lead)
    try:
        for mart in spec.marts:
            why = wh.mart_missing(mart, spec.empty_hint)
            if why:
                section.no_data.append(why)
                return section
        spec.body(wh, SectionOut(spec, section, period))
    except QUERY_ERRORS as exc:  # a mart of the wrong shape, a view over missing files, ...
        return Section(
            spec.id, spec.title, no_data=[f"The warehouse could not be read: {_first_line(exc)}"], lead=spec.lead
        )
    order = {t.name: i for i, t in enumerate(spec.tables)}
    section.tables.sort(key=lambda t: order[t.name])
    return section


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
