"""One figure, one value: the demo's headline figures as the terminal prints them, as the report
shows them and as the bundled SQL queries return them must agree at the precision each prints.

The three are read independently: the terminal's text (what `make demo` printed at 100 columns),
the report's HTML with its tags stripped, and `tierlens sql NAME --format json` in its own process.
A figure printed with one decimal agrees with the query's value when it is that value rounded, up
to half a unit of the query's own rounding (both round the same unrounded number).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

TIERLENS = Path(sys.executable).parent / "tierlens"
NUMBER = r"([+-]?\d[\d,]*\.?\d*)"


def _words(text: str) -> str:
    """Text with its line breaks and runs of spaces made single spaces (the terminal wraps)."""
    return re.sub(r"\s+", " ", text).strip()


def _report_text(home: Path) -> str:
    page = (home / "reports" / "report.html").read_text()
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return _words(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _sql(home: Path, name: str) -> list[dict]:
    r = subprocess.run(
        [str(TIERLENS), "sql", name, "-w", str(home / "warehouse.duckdb"), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def _answer(text: str, title: str) -> str:
    """The sentence after ``title`` in 'The answers', up to the next answer or section link."""
    start = text.index(title) + len(title)
    ends = [text.find(stop, start) for stop in ("section ", "Site change", "Best configuration", "How much")]
    return text[start : min(e for e in ends if e > 0)].strip(" :")


def _agrees(printed: str, value: float, scale: float = 100.0, query_step: float = 1e-3) -> bool:
    """``printed`` (one or more decimals) is ``value`` x ``scale`` rounded, allowing for the query's
    own rounding of ``value`` to ``query_step``."""
    p = float(printed.replace(",", ""))
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(p - value * scale) <= 0.5 * 10**-decimals + 0.5 * query_step * scale + 1e-9


@pytest.fixture(scope="module")
def figures(demo_run):
    home = demo_run.home
    return {
        "terminal": _words(demo_run.output),
        "report": _report_text(home),
        "ab": next(
            r
            for r in _sql(home, "ab_with_confidence")
            if r["grouping"] == "site" and r["period_grain"] == "all" and r["subset"] == "all"
        ),
        "ab_summary": next(r for r in _sql(home, "ab_summary") if r["period_grain"] == "all"),
        "change": _sql(home, "did_last_weeks_change_help"),
    }


def test_the_ab_answer_is_the_same_in_terminal_report_and_sql(figures):
    title = "A/B trial, arm B against arm A"
    terminal, report = _answer(figures["terminal"], title), _answer(figures["report"], title)
    assert terminal == report
    m = re.search(
        rf"{NUMBER} pt efficiency \(95 %: {NUMBER} to {NUMBER} pt; A {NUMBER} %, B {NUMBER} %\)",
        terminal,
    )
    assert m, terminal
    ab = figures["ab"]
    # the query gives the difference and its interval to 4 decimals, the arms' efficiencies to 3
    keys = (
        ("efficiency_b_minus_a", 1e-4),
        ("ci_low", 1e-4),
        ("ci_high", 1e-4),
        ("efficiency_a", 1e-3),
        ("efficiency_b", 1e-3),
    )
    for printed, (key, step) in zip(m.groups(), keys):
        assert _agrees(printed, ab[key], query_step=step), (printed, key, ab[key])
    assert ab["conclusion"] in terminal


def test_the_arms_efficiency_and_cpu_per_wall_agree_across_the_three(figures):
    s = figures["ab_summary"]
    for arm in ("a", "b"):
        label = arm.upper()
        # terminal: "A 78.08 0.8782 0.75" (arm, efficiency %, CPU/wall, SLAC seed's CPU/wall)
        m = re.search(rf"\b{label} {NUMBER} {NUMBER} {NUMBER}\b", figures["terminal"].split("A/B arms", 1)[1])
        assert m, figures["terminal"]
        assert _agrees(m.group(1), s[f"efficiency_{arm}"]), (m.group(1), s)
        assert _agrees(m.group(2), s[f"cpu_per_wall_{arm}"], scale=1.0), (m.group(2), s)
        # report, the SLAC-style whole-period table: "arm A jobs CPU-hours wall-hours CPU/wall core-hours efficiency %"
        r = re.search(
            rf"arm {label} {NUMBER} {NUMBER} {NUMBER} {NUMBER} {NUMBER} {NUMBER} %",
            figures["report"].split("SLAC-style")[1],
        )
        assert r, figures["report"][:2000]
        jobs, cpu_hours, wall_hours, cpu_per_wall, _, efficiency = r.groups()
        assert int(jobs.replace(",", "")) == s[f"jobs_{arm}"]
        assert _agrees(cpu_hours, s[f"cpu_hours_{arm}"], scale=1.0, query_step=0.1)
        assert _agrees(wall_hours, s[f"wall_hours_{arm}"], scale=1.0, query_step=0.1)
        assert _agrees(cpu_per_wall, s[f"cpu_per_wall_{arm}"], scale=1.0)
        assert _agrees(efficiency, s[f"efficiency_{arm}"])


def test_the_change_answer_is_the_same_in_terminal_report_and_sql(figures):
    (change,) = figures["change"]
    day = change["changed_at"][:10]
    title = f"Site change of {day}"
    terminal, report = _answer(figures["terminal"], title), _answer(figures["report"], title)
    assert _words(terminal) == _words(report)
    m = re.search(
        rf"{NUMBER} pt efficiency \(95 %: {NUMBER} to {NUMBER} pt; {NUMBER} % before, {NUMBER} % after\)", terminal
    )
    assert m, terminal
    for printed, key in zip(
        m.groups(), ("effect", "effect_ci_low", "effect_ci_high", "efficiency_before", "efficiency_after")
    ):
        assert _agrees(printed, change[key]), (printed, key, change[key])
    assert change["conclusion"] in terminal


def test_points_are_pt_everywhere_the_answers_print_a_difference(figures):
    for source in ("terminal", "report"):
        text = figures[source]
        answers = text[text.index("A/B trial") : text.index("How much of the data")]
        assert " points" not in answers and "pp" not in answers.split(), (source, answers)
        assert answers.count(" pt") >= 4, (source, answers)
