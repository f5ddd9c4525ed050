"""An efficiency run (simulator.whatif) as tables on a console: the command line and the demo print these."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..console import print_rows
from ..units import unsigned_zero
from .hardware import type_errors

#: Where a table too wide for the terminal has the columns it leaves out.
WIDER = "A wider terminal (COLUMNS=160) shows them"

#: The buying guide's columns on a terminal: what a purchaser compares first (the configuration,
#: its cache and jobs per node, the price, the efficiency, what it rests on), then the rest; a
#: narrow terminal keeps the first columns that fit (all six at 100 characters) and names the others.
HARDWARE_GUIDE_COLUMNS = (
    "configuration",
    "cache",
    "jobs/node",
    "per 1000 core-hours",
    "efficiency (%)",
    "evidence",
    "node",
    "node + storage",
    "SSD life (y)",
    "rank",
)


def cheapest_with_unmeasured(rows: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """The first ``top`` of ``rows`` (buying-guide rows, cheapest first), then the cheapest row of
    each configuration not measured here that fell below them: a derived option is the one a
    newcomer looks for, even when it does not pay. The demo's terminal and the report show these."""
    shown = rows[:top]
    names = {r["config_name"] for r in shown}
    for r in rows[top:]:
        if r["evidence"] != "measured" and r["config_name"] not in names:
            shown.append(r)
            names.add(r["config_name"])
    return shown


def print_efficiency(run, run_id: str | None, console: Console) -> None:
    """Measured against predicted efficiency per configuration, then the what-if grid."""
    cal = run.calibration
    pred = run.predictions.to_pylist()
    print_rows(
        f"{cal.job_class} jobs: measured vs predicted CPU efficiency "
        f"({len(run.profiles):,} jobs, model fitted on {cal.jobs:,})",
        ["storage type", "arm", "measured (%)", "predicted (%)", "left out (%)", "jobs", "jobs/node"],
        [
            [
                r["storage_type"],
                r["ab_arm"] or "",
                _pct(r["measured_efficiency"]),
                _pct(r["predicted_efficiency"]),
                _pct(r["loo_predicted_efficiency"]),
                r["jobs"],
                f"{r['mean_concurrent_jobs']:.1f}",
            ]
            for r in pred
            if r["scenario"] == "measured"
        ],
        more=f"{WIDER}; marts.efficiency_measured_vs_predicted has every column.",
        on=console,
    )
    if cal.structural_error is not None:
        console.print(
            f"each measured configuration left out of the fit in turn: RMS error {cal.structural_error * 100:.1f} pt",
            highlight=False,
        )
    what_if = [r for r in pred if r["scenario"] == "what-if"]
    per_node = sorted({r["jobs_per_node"] for r in what_if})
    cell = {(r["cache"], r["storage_type"], r["jobs_per_node"]): r for r in what_if}
    print_rows(
        "what if: predicted efficiency in % by jobs per node (in brackets: jobs per node-hour)",
        ["cache", "storage type", *(f"{n:g} / node" for n in per_node)],
        [
            [cache, st, *(_what_if_cell(cell.get((cache, st, n))) for n in per_node)]
            for cache, st in dict.fromkeys((r["cache"], r["storage_type"]) for r in what_if)
        ],
        more=f"{WIDER}; marts.efficiency_what_if has every cell.",
        on=console,
    )
    sd = [r["efficiency_sd"] for r in what_if]
    if sd:
        console.print(
            f"the grid's predictions have 95 % intervals of ± {196 * min(sd):.1f} to ± {196 * max(sd):.1f} pt "
            "(sim_efficiency_predictions, marts.efficiency_what_if)",
            highlight=False,
        )
    if any(r["extrapolated"] for r in pred):
        console.print("* uses a service time the measured jobs did not determine (extrapolated)")
    if run_id:
        console.print(f"written: sim_efficiency_runs / _parameters / _predictions, run_id {run_id}")


