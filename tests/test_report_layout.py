"""The report as a site manager first sees it, at a laptop's 1,280 px in headless Chromium: the
answers come first, each linking to its section, and the key columns of the wide tables (a
change's effect, its interval and conclusion; the buying guide's price per 1000 core-hours and its
interval) lie within the window, not behind a horizontal scrollbar.

Chromium opens a copy of the page with a script that measures, after layout, each key cell's
right edge against the window's and its table's scroll box's, and writes what it found into the
DOM; ``--dump-dom`` hands the DOM back."""

from __future__ import annotations

import csv
import html as htmllib
import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from support.report_marts import AB_SITE, CHANGES, HARDWARE, add_answer_marts
from tierlens.report import build_report

WIDTH = 1280
CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
FLAGS = [
    "--headless",
    "--no-sandbox",  # root in CI
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    f"--window-size={WIDTH},900",
    "--virtual-time-budget=5000",
]

#: Per section: the header labels of its key columns; "+N" after a label takes the N columns after
#: it too (its 95 % interval).
KEY_COLUMNS = {
    "changes": ("effect (stratified)+2", "conclusion"),
    "hardware": ("whole node per 1000 core-h+2",),
}

MEASURE = """<script>window.addEventListener('load', () => {
  const keys = %(keys)s;
  const out = {width: window.innerWidth, page_width: document.documentElement.scrollWidth, cells: [],
               missing: [], order: [], links: []};
  for (const [sid, labels] of Object.entries(keys)) {
    const section = document.getElementById(sid);
    if (!section) { out.missing.push(sid); continue; }
    for (const spec of labels) {
      const [label, more] = spec.split('+');
      let found = false;
      for (const table of section.querySelectorAll('table')) {
        const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
        const at = heads.indexOf(label);
        if (at < 0) continue;
        found = true;
        const box = (table.closest('.tablewrap') || table.parentElement).getBoundingClientRect();
        for (const tr of table.querySelectorAll('tbody tr')) {
          if (tr.classList.contains('details')) continue;
          for (let i = at; i <= at + Number(more || 0); i++) {
            const r = tr.children[i].getBoundingClientRect();
            out.cells.push([sid, heads[i], tr.children[i].textContent.trim(), Math.round(r.left),
                            Math.round(r.right), Math.round(box.right)]);
          }
        }
        break;
      }
      if (!found) out.missing.push(sid + ': ' + label);
    }
  }
  const lead = document.querySelector('section');
  const nav = document.querySelector('nav');
  out.order = [lead && lead.id, lead && nav ? lead.getBoundingClientRect().top < nav.getBoundingClientRect().top : null];
  if (lead) out.links = [...lead.querySelectorAll('dl.facts dt a')].map(a => [a.getAttribute('href'),
    !!document.getElementById(a.getAttribute('href').slice(1)), a.textContent.trim()]);
  const pre = document.createElement('pre');
  pre.id = 'layout-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});</script>"""


def measure(page: Path, profile: Path) -> dict:
    """What Chromium laid out at WIDTH px: each key cell [section, column, text, left, right,
    right edge of its scroll box], the page's scroll width, the first section and its links."""
    probe = page.with_name("layout-probe.html")
    script = MEASURE % {"keys": json.dumps(KEY_COLUMNS)}
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    m = re.search(r'<pre id="layout-probe">([^<]*)</pre>', run.stdout)
    assert m, f"chromium rc={run.returncode}: {run.stderr[-2000:]}"
    return json.loads(htmllib.unescape(m.group(1)))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layout")
    warehouse = add_answer_marts(tmp / "w.duckdb")
    return build_report(warehouse, tmp / "out"), tmp


@pytest.fixture(scope="module")
def laid_out(report):
    if CHROMIUM is None:
        pytest.skip("no chromium (Debian package `chromium`, listed in deploy/ci/system-packages.txt)")
    result, tmp = report
    got = measure(result.html_path, tmp / "chromium-profile")
    assert got["width"] == WIDTH
    return got


@pytest.mark.timeout(120)
def test_key_columns_lie_within_1280_px(laid_out):
    assert not laid_out["missing"], laid_out["missing"]
    cells = laid_out["cells"]
    assert {(c[0], c[1]) for c in cells} >= {("changes", "conclusion"), ("hardware", "95 % high")}
    # every key cell of every row within the window and within its table's visible box
    hidden = [c for c in cells if c[4] > min(WIDTH, c[5]) + 0.5]
    assert not hidden, "key cells past the right edge at 1280 px (section, column, text, left, right, box):\n" + (
        "\n".join(map(str, hidden))
    )
    assert laid_out["page_width"] <= WIDTH


