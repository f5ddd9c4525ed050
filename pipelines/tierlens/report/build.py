"""Build the site report from the marts of a tierlens DuckDB warehouse.

One self-contained HTML page (inline CSS, figures embedded as base64 PNG, no external URL) and,
beside it, one CSV file per table shown and per figure's data, with the numbers at full precision.
Every section reads its own mart and says "no data" when the mart is missing, empty or unreadable,
so a warehouse that has only seen part of the pipeline still gets a report.

The sections are data: one spec per section in ``sections/``, listed in ``registry.py``; the
runner in ``spec.py`` applies each. Efficiency is always a ratio of sums, Σcpu / Σ(wall × cores)
(docs/architecture.md), computed from the sums the marts carry; the mean of per-job efficiencies is shown
beside it, weighted by jobs.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2

from . import registry
from .page import Fact, Section
from .period import ReportPeriod, period_connection
from .reader import MartReader
from .spec import ANALYSIS, CORE, SectionSpec, run_section

TEMPLATE_DIR = Path(__file__).with_name("templates")
TEMPLATE_NAME = "report.html.j2"
HTML_NAME = "report.html"

#: Ids of the sections every report has, in page order, and the CSV files they may write. The other
#: groups' (analysis, prediction, operations, hardware) come from ``registry.section_ids(group)`` and
#: ``registry.csv_names(group)``; when each group is shown is its ``Group.shown``.
SECTION_IDS = registry.section_ids(CORE)
CSV_NAMES = registry.csv_names(CORE)
#: The analytics sections, after SECTION_IDS when the warehouse has any of their marts.
ANALYSIS_SECTION_IDS = registry.section_ids(ANALYSIS)
ANALYSIS_CSV_NAMES = registry.csv_names(ANALYSIS)


@dataclass
class ReportResult:
    html_path: Path
    csv_paths: list[Path]
    #: Ids of the sections in the report, in order (see ``SECTION_IDS``).
    sections: list[str]
    #: Ids of the sections that said "no data" (their mart missing, empty or unreadable).
    no_data: list[str] = field(default_factory=list)
    #: The answers the page opens with (the lead sections' facts), for the demo to print the same
    #: figures, formatted once, in the terminal.
    answers: list[Fact] = field(default_factory=list)


def _atomic_write(path: Path, data: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _render(title: str, warehouse: Path, sections: list[Section], period: ReportPeriod | None) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from tierlens import __version__

    return env.get_template(TEMPLATE_NAME).render(
        title=title,
        period=period.text() if period else None,
        warehouse=str(warehouse),
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        sections=sections,
        # section numbers follow page order, the answers first
        number={s.id: i for i, s in enumerate(sections, 1)},
    )


def _drop_dead_links(sections: Sequence[Section]) -> None:
    """A fact links to its section only when that section is in this report."""
    ids = {s.id for s in sections}
    for section in sections:
        section.facts = [f if f.link is None or f.link in ids else replace(f, link=None) for f in section.facts]


def build_report(
    warehouse: Path,
    out_dir: Path,
    title: str = "tierlens site report",
    *,
    specs: Sequence[SectionSpec] = registry.REGISTRY,
) -> ReportResult:
    """Write ``out_dir/report.html`` and its CSV files from the marts of ``warehouse``.

    The warehouse is opened read-only. Raises ``FileNotFoundError`` when it does not exist; a
    missing, empty or unreadable mart only turns its section into "no data". ``specs``: the
    sections to consider, in page order (the registry's). A CSV file any of them may write that
    this run did not is removed from ``out_dir``, so no stale numbers stay behind.
    """
    warehouse = Path(warehouse).expanduser().resolve()
    out_dir = Path(out_dir)
    if not warehouse.is_file():
        raise FileNotFoundError(f"no warehouse at {warehouse} (run `tierlens demo` or load data first)")
    # the marts through views limited to one period, the days the measured jobs ended on
    con, period = period_connection(warehouse)
    with con:
        wh = MartReader(con)
        sections = [run_section(spec, wh, period) for spec in registry.shown_sections(wh, specs)]
    _drop_dead_links(sections)
    lead = {spec.id for spec in specs if spec.lead}

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_paths: list[Path] = []
    for section in sections:
        for table in section.tables:
            path = out_dir / table.csv_name
            _atomic_write(path, table.csv_text())
            csv_paths.append(path)
    written = {p.name for p in csv_paths}
    for name in registry.csv_names(registry=specs):
        if name not in written:
            (out_dir / name).unlink(missing_ok=True)

    html_path = out_dir / HTML_NAME
    _atomic_write(html_path, _render(title, warehouse, sections, period))
    return ReportResult(
        html_path=html_path,
        csv_paths=csv_paths,
        sections=[s.id for s in sections],
        no_data=[s.id for s in sections if not s.has_data],
        answers=[f for s in sections if s.id in lead for f in s.facts],
    )
