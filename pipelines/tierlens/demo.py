"""`tierlens demo`: the whole product on the built-in synthetic site, start to finish."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from rich.console import Console
from rich.progress import Progress

from .config import Paths
from .console import number_text, print_rows
from .pipeline import ingest
from .sources.synthetic import SyntheticChange, SyntheticOptions, demo_site, generate
from .sources.synthetic.hammercloud import GLASGOW_TABLE1, run_node_test
from .sources.synthetic.site import SiteSpec

if TYPE_CHECKING:
    from .report.page import Fact

#: SLAC poster, 2013/09/04 to 10/07: CPU/wall of the node group that skipped the SSD cache (A)
#: and of the one that tried it first (B).
SLAC_CPU_PER_WALL = {"A": 0.75, "B": 0.81}


#: The storage type the demo site does not have: its nodes are left out, its device is probed
#: (`tierlens probe storage --synthetic`), and the buying guide predicts it from that probe. The
#: consumer SSD: the cheap device a buying guide most needs to judge from more than a datasheet.
LEFT_OUT = "ssd"


def demo_change(days: float) -> SyntheticChange:
    """The site change the demo records halfway through: a shared-file-system client tuning on the
    NFS nodes only, as IFCA tuned its file system for CMS analysis. The other nodes are the control."""
    return SyntheticChange(
        day=days / 2,
        read_speedup=2.5,
        storage_type="nfs",
        category="filesystem",
        description="NFS client read-ahead 128 KiB -> 4 MiB on the NFS nodes (IFCA-style tuning)",
    )


def demo_options(
    days: float, seed: int, nodes_per_type: int, changes: tuple | None = None, left_out: str | None = LEFT_OUT
) -> SyntheticOptions:
    """What the demo generates: the demo site without ``left_out``'s nodes, with ``changes``
    (default: :func:`demo_change`; ``()`` for none)."""
    site = demo_site(nodes_per_type=nodes_per_type)
    if left_out:
        site = replace(site, nodes=tuple(n for n in site.nodes if n.scratch.storage_type != left_out))
    return SyntheticOptions(
        days=days, seed=seed, site=site, changes=(demo_change(days),) if changes is None else tuple(changes)
    )


@dataclass(frozen=True)
class DemoSummary:
    jobs: int
    efficiency: float
    arm_efficiency: dict[str, float]  # Σcpu / Σ(wall × cores), as the report's answers
    arm_cpu_per_wall: dict[str, float]  # Σcpu / Σwall, as the SLAC tables (above 1 for multi-core jobs)
    storage_efficiency: dict[str, float]  # analysis jobs, Σcpu/Σcore-wall by storage type
    cache_hit_ratio_bytes: float | None
    rejects: int
    #: the A/B trial's first and last day, both included (marts.ab_comparison's period_last_day)
    ab_period: tuple[dt.date, dt.date] | None = None


def run_demo(
    p: Paths,
    *,
    days: float,
    seed: int,
    nodes_per_type: int,
    console: Console,
    progress: Callable[[], Progress],
    transform: Callable[[Path, Path], None],
    changes: tuple | None = None,
    left_out: str | None = LEFT_OUT,
) -> DemoSummary:
    options = demo_options(days, seed, nodes_per_type, changes, left_out)
    console.print(
        f"[bold]tierlens demo[/bold]: {days:g} days of a synthetic Tier-2 "
        f"({len(options.site.nodes)} nodes, {options.site.slots} cores), seed {seed}, into {p.home}"
    )
    for c in options.changes:
        console.print(f"site change on day {c.day:g}: {c.description} (see the report's before/after section)")
    if left_out:
        console.print(f"no {left_out} nodes: the buying guide predicts {left_out} from a synthetic probe of its device")
    with progress() as bar:
        sim = bar.add_task("simulating site, ingesting batches (days)", total=int(-(-days // 1)))
        summary = ingest(generate(options, progress=lambda day: bar.update(sim, completed=day)), p.warehouse)
    console.print(
        f"ingested {sum(summary.rows_loaded.values()):,} rows of the simulated site in "
        f"{summary.batches:,} batches; {summary.total_rejected:,} rejected (the report's "
        f"'Batches loaded' also counts the device probes' and site changes' own)"
    )
    _export_lake(p)
    transform(p.warehouse, p.dbt_state)
    efficiency = predict_efficiency(p, options.site, console, (left_out,) if left_out else ())
    from .report import build_report
    from .warehouse.publish import reader_path

    with console.status("writing report"):
        result = build_report(reader_path(p.warehouse), p.reports)
    s = summarize(reader_path(p.warehouse))
    print_answers(result.answers, console)
    print_summary(s, console)
    _print_node_tests(console)
    print_efficiency_checks(efficiency, console)
    from .simulator.tables import print_hardware

    print_hardware(efficiency, console, limit=8)
    console.print(f"\nreport: [bold]{result.html_path}[/bold]   CSV files: {result.html_path.parent}")
    console.print(f"warehouse: {p.warehouse}   ad-hoc queries: tierlens sql --list, tierlens sql NAME -w {p.warehouse}")
    return s


#: What the demo asks the efficiency model: jobs per node and caches (none, and two policies at the
#: size of the demo site's cache).
DEMO_JOBS_PER_NODE = (1, 4, 8, 16)
DEMO_CACHE_POLICIES = ("lru", "slac2")


def predict_efficiency(p: Paths, site: SiteSpec, console: Console, not_run: tuple[str, ...] = ()):
    """Calibrate the efficiency model on the demo's analysis jobs, validate it, predict the grid,
    write it back (with the synthetic site's true service times beside the fitted ones) and
    rebuild the marts that compare measured and predicted."""
    from .simulator import store, whatif
    from .sources.synthetic.truth import truth_table
    from .transform import refresh_efficiency_marts
    from .warehouse import Warehouse

    caches = (whatif.CacheOption(),) + tuple(
        whatif.CacheOption(pol, site.cache_capacity_bytes) for pol in DEMO_CACHE_POLICIES
    )
    options = whatif.EfficiencyOptions(
        job_class="analysis", jobs_per_node=DEMO_JOBS_PER_NODE, caches=caches, candidates=True
    )
    probe_devices(p, site, not_run)
    with Warehouse(p.warehouse) as w, console.status("simulating efficiency of configurations") as status:
        run = whatif.run(w.con, options, progress=lambda m: status.update(f"efficiency model: {m}"))
        store.write_efficiency(w.con, run, truth_table(site, whatif.staged_read_fraction(run.profiles)))
    refresh_efficiency_marts(p.warehouse, p.dbt_state)
    return run


def probe_devices(p: Paths, site: SiteSpec, not_run: tuple[str, ...] = ()) -> None:
    """Probe every storage type of the site, and the types it does not run (``not_run``), through
    the generator's device model (`tierlens probe storage --synthetic`): the efficiency run
    validates the device layer by leaving each measured type out and predicting it from its probe,
    and predicts the types not run from theirs."""
    from .probe.load import load_probe
    from .sources.synthetic.probe import run_synthetic_probe

    for st in sorted({n.scratch.storage_type for n in site.nodes} | set(not_run)):
        load_probe(run_synthetic_probe(st, max(n.slots for n in site.nodes)), f"probe:synthetic:{st}", p.warehouse)


def print_efficiency_checks(run, console: Console) -> None:
    from .simulator import whatif
    from .simulator.tables import print_efficiency

    print_efficiency(run, None, console)
    g = whatif.glasgow_ordering(run, GLASGOW_TABLE1)
    console.print(
        f"This site's own analysis jobs, predicted {g.name} without a cache, ranked against Glasgow "
        f"Table 1's order (its values differ: its jobs and devices are not this site's): Kendall tau "
        f"{g.kendall_tau:+.2f}; "
        + ", ".join(
            f"{k} {g.predicted[k] * 100:.0f} % (seed {g.reference[k] * 100:.0f} %)"
            for k in sorted(g.predicted, key=g.predicted.get)
        )
    )
    arms = whatif.arm_differences(run)
    agree = sum(1 for m, q in arms.values() if (m > 0) == (q > 0))
    console.print(
        f"SLAC arms (B tries the cache): B - A predicted with the measured sign for {agree} of "
        f"{len(arms)} storage types (SLAC seed: B higher)"
    )


def _export_lake(p: Paths) -> None:
    from .warehouse import Warehouse, export_lake

    with Warehouse(p.warehouse, read_only=True) as wh:
        export_lake(wh, p.lake)


def summarize(warehouse: Path) -> DemoSummary:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        jobs, eff = con.execute(
            "SELECT count(*), sum(cpu_seconds) / sum(core_wall_seconds) FROM marts.job_efficiency"
        ).fetchone()
        period = con.execute(
            "SELECT period_start, period_last_day FROM marts.ab_comparison WHERE period_grain = 'all'"
        ).fetchone()
        arms = con.execute(
            "SELECT 'A', efficiency_a, cpu_per_wall_a FROM marts.ab_comparison WHERE period_grain = 'all' "
            "UNION ALL SELECT 'B', efficiency_b, cpu_per_wall_b FROM marts.ab_comparison "
            "WHERE period_grain = 'all'"
        ).fetchall()
        storage = dict(
            con.execute(
                "SELECT storage_type, sum(cpu_seconds) / sum(core_wall_seconds) "
                "FROM marts.job_efficiency WHERE job_class = 'analysis' "
                "GROUP BY storage_type ORDER BY 2"
            ).fetchall()
        )
        hit = con.execute(
            "SELECT sum(gb_delivered_from_cache) / nullif(sum(gb_delivered_from_cache + gb_staged_in"
            " + gb_bypassed), 0) FROM marts.cache_hourly"
        ).fetchone()[0]
        rejects = con.execute("SELECT count(*) FROM main.raw_rejects").fetchone()[0]
    finally:
        con.close()
    return DemoSummary(
        jobs,
        eff,
        {a: e for a, e, _ in arms},
        {a: c for a, _, c in arms},
        storage,
        hit,
        rejects,
        tuple(period) if period else None,
    )


#: What a demo table too wide for the terminal says about the columns it leaves out.
DEMO_MORE = "A wider terminal (COLUMNS=160) shows them; the report's CSV files have every column."


def _pct(share: float | None) -> float | None:
    """A share as a percentage number for the console's one number format (print_rows)."""
    return None if share is None or math.isnan(share) else share * 100


def print_summary(s: DemoSummary, console: Console) -> None:
    """The demo's answers as the `tierlens sql` console prints tables: one number format, fitted
    to the terminal (a row per block when too wide), a sentence when a table is empty."""
    console.print(f"{s.jobs:,} jobs, site CPU efficiency {number_text(_pct(s.efficiency))} %", highlight=False)
    # the period as the report and sql/ab_summary.sql show it: first and last day, both included
    period = f", {s.ab_period[0].isoformat()} to {s.ab_period[1].isoformat()}" if s.ab_period else ""
    print_rows(
        f"A/B arms{period} (A skips the SSD cache, B tries it): efficiency = Σcpu / Σ(wall × cores); "
        "CPU/wall = Σcpu / Σwall, as the SLAC tables (above 1 for multi-core jobs)",
        ["arm", "efficiency (%)", "CPU/wall", "CPU/wall, SLAC seed"],
        [[arm, _pct(s.arm_efficiency.get(arm)), s.arm_cpu_per_wall.get(arm), SLAC_CPU_PER_WALL[arm]] for arm in "AB"],
        more=DEMO_MORE,
        on=console,
    )
    print_rows(
        "analysis jobs: CPU efficiency by scratch storage type",
        ["storage type", "efficiency (%)"],
        [[st, _pct(e)] for st, e in s.storage_efficiency.items()],
        empty_reason="No analysis job carried a storage tag (marts.efficiency_by_group).",
        more=DEMO_MORE,
        on=console,
    )
    if s.cache_hit_ratio_bytes is not None:
        console.print(f"SSD cache byte hit ratio: {number_text(_pct(s.cache_hit_ratio_bytes))} %", highlight=False)
    console.print(f"rejected records: {s.rejects:,}", highlight=False)


def print_answers(answers: Sequence[Fact], console: Console) -> None:
    """The report's answers, word for word as its first screen shows them: one figure, one value."""
    console.print("\n[bold]The answers[/bold] (the report's first screen)")
    for f in answers:
        console.print(f"{f.label}: {f.value}", highlight=False, markup=False)


def _print_node_tests(console: Console) -> None:
    rows = []
    for st in ("ssd", "hdd", "raid1", "raid0", "nvme"):
        seed = GLASGOW_TABLE1.get(st)
        rows.append([st, _pct(run_node_test(st).mean_job_efficiency), _pct(seed) if seed else None])
    print_rows(
        "The demo generator's devices under a HammerCloud-style test: 8 identical jobs on one 8-core node, "
        "as Glasgow's Table 1 measured its own (the seed scoreboard, bench/seeds.md, predicts Glasgow's hardware)",
        ["storage type", "mean job efficiency, demo devices (%)", "Glasgow Table 1, its devices (%)"],
        rows,
        more=DEMO_MORE,
        on=console,
    )
