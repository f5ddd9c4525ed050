"""Efficiency model: how well it predicts, what it costs, on the demo month.

Runs `tierlens demo` (30 days, seed 42) into bench/out/efficiency/ unless --warehouse names one
already built, then times calibration, leave-one-out validation and the what-if grid, and prints:

* per measured configuration (storage type x arm): measured, predicted, left-out prediction and
  their errors in points;
* the recovered service times against the synthetic generator's (scratch s per staged GB);
* the seeds' orderings: Glasgow Table 1 at 8 jobs per node, the SLAC arms;
* seconds and peak RSS of each step.

    .venv/bin/python bench/efficiency_bench.py [--warehouse PATH] [--days 30]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument(
        "--probe-dir",
        type=Path,
        help="Also time a real fio probe of this (empty) directory and "
        "its overhead on CPU-bound work running beside it.",
    )
    ap.add_argument("--probe-seconds", type=float, default=35.0)
    args = ap.parse_args()
    wh = args.warehouse
    if wh is None:
        home = HERE / "out" / "efficiency"
        wh = home / "warehouse.duckdb"
        if not wh.exists():
            subprocess.run(
                [str(Path(sys.executable).parent / "tierlens"), "demo", "--days", str(args.days), "--home", str(home)],
                check=True,
                stdout=subprocess.DEVNULL,
            )

    from tierlens.simulator import efficiency as ef, whatif
    from tierlens.sources.synthetic import demo_site
    from tierlens.sources.synthetic.hammercloud import GLASGOW_TABLE1
    from tierlens.sources.synthetic.truth import truth_table

    con = duckdb.connect(str(wh), read_only=True)
    steps: list[tuple[str, float, float]] = []
    t = time.perf_counter()
    prof = ef.load_profiles(con, "analysis")
    steps.append((f"load {len(prof):,} job profiles", time.perf_counter() - t, peak_rss_mib()))
    t = time.perf_counter()
    cal = ef.calibrate(prof, "analysis")
    steps.append(
        (f"calibrate ({cal.jobs:,} jobs, {len(cal.log_times)} times)", time.perf_counter() - t, peak_rss_mib())
    )
    t = time.perf_counter()
    held = ef.validate(prof, "analysis")
    steps.append((f"leave-one-out ({len(held)} fits)", time.perf_counter() - t, peak_rss_mib()))
    cal.structural_error = ef.structural_error(held)
    site = demo_site()
    options = whatif.EfficiencyOptions(
        jobs_per_node=(1, 4, 8, 16),
        validate=False,
        caches=(
            whatif.CacheOption(),
            whatif.CacheOption("lru", site.cache_capacity_bytes),
            whatif.CacheOption("slac2", site.cache_capacity_bytes),
        ),
    )
    t = time.perf_counter()
    run = whatif.run(con, options)
    steps.append(
        ("what-if grid (calibrate + 2 cache replays + 72 predictions)", time.perf_counter() - t, peak_rss_mib())
    )

    print(
        f"\n{len(prof):,} analysis jobs; per-job RMS residual {cal.rms_error:.3f}; "
        f"leave-one-out RMS {cal.structural_error:.4f}\n"
    )
    print("| storage | arm | jobs | measured | predicted | error | left out | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for h in held:
        sub = prof.take((prof.storage_type == h.storage_type) & (prof.arm == h.arm))
        p = ef.efficiency_of(sub, ef.predict_wall(cal.log_times, cal.storage_types, sub))
        print(
            f"| {h.storage_type} | {h.arm} | {h.jobs:,} | {h.measured:.1%} | {p:.1%} | "
            f"{(p - h.measured) * 100:+.1f} | {h.predicted:.1%} | {h.error * 100:+.1f} |"
        )
    truth = truth_table(site, whatif.staged_read_fraction(prof))
    params = whatif.parameter_table(cal, prof).to_pylist()
    print("\n| scratch s per staged GB | fitted | ± | generator | ratio |")
    print("|---|---:|---:|---:|---:|")
    for r in params:
        if r["parameter"] != "scratch_s_per_staged_gb":
            continue
        v, lo, hi = truth[f"scratch_s_per_staged_gb[{r['applies_to']}]"]
        band = f"{v:.1f}" if lo == hi else f"{lo:.1f} .. {hi:.1f}"
        print(f"| {r['applies_to']} | {r['value']:.1f} | {r['std_error']:.1f} | {band} | {r['value'] / v:.2f} |")
    g = whatif.glasgow_ordering(run, GLASGOW_TABLE1)
    print(
        f"\nGlasgow Table 1 at 8 jobs/node, no cache: Kendall tau {g.kendall_tau:+.2f}: "
        + ", ".join(
            f"{k} {g.predicted[k]:.1%} (seed {g.reference[k]:.0%})" for k in sorted(g.predicted, key=g.predicted.get)
        )
    )
    arms = whatif.arm_differences(run)
    print(
        "SLAC arms, B - A (measured / predicted, points): "
        + ", ".join(f"{st} {m * 100:+.1f}/{q * 100:+.1f}" for st, (m, q) in sorted(arms.items()))
    )
    print("\n| step | seconds | peak RSS |")
    print("|---|---:|---:|")
    for name, secs, rss in steps:
        print(f"| {name} | {secs:.1f} | {rss:.0f} MiB |")
    device_layer(prof)
    if args.probe_dir:
        probe_overhead(args.probe_dir, args.probe_seconds)
    print(
        f"\nerrors (points): in-sample max {max(abs(e) for e in _in_sample(cal, prof, held)) * 100:.1f}, "
        f"left-out max {max(abs(h.error) for h in held) * 100:.1f}, mean |left-out| "
        f"{np.mean([abs(h.error) for h in held]) * 100:.1f}"
    )


def _in_sample(cal, prof, held):
    from tierlens.simulator import efficiency as ef

    out = []
    for h in held:
        sub = prof.take((prof.storage_type == h.storage_type) & (prof.arm == h.arm))
        out.append(ef.efficiency_of(sub, ef.predict_wall(cal.log_times, cal.storage_types, sub)) - h.measured)
    return out


def device_layer(prof) -> None:
    """Synthetic probes of every device, the mapping fit, and leave-one-type-out: errors and cost."""
    from tierlens.simulator import devices as dv, efficiency as ef, hardware as hw, whatif
    from tierlens.sources.synthetic.probe import run_synthetic_probe
    from tierlens.sources.synthetic.site import SCRATCH

    steps: list[tuple[str, float, float]] = []
    t = time.perf_counter()
    probe = {st: dv.from_probe(run_synthetic_probe(st, slots=8).to_pylist()) for st in SCRATCH}
    steps.append((f"synthetic probe of {len(probe)} devices (7 jobs each)", time.perf_counter() - t, peak_rss_mib()))
    datasheet = {}
    for row in hw.catalog_rows(duckdb.connect()):
        fig = dv.from_datasheet(row)
        if fig is not None:
            datasheet.setdefault(row["storage_type"], fig)
    devices = hw.Devices(probe, datasheet, [], {})
    frac = whatif.staged_read_fraction(prof)
    t = time.perf_counter()
    cal = ef.calibrate(prof, "analysis")
    mapping = dv.fit_mapping(probe, hw.fitted_targets(cal), frac)
    steps.append(("calibrate + fit the probe mapping", time.perf_counter() - t, peak_rss_mib()))
    t = time.perf_counter()
    held = hw.validate_types(prof, "analysis", devices, frac)
    n_types = len({h.storage_type for h in held})
    steps.append((f"leave-one-type-out ({n_types} fits, probe and datasheet)", time.perf_counter() - t, peak_rss_mib()))
    print(
        "\nDevice layer: mapping "
        + ", ".join(f"{k} {v:.3g}" for k, v in mapping.as_dict().items())
        + f" (RMS log error of the fitted composites {mapping.rms_log_error:.3f})"
    )
    print("\n| storage type left out | jobs | measured | from probe | error | from datasheet | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    by = {(h.storage_type, h.evidence): h for h in held}
    for st in sorted({h.storage_type for h in held}):
        p, d = by.get((st, "probe")), by.get((st, "datasheet"))
        m = p or d
        cells = [f"{x.predicted:.1%} | {x.error * 100:+.1f}" if x else "- | -" for x in (p, d)]
        print(f"| {st} | {m.jobs:,} | {m.measured:.1%} | {cells[0]} | {cells[1]} |")
    errors = hw.type_errors(held)
    print("\nRMS leave-one-type-out error: " + ", ".join(f"{k} {v * 100:.1f} points" for k, v in errors.items() if v))
    print("\n| step | seconds | peak RSS |")
    print("|---|---:|---:|")
    for name, secs, rss in steps:
        print(f"| {name} | {secs:.1f} | {rss:.0f} MiB |")


def _spin(seconds: float, out) -> None:
    """CPU-bound work standing in for a job: loop iterations completed in ``seconds``."""
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        for _ in range(10_000):
            n += 1
    out.put(n / seconds)


def _spin_rate(workers: int, seconds: float) -> float:
    import multiprocessing as mp

    q = mp.Queue()
    procs = [mp.Process(target=_spin, args=(seconds, q)) for _ in range(workers)]
    for p in procs:
        p.start()
    rates = [q.get() for _ in procs]
    for p in procs:
        p.join()
    return sum(rates)


def probe_overhead(path: Path, seconds: float) -> None:
    """A full node: one CPU-bound job per core. Their rate alone, then beside a fio probe of
    ``path`` (the probe's own duration measured too)."""
    import os
    import threading

    from tierlens.probe.fio import ProbeOptions, run_probe

    cores = os.cpu_count() or 1
    alone = _spin_rate(cores, seconds)
    result: dict = {}

    def probe() -> None:
        t = time.perf_counter()
        result["table"] = run_probe(ProbeOptions(path, "bench", seconds, cores, 256 * 1024**2))
        result["seconds"] = time.perf_counter() - t

    th = threading.Thread(target=probe)
    th.start()
    beside = _spin_rate(cores, seconds)
    th.join()
    busy_probe_s = result["seconds"]
    t = time.perf_counter()
    run_probe(ProbeOptions(path, "bench", seconds, cores, 256 * 1024**2))
    idle_probe_s = time.perf_counter() - t
    load = os.getloadavg()[0]
    print(f"\nfio probe of {path} ({seconds:g} s of jobs, {cores} processes for the full-node jobs, 256 MiB files):")
    print("| measurement | value |")
    print("|---|---:|")
    print(f"| probe wall time beside {cores} CPU-bound jobs | {busy_probe_s:.1f} s |")
    print(f"| probe wall time, no jobs beside it | {idle_probe_s:.1f} s |")
    print(f"| CPU-bound jobs' rate beside the probe / alone | {beside / alone:.3f} |")
    print(f"| load average (1 min) at the end | {load:.1f} |")


if __name__ == "__main__":
    main()
