"""An efficiency run (simulator.whatif) as tables on a console: the command line and the demo print these."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .hardware import type_errors


def print_efficiency(run, run_id: str | None, console: Console) -> None:
    """Measured against predicted efficiency per configuration, then the what-if grid."""
    cal = run.calibration
    t = Table(
        title=f"{cal.job_class} jobs: measured vs predicted CPU efficiency "
        f"({len(run.profiles):,} jobs, model fitted on {cal.jobs:,})"
    )
    for c in ("storage type", "arm", "jobs", "jobs/node", "measured", "predicted", "left out"):
        t.add_column(c, justify="left" if c in ("storage type", "arm") else "right")
    pred = run.predictions.to_pylist()
    for r in (r for r in pred if r["scenario"] == "measured"):
        loo = r["loo_predicted_efficiency"]
        t.add_row(
            r["storage_type"],
            r["ab_arm"] or "",
            f"{r['jobs']:,}",
            f"{r['mean_concurrent_jobs']:.1f}",
            f"{r['measured_efficiency']:.1%}",
            f"{r['predicted_efficiency']:.1%}",
            f"{loo:.1%}" if loo is not None else "",
        )
    console.print(t)
    if cal.structural_error is not None:
        console.print(f"leave-one-out error (RMS over configurations): {cal.structural_error * 100:.1f} points")
    what_if = [r for r in pred if r["scenario"] == "what-if"]
    per_node = sorted({r["jobs_per_node"] for r in what_if})
    t = Table(title="what if: predicted efficiency (jobs per node-hour) by jobs per node")
    t.add_column("cache")
    t.add_column("storage type")
    for n in per_node:
        t.add_column(f"{n:g} / node", justify="right")
    cell = {(r["cache"], r["storage_type"], r["jobs_per_node"]): r for r in what_if}
    for cache, st in dict.fromkeys((r["cache"], r["storage_type"]) for r in what_if):
        row = []
        for n in per_node:
            r = cell.get((cache, st, n))
            row.append(
                ""
                if r is None
                else f"{r['predicted_efficiency']:.1%} ({r['jobs_per_node_hour']:.1f})"
                + (" *" if r["extrapolated"] else "")
            )
        t.add_row(cache, st, *row)
    console.print(t)
    sd = [r["efficiency_sd"] for r in what_if]
    if sd:
        console.print(
            f"95 % intervals: ± {196 * min(sd):.1f} to ± {196 * max(sd):.1f} points "
            "(sim_efficiency_predictions, marts.efficiency_what_if)"
        )
    if any(r["extrapolated"] for r in pred):
        console.print("* uses a service time the measured jobs did not determine (extrapolated)")
    if run_id:
        console.print(f"written: sim_efficiency_runs / _parameters / _predictions, run_id {run_id}")


def print_hardware(run, console: Console, limit: int = 30) -> None:
    """The device layer's validation and the buying guide, when the run has them."""
    if run.type_held_out:
        t = Table(title="storage types left out entirely, predicted from their probe or datasheet")
        for c in ("storage type", "from", "jobs", "measured", "predicted", "error"):
            t.add_column(c, justify="left" if c in ("storage type", "from") else "right")
        for h in run.type_held_out:
            t.add_row(
                h.storage_type,
                h.evidence,
                f"{h.jobs:,}",
                f"{h.measured:.1%}",
                f"{h.predicted:.1%}",
                f"{h.error * 100:+.1f}",
            )
        console.print(t)
        from .seeds import structural_error_rows

        carried = structural_error_rows(type_errors(run.type_held_out))
        console.print(
            "structural error of derived predictions (RMS leave-one-out), the larger carried: "
            + "; ".join(
                f"{r['evidence']} {r['structural_error'] * 100:.1f} points from the "
                f"{r['source']} (this site {_points(r['generator_rms'])}, published figures "
                f"{_points(r['published_rms'])})"
                for r in carried
            )
        )
    guide = run.hardware_options
    if guide is None or guide.num_rows == 0:
        return
    t = Table(title="Hardware you could buy: whole-node price per delivered CPU core-hour (95 % interval)")
    for c in (
        "#",
        "configuration",
        "evidence",
        "jobs/node",
        "cache",
        "efficiency",
        "node",
        "node + storage",
        "per 1000 core-hours",
        "SSD life",
    ):
        t.add_column(c, justify="left" if c in ("configuration", "evidence", "cache", "node") else "right")
    rows = guide.to_pylist()
    shown = rows[:limit]
    # a derived option below the cut is the one a newcomer looks for: its cheapest row too
    names = {r["config_name"] for r in shown}
    for r in rows[limit:]:
        if r["evidence"] != "measured" and r["config_name"] not in names:
            shown.append(r)
            names.add(r["config_name"])
    for r in shown:
        cur = r["currency"] or ""
        life = r["ssd_lifetime_years"]
        t.add_row(
            str(r["rank"]),
            r["config_name"],
            r["evidence"],
            f"{r['jobs_per_node']:g}",
            r["cache"],
            f"{r['efficiency']:.1%} ({r['efficiency_low']:.1%}-{r['efficiency_high']:.1%})",
            r["node_config"] or "",
            f"{r['whole_node_price']:,.0f} {cur}",
            f"{1000 * r['price_per_core_hour']:.2f} ({1000 * r['price_per_core_hour_low']:.2f}-"
            f"{1000 * r['price_per_core_hour_high']:.2f})",
            f"{life:.1f} y" if life else "",
        )
    console.print(t)
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
    return f"{value * 100:.1f}" if value is not None else "not measured"
