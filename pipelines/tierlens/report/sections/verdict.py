"""The answers that open the report, each linking to the section with its detail: the A/B trial's
verdict, each site change's effect, the configuration to buy, and how much of the data is behind
them. The weekly completeness lines follow, below the answers."""

from __future__ import annotations

from .. import bounds, fmt
from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, SectionOut, SectionSpec, TableSpec
from .common import PARTIAL_WEEK, PARTIAL_WEEK_NOTE, WEEK_DAYS, share_sql, weeks_in_period

#: The answer's label for completeness; the weekly table's caption repeats it.
COMPLETENESS_LABEL = "How much of the data is behind these figures"


def _completeness(r: dict) -> str:
    parts = [
        f"{fmt.pct(r['cpu_hours_tagged'])} of CPU hours tagged" if r["cpu_hours"] else "no jobs",
        f"{fmt.pct(r['bytes_joined'])} of bytes joined to jobs"
        if r["bytes_joined"] is not None
        else "no file accesses",
    ]
    if r["kernel_drops"]:
        parts.append(f"{fmt.integer(r['kernel_drops'])} datagrams dropped by the kernel")
    if r["rejected_records"]:
        parts.append(f"{fmt.integer(r['rejected_records'])} records rejected")
    text = ", ".join(parts)
    return text + " (provisional: jobs still running may add to it)" if r["provisional"] else text


def _completeness_sql(group: str) -> str:
    return f"""
        SELECT {group}
               {share_sql("cpu_hours_tagged")} AS cpu_hours_tagged,
               sum(denominator) FILTER (WHERE measure = 'cpu_hours_tagged') AS cpu_hours,
               {share_sql("bytes_joined")} AS bytes_joined,
               sum(numerator) FILTER (WHERE measure = 'kernel_drops') AS kernel_drops,
               sum(numerator) FILTER (WHERE measure = 'rejected_records') AS rejected_records,
               coalesce(bool_or(provisional), false) AS provisional
        FROM marts.data_completeness"""


def _ab(wh: MartReader, s: SectionOut) -> None:
    if wh.mart_missing("ab_uncertainty") is None:
        site = wh.rows("""
            SELECT efficiency_a, efficiency_b, efficiency_difference, efficiency_ci_low, efficiency_ci_high,
                   conclusion, warning
            FROM marts.ab_uncertainty
            WHERE subset = 'all' AND grouping = 'site' AND period_grain = 'all'
            ORDER BY period_start LIMIT 1
        """)
        if site:
            r = site[0]
            bounds.clip_interval(
                [r], "efficiency_ci_low", "efficiency_ci_high", bounds.EFFICIENCY_DIFFERENCE, "efficiency_difference"
            )
            text = (
                f"{r['conclusion']}: {fmt.points(r['efficiency_difference'])} efficiency "
                f"(95 %: {fmt.interval(r['efficiency_ci_low'], r['efficiency_ci_high'], 'points')}; "
                f"A {fmt.pct(r['efficiency_a'])}, B {fmt.pct(r['efficiency_b'])})"
            )
            if r["warning"]:
                text += f" ({r['warning']})"
            s.fact("A/B trial, arm B against arm A", text, "ab_uncertainty")
            return
    if wh.mart_missing("ab_comparison") is None:
        whole = wh.rows("""
            SELECT efficiency_a, efficiency_b FROM marts.ab_comparison
            WHERE period_grain = 'all' ORDER BY period_start LIMIT 1
        """)
        if whole and None not in (whole[0]["efficiency_a"], whole[0]["efficiency_b"]):
            a, b = whole[0]["efficiency_a"], whole[0]["efficiency_b"]
            s.fact(
                "A/B trial, arm B against arm A",
                f"{fmt.points(b - a)} efficiency (A {fmt.pct(a)}, B {fmt.pct(b)}); no interval yet "
                "(marts.ab_uncertainty has no whole-period row)",
                "ab",
            )