def print_hardware(run, console: Console, limit: int = 30) -> None:
    """The device layer's validation and the buying guide, when the run has them."""
    if run.type_held_out:
        print_rows(
            "storage types left out entirely, predicted from their probe or datasheet",
            ["storage type", "from", "measured (%)", "predicted (%)", "error (pt)", "jobs"],
            [
                [
                    h.storage_type,
                    h.evidence,
                    _pct(h.measured),
                    _pct(h.predicted),
                    _signed_points(h.error),
                    h.jobs,
                ]
                for h in run.type_held_out
            ],
            more=f"{WIDER}; staging.stg_sim_efficiency_type_loo has every column.",
            on=console,
        )
        from .seeds import source_in_words, structural_error_rows

        carried = structural_error_rows(type_errors(run.type_held_out))
        # the same names and unit as the report's structural-error table: this site's error (its
        # measured types left out), the published figures' and the larger, carried
        console.print(
            "structural error of derived predictions (RMS leave-one-out), the larger carried: "
            + "; ".join(
                f"{r['evidence']} {_points(r['structural_error'])} from {source_in_words(r['source'])} "
                f"(this site, types left out, {_points(r['generator_rms'])}; published figures "
                f"{_points(r['published_rms'])})"
                for r in carried
            ),
            highlight=False,
        )
    guide = run.hardware_options
    if guide is None or guide.num_rows == 0:
        return
    rows = guide.to_pylist()
    shown = cheapest_with_unmeasured(rows, limit)
    currency = next((r["currency"] for r in rows if r["currency"]), "")
    print_rows(
        f"Hardware you could buy: whole-node price per 1000 delivered CPU core-hours ({currency or 'price'}, "
        "95 % interval), cheapest first",
        HARDWARE_GUIDE_COLUMNS,
        [
            [
                r["config_name"],
                r["cache"],
                r["jobs_per_node"],
                _interval(
                    1000 * r["price_per_core_hour"],
                    1000 * r["price_per_core_hour_low"],
                    1000 * r["price_per_core_hour_high"],
                    (0.0, None),
                    "{:.2f}",
                ),
                _interval(
                    100 * r["efficiency"], 100 * r["efficiency_low"], 100 * r["efficiency_high"], (0.0, 100.0), "{:.1f}"
                ),
                r["evidence"],
                r["node_config"] or "",
                f"{r['whole_node_price']:,.0f}",
                f"{r['ssd_lifetime_years']:.1f}" if r["ssd_lifetime_years"] else "",
                r["rank"],
            ]
            for r in shown
        ],
        more=f"{WIDER}; `tierlens sql cheapest_configuration_for_efficiency --param target=0` lists every "
        "option with every column.",
        on=console,
    )
    below = shown[limit:]
    if below:
        console.print(
            f"the first {limit} of {len(rows)} options, then the cheapest of each kind not measured here: "
            + ", ".join(f"{r['config_name']} (rank {r['rank']})" for r in below),
            highlight=False,
        )
    first_cache = rows[0]["cache"]
    for r in sorted(
        (r for r in rows if r["write_warning"] and r["cache"] == first_cache),
        key=lambda r: (r["config_name"], r["jobs_per_node"]),
    ):
        console.print(
            f"write warning: {r['config_name']} at {r['jobs_per_node']:g} jobs/node "
            f"({r['staged_gb_per_node_hour']:.0f} GB written per node-hour): {r['write_warning']}"
        )
    console.print(
        "node: the cheapest node row with jobs/node x cores per job cores; price per core-hour = "
        "(node over its service life + storage over its life + power) / core-hours delivered"
    )


def _points(value: float | None) -> str:
    """An error in percentage points, as the report prints it."""
    return f"{value * 100:.1f} pt" if value is not None else "not measured"


def _signed_points(error: float) -> str:
    """An error in percentage points with its sign, none on a figure that rounds to zero."""
    return unsigned_zero(f"{error * 100:+.1f}")


def _pct(share: float | None) -> float | None:
    """A share as a percentage number, rounded as the report prints it (one decimal)."""
    return None if share is None else round(share * 100, 1)


def _what_if_cell(r: dict | None) -> str:
    if r is None:
        return ""
    return f"{r['predicted_efficiency'] * 100:.1f} ({r['jobs_per_node_hour']:.1f})" + (
        " *" if r["extrapolated"] else ""
    )


def _interval(
    value: float, low: float | None, high: float | None, allowed: tuple[float | None, float | None], form: str
) -> str:
    """``value (low-high)``, the interval cut to what the quantity allows (an efficiency never
    above 100 %, a price never below 0) but always holding the value itself, as the report does
    (report/bounds.py; not imported: the report package takes seconds to import)."""
    floor, ceiling = allowed
    if low is not None and floor is not None:
        low = max(low, min(floor, value))
    if high is not None and ceiling is not None:
        high = min(high, max(ceiling, value))
    if low is None or high is None:
        return form.format(value)
    return f"{form.format(value)} ({form.format(low)}-{form.format(high)})"
