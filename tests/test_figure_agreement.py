"""One figure, one value: the demo's headline figures as the terminal prints them, as the report
shows them and as the bundled SQL queries return them must agree at the precision each prints.

The three are read independently: the terminal's text (what `make demo` printed at 100 columns),
the report's HTML with its tags stripped, and `tierlens sql NAME --format json` in its own process.
A figure printed with one decimal agrees with the query's value when it is that value rounded, up
to half a unit of the query's own rounding (both round the same unrounded number).
"""

from __future__ import annotations

import csv
import datetime
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


def _sql(home: Path, name: str, *params: str) -> list[dict]:
    """``tierlens sql NAME --format json`` in its own process, with ``--param`` for each of ``params``."""
    r = subprocess.run(
        [str(TIERLENS), "sql", name, "-w", str(home / "warehouse.duckdb"), "--format", "json"]
        + [a for p in params for a in ("--param", p)],
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


# ---- the period, the best buy, the structural error, completeness ---------------------------------
def _warehouse(home: Path, sql: str) -> list[tuple]:
    """Rows read straight from the demo's warehouse: the independent side of a comparison."""
    import duckdb

    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_period_reads_first_day_to_last_day_included_in_terminal_report_and_sql(demo_run, figures):
    # independently: the first and last UTC day on which a job of either arm ended
    ((first, last),) = _warehouse(
        demo_run.home, "SELECT min(day), max(day) FROM marts.job_efficiency WHERE ab_arm IN ('A', 'B')"
    )
    days = f"{first.isoformat()} to {last.isoformat()}"
    whole = figures["ab_summary"]
    # the SQL names the last day, not the exclusive end the mart keeps for arithmetic
    assert (whole["period_start"], whole["period_last_day"]) == (first.isoformat(), last.isoformat()), whole
    assert "period_end" not in whole, whole
    rows = _sql(demo_run.home, "ab_summary")
    for week in (r for r in rows if r["period_grain"] == "week"):
        start, end = (datetime.date.fromisoformat(week[k]) for k in ("period_start", "period_last_day"))
        assert (end - start).days == 6 and start.weekday() == 0, week
    # the terminal's A/B table and the report's whole-period table and header say the same days
    assert f"A/B arms, {days} (" in figures["terminal"], figures["terminal"][:3000]
    slac = figures["report"].split("SLAC-style", 1)[1]
    assert f"{days} arm A " in slac[:800], slac[:800]
    assert f"Period: {days} (" in figures["report"], figures["report"][:1000]
    weekly = figures["report"].split("Per week", 1)[1][:300]
    assert "last day" in weekly and "week end" not in weekly, weekly
    # the uncertainty CSVs beside the report: the same first and last day, not the mart's exclusive end
    for name in ("ab_uncertainty_overall", "ab_uncertainty_high_hit"):
        path = demo_run.home / "reports" / f"{name}.csv"
        if name == "ab_uncertainty_high_hit" and not path.exists():
            continue  # no hour reached the high hit ratio: no such table
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert rows and "period_end" not in rows[0], (name, list(rows[0]))
        if name == "ab_uncertainty_overall":
            site = next(r for r in rows if r["grouping"] == "site")
            assert (site["period_start"], site["period_last_day"]) == (first.isoformat(), last.isoformat()), site
        for r in rows:  # a group's period lies within the trial's days
            assert first <= datetime.date.fromisoformat(r["period_start"]), r
            assert (
                datetime.date.fromisoformat(r["period_start"])
                <= datetime.date.fromisoformat(r["period_last_day"])
                <= last
            ), r


def _best_buy_row(home: Path) -> dict:
    """The cheapest delivered core-hour of the newest buying guide, from the table the efficiency
    run wrote (main.sim_hardware_options), not the mart the answer reads."""
    cols = ["config_name", "jobs_per_node", "cache", "currency", "efficiency", "price", "low", "high", "evidence"]
    (row,) = _warehouse(
        home,
        "SELECT config_name, jobs_per_node, cache, currency, efficiency, 1000 * price_per_core_hour, "
        "1000 * price_per_core_hour_low, 1000 * price_per_core_hour_high, evidence FROM main.sim_hardware_options "
        "WHERE run_id = (SELECT run_id FROM main.sim_efficiency_runs ORDER BY created_at DESC LIMIT 1) "
        "ORDER BY price_per_core_hour, price_per_gb LIMIT 1",
    )
    return dict(zip(cols, row))


def test_the_best_buy_is_the_same_in_terminal_report_and_sql(demo_run, figures):
    best = _best_buy_row(demo_run.home)
    title = "Best configuration to buy"
    terminal, report = _answer(figures["terminal"], title), _answer(figures["report"], title)
    assert terminal == report
    m = re.fullmatch(
        rf"(.+), {NUMBER} jobs per node, cache (\S+): {NUMBER} (\w+) per 1000 core-hours "
        rf"\(95 %: {NUMBER} to {NUMBER} \5\), efficiency {NUMBER} % \((\w+)\)",
        terminal,
    )
    assert m, terminal
    name, per_node, cache, price, currency, low, high, efficiency, evidence = m.groups()
    assert (name, float(per_node), cache, currency, evidence) == (
        best["config_name"],
        best["jobs_per_node"],
        best["cache"],
        best["currency"],
        best["evidence"],
    )
    for printed, key in ((price, "price"), (low, "low"), (high, "high")):
        assert _agrees(printed, best[key], scale=1.0, query_step=0.0), (printed, key, best)
    assert _agrees(efficiency, best["efficiency"], query_step=0.0), (efficiency, best)
    # the SQL's cheapest option (every option: target 0), at its own rounding
    (first, *_) = _sql(demo_run.home, "cheapest_configuration_for_efficiency", "target=0")
    assert (first["config_name"], first["jobs_per_node"], first["cache"]) == (name, float(per_node), cache)
    for printed, key in (
        (price, "price_per_core_hour"),
        (low, "price_per_core_hour_low"),
        (high, "price_per_core_hour_high"),
    ):
        assert _agrees(printed, first[key], scale=1000.0, query_step=1e-6), (printed, key, first)
    assert _agrees(efficiency, first["efficiency"]), (efficiency, first)
    # the demo's buying guide table: its first row is that option, price and efficiency as the answer
    guide = figures["terminal"].split("Hardware you could buy", 1)[1]
    row = re.search(
        rf"{re.escape(name)} {re.escape(cache)} {per_node} {re.escape(price)} \({re.escape(low)}-{re.escape(high)}\) "
        rf"{re.escape(efficiency)} \({NUMBER}-{NUMBER}\) {evidence}",
        guide,
    )
    assert row and guide.index(row.group(0)) < guide.index(" row(s)"), guide[:1500]


def test_efficiency_intervals_never_pass_100_percent_nor_prices_0(demo_run, figures):
    guide = figures["terminal"].split("Hardware you could buy", 1)[1].split(" row(s)", 1)[0]
    intervals = re.findall(rf"{NUMBER} \({NUMBER}-{NUMBER}\) {NUMBER} \({NUMBER}-{NUMBER}\)", guide)
    assert intervals, guide
    for price, p_low, p_high, eff, e_low, e_high in intervals:
        assert 0 <= float(p_low) <= float(price) <= float(p_high), (price, p_low, p_high)
        assert 0 <= float(e_low) <= float(eff) <= float(e_high) <= 100, (eff, e_low, e_high)
    # the raw predictions do reach past 100 % or below 0 somewhere, or the check above proves little
    ((above, below),) = _warehouse(
        demo_run.home, "SELECT max(efficiency_high), min(efficiency_low) FROM main.sim_hardware_options"
    )
    assert above > 1 or below < 0, (above, below)
    # target 0 lists every option of the newest guide (as the terminal's note says), a low end
    # below 0 cut to 0 rather than the option left out
    ((options,),) = _warehouse(
        demo_run.home,
        "SELECT count(*) FROM main.sim_hardware_options "
        "WHERE run_id = (SELECT run_id FROM main.sim_efficiency_runs ORDER BY created_at DESC LIMIT 1)",
    )
    listed = _sql(demo_run.home, "cheapest_configuration_for_efficiency", "target=0")
    assert len(listed) == options, (len(listed), options)
    for r in listed:
        assert 0 <= r["efficiency_low"] <= r["efficiency"] <= 1, r


def test_the_structural_error_is_one_value_under_one_name(demo_run, figures):
    from tierlens.simulator.seeds import published_loo_rms

    # independently: this site's error for probe-derived predictions is the RMS of the newest run's
    # leave-one-type-out errors; the published figures' is the device layer's on Glasgow's table
    ((site,),) = _warehouse(
        demo_run.home,
        "SELECT sqrt(avg(error * error)) FROM main.sim_efficiency_type_loo WHERE evidence = 'probe' "
        "AND run_id = (SELECT run_id FROM main.sim_efficiency_runs ORDER BY created_at DESC LIMIT 1)",
    )
    published = published_loo_rms()
    # named in a site manager's words: this site's own jobs, or the published figures
    carried, source = (site, "this site") if site >= published else (published, "the published figures")
    # terminal: "probe 17.1 pt from the published figures (this site, types left out, 2.0 pt; published figures 17.1 pt)"
    m = re.search(
        rf"probe {NUMBER} pt from ([a-z ]+?) \(this site, types left out, {NUMBER} pt; published figures {NUMBER} pt\)",
        figures["terminal"],
    )
    assert m, figures["terminal"]
    t_carried, t_source, t_site, t_published = m.groups()
    assert t_source == source
    # report, "The structural error derived predictions carry": job class, predicted from, this
    # site (types left out), published figures (Glasgow), carried, from
    r = re.search(rf"analysis probe {NUMBER} pt {NUMBER} pt {NUMBER} pt ([a-z ]+?) CSV", figures["report"])
    assert r, figures["report"]
    r_site, r_published, r_carried, r_source = r.groups()
    assert r_source == source
    assert (t_site, t_published, t_carried) == (r_site, r_published, r_carried)
    for printed, value in ((t_site, site), (t_published, published), (t_carried, carried)):
        assert _agrees(printed, value, query_step=0.0), (printed, value)
    # SQL: the same three beside every probe-derived option
    probed = [
        r for r in _sql(demo_run.home, "cheapest_configuration_for_efficiency", "target=0") if r["evidence"] == "probe"
    ]
    assert probed
    for row in probed:
        for printed, key in (
            (t_site, "structural_error_this_site"),
            (t_published, "structural_error_published"),
            (t_carried, "structural_error"),
        ):
            assert _agrees(printed, row[key]), (printed, key, row)
    # points everywhere: no "points" left beside a structural error in the terminal
    assert not re.search(r"structural error[^.]*\bpoints\b", figures["terminal"]), figures["terminal"]
    # where a site manager reads the source, it is not named after the code's generator
    report = figures["report"].split("The structural error derived predictions carry", 1)[1][:600]
    terminal = figures["terminal"].split("structural error of derived predictions", 1)[1][:600]
    assert "generator" not in report and "generator" not in terminal, (report, terminal)


def test_completeness_is_the_same_in_terminal_report_and_sql(demo_run, figures):
    title = "How much of the data is behind these figures"
    sentence = re.compile(
        rf"{NUMBER} % of CPU hours tagged, {NUMBER} % of bytes joined to jobs"
        r"(, [\d,]+ datagrams dropped by the kernel)?(, [\d,]+ records rejected)?"
        r"( \(provisional: jobs still running may add to it\))?"
    )
    said = {}
    for source in ("terminal", "report"):
        text = figures[source]
        said[source] = sentence.match(text[text.index(title) + len(title) :].lstrip(" :"))
        assert said[source], (source, text[text.index(title) :][:300])
    m = said["terminal"]
    terminal = m.group(0)
    assert terminal == said["report"].group(0)
    (row,) = _sql(demo_run.home, "how_complete_is_the_data")
    ((first, last),) = _warehouse(demo_run.home, "SELECT min(day), max(day) FROM marts.job_efficiency")
    assert (row["first_day"], row["last_day"]) == (first.isoformat(), last.isoformat())
    assert _agrees(m.group(1), row["cpu_hours_tagged"], query_step=1e-4), (m.group(1), row)
    assert _agrees(m.group(2), row["bytes_joined"], query_step=1e-4), (m.group(2), row)
    assert ("provisional" in terminal) == row["provisional"], (terminal, row)
    assert ("records rejected" in terminal) == bool(row["rejected_records"]), (terminal, row)
    # independently: the tagged share of CPU hours over the report's days, from the jobs themselves
    ((tagged,),) = _warehouse(
        demo_run.home,
        "SELECT sum(cpu_seconds) FILTER (WHERE storage_type IS NOT NULL) / sum(cpu_seconds) FROM marts.job_efficiency",
    )
    assert _agrees(m.group(1), tagged, query_step=0.0), (m.group(1), tagged)


def test_the_demos_own_tables_keep_the_columns_that_fit_and_name_the_rest(demo_run):
    """At 100 columns (no terminal) no name or value of the demo's tables is cut: each keeps the
    columns that fit, a row a line, and a note names the others with where to see them."""
    out = demo_run.output
    assert "…" not in out, [ln for ln in out.splitlines() if "…" in ln]
    from tierlens.simulator.tables import HARDWARE_GUIDE_COLUMNS

    lines = out.splitlines()
    # the names as the terminal's table has them; which of them fit is what is checked
    columns = list(HARDWARE_GUIDE_COLUMNS)
    header = next(ln for ln in lines if ln.split()[:1] == ["configuration"])
    shown = [c for c in columns if re.search(rf"(^|\s){re.escape(c)}(\s|$)", header)]
    # the key columns first, each whole; the others named under the table
    assert shown[:4] == ["configuration", "cache", "jobs/node", "per 1000 core-hours"], header
    note = _words(out).split("Hardware you could buy", 1)[1]
    m = re.search(r"(\d+) of (\d+) columns fit 100 characters; not shown: (.+?)\. A wider terminal", note)
    assert m, note[:3000]
    hidden = m.group(3).split(", ")
    assert int(m.group(1)) == len(shown) and int(m.group(2)) == len(columns), (m.groups(), shown)
    assert shown + hidden == columns, (shown, hidden)
    # a column is left out only when it would not fit beside the ones shown (the widest value or name)
    rows = lines[lines.index(header) + 2 : next(i for i, ln in enumerate(lines) if re.match(r"\d+ row\(s\)", ln))]
    assert all(len(ln) <= 100 for ln in rows) and len(header.rstrip()) + 3 + len(hidden[0]) > 100 - 3, header


def test_the_docs_give_this_sites_structural_error_one_value_under_the_terminals_name(figures):
    """README.md and docs/site-manager.md quote the demo month's structural errors (seed 42, not
    this fixture's run): this site's own for probe-derived predictions is one value in both, under
    the name the terminal and the report print, and the error of measured configurations is named
    apart, as the demo prints it."""
    repo = Path(__file__).resolve().parents[1]
    readme = _words((repo / "README.md").read_text())
    manager = _words((repo / "docs" / "site-manager.md").read_text())
    # the names the terminal and the report give the two errors
    assert "this site, types left out," in figures["terminal"]
    assert "this site (types left out)" in figures["report"]
    assert "each measured configuration left out of the fit in turn: RMS error" in figures["terminal"]
    own = re.findall(r"this site's own, types left out, ([\d.]+) pt", readme)
    assert own, "README.md: no 'this site's own, types left out, N pt'"
    probe = re.findall(r"this site's own, types left out, ([\d.]+) pt for probe-derived", manager)
    assert probe, "docs/site-manager.md: no 'this site's own, types left out, N pt for probe-derived'"
    assert set(own) == set(probe) and len(set(own)) == 1, (own, probe)
    # the error of measured configurations, named as the demo prints it, and its RMS one value
    printed = re.findall(r"each measured configuration left out of the fit in turn: RMS error ([\d.]+) pt", manager)
    stated = re.findall(r"left-out errors are [\d.]+–[\d.]+ pt, RMS ([\d.]+) pt", manager)
    assert printed and printed == stated, (printed, stated)
    for text in (readme, manager):
        assert "site's own 1." not in text and "points RMS on the demo site" not in text


def test_a_week_cut_by_the_period_shows_the_periods_days_and_says_partial(demo_run, figures):
    """The demo's 3 days lie in one ISO week: the per-week rows (the A/B table's, the answers'
    completeness) end on the period's last day, not on the Sunday after it, start on its first,
    and are flagged partial."""
    # independently: the report's period is the first and last UTC day a measured job ended
    ((first, last),) = _warehouse(demo_run.home, "SELECT min(day), max(day) FROM marts.job_efficiency")
    for name, key in (("verdict", "week_start"), ("ab_weekly", "period_start")):
        with (demo_run.home / "reports" / f"{name}.csv").open(newline="") as f:
            weeks = list(csv.DictReader(f))
        assert weeks, name
        for week in weeks:
            start = datetime.date.fromisoformat(week[key])
            assert start.weekday() == 0, week
            want_first, want_last = max(start, first), min(start + datetime.timedelta(days=6), last)
            days = (want_last - want_first).days + 1
            assert (week["first_day"], week["last_day"], int(week["days_in_period"]), week["partial_week"]) == (
                want_first.isoformat(),
                want_last.isoformat(),
                days,
                "true" if days < 7 else "false",
            ), (name, week)
    # the period's end cuts the last week (three days of the demo cannot fill one)
    cut = weeks[-1]
    assert cut["last_day"] == last.isoformat() and cut["partial_week"] == "true", cut
    # the page: the week's row reads its start, its first and last day in the period, its days, the flag
    weekly = figures["report"].split("Per week", 1)[1]
    row = f"{cut['period_start']} {cut['first_day']} {last.isoformat()} {cut['days_in_period']} "
    assert row in weekly[:800], weekly[:800]
    after = weekly[weekly.index(row) :]
    assert "⚑ yes" in after[:300] and "A flagged week is partial" in weekly, weekly[:1500]
    assert (last + datetime.timedelta(days=1)).isoformat() not in weekly[: weekly.index("CSV:")]


#: A zero with a sign in front ("-0.0 pt", "+0.0 %", "-0.00"): what a bound that rounds to zero
#: must never print as.
SIGNED_ZERO = re.compile(r"(?<![\w.])[+\-−]0(?:\.0+)?(?![\d.])")


def test_no_figure_of_the_report_prints_a_signed_zero(demo_run, figures):
    assert not SIGNED_ZERO.findall(figures["report"]), [
        figures["report"][max(0, m.start() - 80) : m.end() + 10] for m in SIGNED_ZERO.finditer(figures["report"])
    ]
    # the demo has such a bound (an account's interval that starts a hair below zero), or the
    # check above proves nothing: it is printed as a plain zero in its row
    with (demo_run.home / "reports" / "ab_uncertainty_overall.csv").open(newline="") as f:
        near = [
            r
            for r in csv.DictReader(f)
            if r["subset"] == "all" and r["efficiency_ci_low"] and -0.0005 < float(r["efficiency_ci_low"]) < 0
        ]
    assert near, "no interval of the demo starts within 0.05 pt below zero: take another near-zero value"
    for r in near:
        shown = re.search(
            rf"{re.escape(r['group_value'])} {re.escape(r['grouping'])} [\d,]+ [\d,]+ \S+ % \S+ % (\S+ pt) (\S+ pt) (\S+ pt)",
            figures["report"],
        )
        assert shown and shown.group(2) == "0.0 pt", (r, shown and shown.group(0))
    # and the section says how many such zeros hide a sign that may decide a conclusion, counted
    # here from the CSVs of the section's tables
    hidden = 0
    for name in ("ab_uncertainty_daily", "ab_uncertainty_overall", "ab_uncertainty_high_hit"):
        path = demo_run.home / "reports" / f"{name}.csv"
        if path.exists():
            with path.open(newline="") as f:
                hidden += sum(
                    1
                    for r in csv.DictReader(f)
                    for k in ("efficiency_ci_low", "efficiency_ci_high")
                    if r[k] and 0 < abs(float(r[k])) < 0.0005
                )
    assert hidden >= len(near)
    assert f"{hidden} interval bound{'s' if hidden != 1 else ''} shown as 0.0 pt" in figures["report"]


def test_the_input_size_table_reads_whole_period_then_before_then_after(demo_run):
    with (demo_run.home / "reports" / "efficiency_by_input_size.csv").open(newline="") as f:
        periods = [r["period"] for r in csv.DictReader(f)]
    # the order a reader compares them in, not the alphabet's ('after …' first)
    blocks = list(dict.fromkeys(p.split(" ", 1)[0] for p in periods))
    assert blocks == ["all", "before", "after"], blocks
    assert periods == sorted(periods, key=lambda p: ["all", "before", "after"].index(p.split(" ", 1)[0]))