@pytest.mark.timeout(120)
def test_the_answers_open_the_page_and_link_to_their_sections(report, laid_out):
    result, _ = report
    assert result.sections[0] == "verdict"
    # the first section drawn, above the table of contents
    assert laid_out["order"] == ["verdict", True]
    targets = [href for href, _, _ in laid_out["links"]]
    assert targets == ["#ab_uncertainty", "#changes", "#changes", "#hardware", "#completeness"], laid_out["links"]
    assert all(exists for _, exists, _ in laid_out["links"]), laid_out["links"]


def test_answers_say_the_figures_in_points_with_their_intervals(report):
    result, _ = report
    page = result.html_path.read_text(encoding="utf-8")
    lead = htmllib.unescape(page[page.index('<section id="verdict"') : page.index("<nav>")])
    a, b, diff, lo, hi = AB_SITE
    assert f"B higher: {diff * 100:+.1f} pt efficiency (95 %: {lo * 100:+.1f} to {hi * 100:+.1f} pt" in lead
    for _, _, description, effect, elo, ehi, conclusion, _ in CHANGES:
        assert (
            f"{description}: {conclusion}, {effect * 100:+.1f} pt efficiency "
            f"(95 %: {elo * 100:+.1f} to {ehi * 100:+.1f} pt"
        ) in lead
    # the first-ranked option, with its price per 1000 core-hours and interval
    assert "Enterprise NVMe (Samsung PM9A3 3.84 TB), 32 jobs per node, cache none: 12.10 GBP per 1000" in lead
    assert "(95 %: 11.80 to 12.40 GBP)" in lead
    assert "of CPU hours tagged" in lead
    # the changes table shows the effect in points
    changes = page[page.index('<section id="changes"') :]
    assert "+3.4 pt" in changes and "3.4 %" not in changes


def test_intervals_stay_within_what_the_quantity_allows(report):
    result, tmp = report
    with (tmp / "out" / "hardware_options.csv").open(newline="") as fh:
        rows = {r["config_name"]: r for r in csv.DictReader(fh)}
    ssd = rows["Consumer SSD (Crucial MX500 2 TB)"]
    assert float(ssd["efficiency_high"]) == 1.0  # the model's band reaches 102.7 %
    assert float(ssd["efficiency_low"]) == pytest.approx(0.943)
    page = result.html_path.read_text(encoding="utf-8")
    assert "102.7 %" not in page
    # the mart itself is left as it is
    with duckdb.connect(str(tmp / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT max(efficiency_high) FROM marts.hardware_options").fetchone()[0] > 1.0


def _table_after(page: str, caption: str) -> tuple[list[str], list[list[str]]]:
    """The header labels and the main rows' cell texts of the table under ``caption``."""
    table = page[page.index(caption) :]
    table = table[: table.index("</table>")]
    heads = [htmllib.unescape(h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, flags=re.S)]
    rows = re.findall(r'<tr(?![^>]*class="details)[^>]*>(.*?)</tr>', table.split("<tbody>", 1)[1], flags=re.S)
    return heads, [
        [htmllib.unescape(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)] for r in rows
    ]


def test_a_price_and_its_interval_carry_the_same_currency(report):
    """The buying guide's price per 1000 core-hours and the two bounds of its 95 % interval are in
    one unit, written the same way: the row's currency after each figure, as every price of the
    report has it."""
    result, tmp = report
    page = result.html_path.read_text(encoding="utf-8")
    heads, rows = _table_after(page, "Candidate configurations, cheapest delivered core-hour first")
    at = heads.index("whole node per 1000 core-h")
    assert heads[at + 1 : at + 3] == ["95 % low", "95 % high"], heads
    with (tmp / "out" / "hardware_options.csv").open(newline="") as fh:
        options = list(csv.DictReader(fh))
    assert len(rows) == len(options) == len(HARDWARE)
    for cells, option in zip(rows, options):
        shown = cells[at : at + 3]
        for key, cell in zip(("", "_low", "_high"), shown):
            value = float(option[f"price_per_1000_core_hours{key}"])
            assert cell == f"{value:,.2f} {option['currency']}", (cells, option)


def test_a_cut_efficiency_interval_is_said_to_be_cut(report):
    result, _ = report
    page = htmllib.unescape(result.html_path.read_text(encoding="utf-8"))
    section = page[page.index('<section id="hardware"') :]
    section = section[: section.index("</section>")]
    # independently: the fixture's options whose band passes 0 or 100 %
    cut = sum(1 for h in HARDWARE if h[5] < 0 or h[6] > 1)
    assert cut == 1
    assert "1 row's interval was cut where the quantity ends (an efficiency lies between 0 and 100 %)" in section
    # no price interval was cut (every low bound is above 0): no note about prices
    assert "a price is never below 0" not in section