def _changes(wh: MartReader, s: SectionOut) -> None:
    if wh.mart_missing("change_effects") is not None:
        return
    rows = wh.rows("""
        SELECT description, changed_at, efficiency_scope_before, efficiency_scope_after,
               effect, effect_ci_low, effect_ci_high, conclusion
        FROM marts.change_effects WHERE row_kind = 'change' ORDER BY changed_at, change_id
    """)
    bounds.clip_interval(rows, "effect_ci_low", "effect_ci_high", bounds.EFFICIENCY_DIFFERENCE, "effect")
    for r in rows:
        s.fact(
            f"Site change of {fmt.text(r['changed_at'])[:10]}",
            f"{r['description']}: {r['conclusion']}, {fmt.points(r['effect'])} efficiency "
            f"(95 %: {fmt.interval(r['effect_ci_low'], r['effect_ci_high'], 'points')}; "
            f"{fmt.pct(r['efficiency_scope_before'])} before, {fmt.pct(r['efficiency_scope_after'])} after)",
            "changes",
        )


def _best_buy(wh: MartReader, s: SectionOut) -> None:
    if wh.mart_missing("hardware_options") is not None:
        return
    rows = wh.rows("""
        SELECT job_class, config_name, evidence, jobs_per_node, cache, currency, efficiency,
               price_per_core_hour * 1000 AS price, price_per_core_hour_low * 1000 AS price_low,
               price_per_core_hour_high * 1000 AS price_high
        FROM marts.hardware_options
        WHERE price_rank = (SELECT min(price_rank) FROM marts.hardware_options)
        ORDER BY job_class, config_name
    """)
    bounds.clip_interval(rows, "price_low", "price_high", bounds.PRICE, "price")
    for r in rows:
        currency = f" {r['currency']}" if r["currency"] else ""
        s.fact(
            "Best configuration to buy" + (f" ({r['job_class']} jobs)" if len(rows) > 1 else ""),
            f"{r['config_name']}, {fmt.number(r['jobs_per_node'])} jobs per node, cache {r['cache']}: "
            f"{fmt.money(r['price'])}{currency} per 1000 core-hours "
            # the interval in the price's unit, as an efficiency's interval ends in 'pt'
            f"(95 %: {fmt.interval(r['price_low'], r['price_high'], 'money')}{currency}), "
            f"efficiency {fmt.pct(r['efficiency'])} ({r['evidence']})",
            "hardware",
        )


def body(wh: MartReader, s: SectionOut) -> None:
    _ab(wh, s)
    _changes(wh, s)
    _best_buy(wh, s)
    if wh.mart_missing("data_completeness") is None:
        whole = wh.rows(_completeness_sql(""))[0]
        s.fact(COMPLETENESS_LABEL, _completeness(whole), "completeness")
        weeks = wh.rows(
            _completeness_sql("""cast(date_trunc('week', "day") AS date) AS week_start,""")
            + " GROUP BY ALL ORDER BY week_start"
        )
        for r in weeks:
            r["verdict"] = _completeness(r)
        s.table("verdict", weeks_in_period(weeks, "week_start", s.period))
        s.note(
            "Per ISO week (UTC): the share of CPU hours from jobs a plugin tagged with their storage and "
            "arm, and of the bytes read from XRootD servers that joined to a job (exactly or by inference). "
            "What is missing is missing from every figure. Source: marts.data_completeness (section Data "
            "completeness has the detail)."
        )
        if any(w["partial_week"] for w in weeks):
            s.note(PARTIAL_WEEK_NOTE)
    if not s.section.facts:
        s.no_data(
            "No answer yet: no A/B trial (marts.ab_uncertainty, marts.ab_comparison), no recorded change "
            "(marts.change_effects), no buying guide (marts.hardware_options) and no completeness figures "
            "(marts.data_completeness)."
        )


SPEC = SectionSpec(
    id="verdict",
    title="The answers",
    intro="What the data say, each with its 95 % interval and a link to the section behind it. "
    "Efficiency is Σcpu / Σ(wall × cores); a difference of two efficiencies is in percentage "
    "points (pt).",
    body=body,
    group=OPERATIONS,
    lead=True,
    tables=(
        TableSpec(
            "verdict",
            f"{COMPLETENESS_LABEL}, per week",
            (
                Column("week_start", "week starting"),
                *WEEK_DAYS,
                Column("cpu_hours_tagged", "CPU hours tagged", "pct"),
                Column("cpu_hours", "CPU hours", "hours"),
                Column("bytes_joined", "bytes joined", "pct"),
                Column("kernel_drops", "kernel drops", "int"),
                Column("rejected_records", "rejected", "int"),
                Column("provisional", "provisional"),
                Column("verdict", "in words"),
                PARTIAL_WEEK,
            ),
            flag_key="partial_week",
        ),
    ),
)
