"""`tierlens simulate cache` and `tierlens export trace`."""



import json
import re
from pathlib import Path
from typing import Annotated, Optional

import typer

_UNITS = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6, "G": 10**9, "GB": 10**9,
          "T": 10**12, "TB": 10**12, "P": 10**15, "PB": 10**15, "KIB": 2**10, "MIB": 2**20,
          "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}


def parse_bytes(text: str) -> int:
    """'11TB' (decimal), '10TiB' (binary) or a plain number of bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise typer.BadParameter(f"not a size: {text!r} (e.g. 11TB, 500GiB, 1e12)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{n:,.0f} B"
        n /= 1000.0
    return str(n)


def parse_cache(text: str):
    """'none' or POLICY:SIZE, as a whatif.CacheOption."""
    from .engine import POLICIES
    from .whatif import CacheOption

    if text.strip().lower() == "none":
        return CacheOption()
    policy, _, size = text.partition(":")
    if policy.lower() not in POLICIES or not size:
        raise typer.BadParameter(f"not a cache: {text!r} (none, or POLICY:SIZE with POLICY one of "
                                 f"{', '.join(POLICIES)}, e.g. lru:50TB)")
    return CacheOption(policy.lower(), parse_bytes(size))


def print_efficiency(run, run_id: str | None) -> None:
    from rich.table import Table

    from ..cli import console

    cal = run.calibration
    t = Table(title=f"{cal.job_class} jobs: measured vs predicted CPU efficiency "
                    f"({len(run.profiles):,} jobs, model fitted on {cal.jobs:,})")
    for c in ("storage type", "arm", "jobs", "jobs/node", "measured", "predicted", "left out"):
        t.add_column(c, justify="left" if c in ("storage type", "arm") else "right")
    pred = run.predictions.to_pylist()
    for r in (r for r in pred if r["scenario"] == "measured"):
        loo = r["loo_predicted_efficiency"]
        t.add_row(r["storage_type"], r["ab_arm"] or "", f"{r['jobs']:,}", f"{r['mean_concurrent_jobs']:.1f}",
                  f"{r['measured_efficiency']:.1%}", f"{r['predicted_efficiency']:.1%}",
                  f"{loo:.1%}" if loo is not None else "")
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
            row.append("" if r is None else f"{r['predicted_efficiency']:.1%} ({r['jobs_per_node_hour']:.1f})"
                       + (" *" if r["extrapolated"] else ""))
        t.add_row(cache, st, *row)
    console.print(t)
    sd = [r["efficiency_sd"] for r in what_if]
    if sd:
        console.print(f"95 % intervals: ± {196 * min(sd):.1f} to ± {196 * max(sd):.1f} points "
                      "(sim_efficiency_predictions, marts.efficiency_what_if)")
    if any(r["extrapolated"] for r in pred):
        console.print("* uses a service time the measured jobs did not determine (extrapolated)")
    if run_id:
        console.print(f"written: sim_efficiency_runs / _parameters / _predictions, run_id {run_id}")


def _efficiency_from_marts(options, marts: Path, probes: list[Path] | None, warehouse: Path | None) -> None:
    """`simulate efficiency --marts`: profiles from another engine's Parquet marts; results
    written to ``warehouse`` (created if needed) unless it is None."""
    from ..cli import console, err
    from ..warehouse import Warehouse
    from . import store, whatif

    try:
        con = whatif.marts_connection(marts, probes)
        if any(c.policy for c in options.caches) and not con.execute(
                "select count(*) from duckdb_views() where view_name = 'int_file_access_by_job'").fetchone()[0]:
            raise ValueError(f"cache what-ifs replay int_file_access_by_job, and {marts.parent / 'intermediate.db'} "
                             "has none: use --cache none")
        with console.status("simulating") as status:
            run = whatif.run(con, options, progress=lambda m: status.update(m))
    except ValueError as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(1) from e
    rid = None
    if warehouse is not None:
        with Warehouse(warehouse) as w:
            rid = store.write_efficiency(w.con, run)
    print_efficiency(run, rid)
    print_hardware(run)


def print_hardware(run, limit: int = 30) -> None:
    """The device layer's validation and the buying guide, when the run has them."""
    from rich.table import Table

    from ..cli import console
    from .hardware import type_errors

    if run.type_held_out:
        t = Table(title="storage types left out entirely, predicted from their probe or datasheet")
        for c in ("storage type", "from", "jobs", "measured", "predicted", "error"):
            t.add_column(c, justify="left" if c in ("storage type", "from") else "right")
        for h in run.type_held_out:
            t.add_row(h.storage_type, h.evidence, f"{h.jobs:,}", f"{h.measured:.1%}", f"{h.predicted:.1%}",
                      f"{h.error * 100:+.1f}")
        console.print(t)
        errors = type_errors(run.type_held_out)
        console.print("structural error of derived predictions (RMS over types): "
                      + ", ".join(f"{k} {v * 100:.1f} points" for k, v in errors.items() if v is not None))
    guide = run.hardware_options
    if guide is None or guide.num_rows == 0:
        return
    t = Table(title="Hardware you could buy: price per delivered CPU core-hour (95 % interval)")
    for c in ("#", "configuration", "evidence", "jobs/node", "cache", "efficiency", "price/throughput",
              "per 1000 core-hours", "SSD life"):
        t.add_column(c, justify="left" if c in ("configuration", "evidence", "cache") else "right")
    for r in guide.to_pylist()[:limit]:
        cur = r["currency"] or ""
        life = r["ssd_lifetime_years"]
        t.add_row(str(r["rank"]), r["config_name"], r["evidence"], f"{r['jobs_per_node']:g}", r["cache"],
                  f"{r['efficiency']:.1%} ({r['efficiency_low']:.1%}-{r['efficiency_high']:.1%})",
                  f"{r['price_per_throughput']:.2f} {cur}",
                  f"{1000 * r['price_per_core_hour']:.3f} ({1000 * r['price_per_core_hour_low']:.3f}-"
                  f"{1000 * r['price_per_core_hour_high']:.3f})",
                  f"{life:.1f} y" if life else "")
    console.print(t)


def _load_trace(warehouse: Path | None, parquet: list[Path] | None, oracle: Path | None, size_unit: int,
                server: str | None, role: str | None, start: str | None, end: str | None):
    from ..cli import _warehouse
    from . import trace as tr

    if oracle is not None:
        return tr.read_oracle(oracle, size_unit)
    if parquet:
        return tr.from_parquet(list(parquet))
    from ..warehouse import Warehouse

    wh = _warehouse(warehouse)
    if not wh.exists():
        raise typer.BadParameter(f"no warehouse at {wh}: load file accesses first, or pass --parquet/--oracle")
    with Warehouse(wh, read_only=True) as w:
        return tr.from_warehouse(w.con, server, role, start, end)


def register(app: typer.Typer) -> None:
    from ..cli import WarehouseOpt, console, err

    sim_app = typer.Typer(help="Replay file accesses through cache configurations you have not deployed.",
                          no_args_is_help=True)
    app.add_typer(sim_app, name="simulate")
    export_app = typer.Typer(help="Export warehouse data in other tools' formats.", no_args_is_help=True)
    app.add_typer(export_app, name="export")

    @sim_app.command("cache")
    def cache(
        size: Annotated[list[str], typer.Option("--size", "-s", help="Cache capacity, e.g. 11TB or 500GiB; repeat for several.")],
        policy: Annotated[list[str], typer.Option("--policy", "-p", help="lru, fifo, lfu, s3fifo, belady, slac1, slac2, slac3; repeat for several.")] = ["lru"],  # noqa: B006
        warehouse: WarehouseOpt = None,
        parquet: Annotated[Optional[list[Path]], typer.Option(help="Read file_access records from Parquet instead of the warehouse.", exists=True, dir_okay=False)] = None,
        oracle: Annotated[Optional[Path], typer.Option(help="Read a libCacheSim oracleGeneral trace instead.", exists=True, dir_okay=False)] = None,
        size_unit: Annotated[int, typer.Option(help="oracleGeneral sizes are in units of this many bytes.")] = 1,
        server: Annotated[Optional[str], typer.Option(help="Only accesses to this server_host.")] = None,
        role: Annotated[Optional[str], typer.Option(help="Only accesses to servers of this role (origin, cache).")] = None,
        start: Annotated[Optional[str], typer.Option(help="Only accesses opened at or after this UTC time.")] = None,
        end: Annotated[Optional[str], typer.Option(help="Only accesses opened before this UTC time.")] = None,
        min_reads: Annotated[int, typer.Option(help="SLAC: accesses in the window before a file may be staged in.")] = 5,
        stage_cap_pct: Annotated[float, typer.Option(help="SLAC: stage-in cap, % of capacity per hour.")] = 2.0,
        window_days: Annotated[float, typer.Option(help="SLAC 2/3: days of history in the ranking.")] = 5.0,
        upcoming_minutes: Annotated[float, typer.Option(help="SLAC 3: refresh of upcoming jobs' inputs.")] = 20.0,
        assumed_read_frac: Annotated[float, typer.Option(help="SLAC 3: read fraction for files without history.")] = 0.1,
        whole_object: Annotated[bool, typer.Option(help="Every access reads its whole file (libCacheSim semantics).")] = False,
        nic_gbytes_per_s: Annotated[float, typer.Option(help="Cache NIC cap for the utilisation series, GB/s.")] = 2.5,
        ssd: Annotated[Optional[str], typer.Option(help="storage_catalog config_name for SSD wear [default: most enduring SSD/NVMe].")] = None,
        mrc: Annotated[bool, typer.Option(help="Also write the LRU miss-ratio curve for 100 sizes (one pass).")] = False,
        write: Annotated[bool, typer.Option(help="Write runs to the warehouse (sim_cache_runs, sim_cache_hourly).")] = True,
        as_json: Annotated[bool, typer.Option("--json", help="Print results as JSON lines.")] = False,
    ) -> None:
        """Replay file accesses through byte-capacity caches and write the results to the warehouse."""
        from rich.table import Table

        from ..cli import _warehouse
        from ..warehouse import Warehouse
        from . import engine, store

        trace = _load_trace(warehouse, parquet, oracle, size_unit, server, role, start, end)
        if len(trace) == 0:
            err.print("no file accesses to replay")
            raise typer.Exit(1)
        results = []
        for s in size:
            for p in policy:
                try:
                    params = engine.CacheParams(
                        p.lower(), parse_bytes(s), min_reads=min_reads, stage_cap_pct=stage_cap_pct,
                        window_days=window_days, upcoming_minutes=upcoming_minutes,
                        assumed_read_frac=assumed_read_frac, whole_object=whole_object,
                        nic_bytes_per_s=nic_gbytes_per_s * 1e9)
                except ValueError as e:
                    raise typer.BadParameter(str(e)) from e
                results.append(engine.simulate(trace, params))
        curve = None
        if mrc:
            osize = engine.object_sizes(trace)
            curve = engine.mrc(trace, engine.log_sizes(int(osize.max()), int(osize.sum())), whole_object)
        ids = []
        if write:
            wh = _warehouse(warehouse)
            with Warehouse(wh) as w:
                ssd_row = store.catalog_ssd(w.con, ssd)
                for i, r in enumerate(results):
                    ids.append(store.write_run(w.con, r, ssd_row, curve if i == 0 else None))
                    r.extra.update(store.wear(r, ssd_row))
        if as_json:
            for i, r in enumerate(results):
                console.print_json(json.dumps(dict(r.summary(), run_id=ids[i] if ids else None)))
            return
        t = Table(title=f"{len(trace):,} accesses, {trace.n_objects:,} files ({trace.source})")
        for c in ("policy", "capacity", "hit ratio", "byte hit ratio", "from cache", "staged in",
                  "SSD writes/day", "days to endurance", "peak NIC", "replay"):
            t.add_column(c, justify="left" if c == "policy" else "right")
        for r in results:
            util = r.hourly["nic_utilisation"].to_numpy()
            days = r.extra.get("days_to_endurance")
            t.add_row(r.params.policy, _human(r.params.capacity_bytes), f"{r.hit_ratio:.3f}", f"{r.byte_hit_ratio:.3f}",
                      _human(r.bytes_from_cache), _human(r.bytes_staged), _human(r.ssd_writes_per_day),
                      f"{days:,.0f}" if days else "", f"{util.max():.1%}", f"{r.elapsed_s:.2f} s")
        console.print(t)
        if ids:
            console.print(f"written to {_warehouse(warehouse)}: sim_cache_runs run_id {', '.join(ids)}"
                          + (" (+ sim_cache_mrc)" if curve is not None else ""))

    @sim_app.command("efficiency")
    def efficiency(
        job_class: Annotated[str, typer.Option(help="Job class to calibrate and predict ('all' for every class).")] = "analysis",
        storage_type: Annotated[Optional[list[str]], typer.Option("--storage-type", "-t", help="Storage type for the what-if grid; repeat [default: every measured type].")] = None,
        jobs_per_node: Annotated[Optional[list[float]], typer.Option("--jobs-per-node", "-n", help="Jobs per node for the grid; repeat [default: 4, 8, 16].")] = None,
        cache: Annotated[Optional[list[str]], typer.Option("--cache", "-c", help="'none' or POLICY:SIZE (e.g. lru:50TB, slac2:6TB); repeat [default: none].")] = None,
        warehouse: WarehouseOpt = None,
        start: Annotated[Optional[str], typer.Option(help="Only jobs ending at or after this UTC time.")] = None,
        end: Annotated[Optional[str], typer.Option(help="Only jobs ending before this UTC time.")] = None,
        validate: Annotated[bool, typer.Option(help="Leave each measured configuration out in turn and predict it.")] = True,
        write: Annotated[bool, typer.Option(help="Write the run to the warehouse (sim_efficiency_*).")] = True,
        candidates: Annotated[bool, typer.Option(help="Buying guide: price every storage_catalog configuration per delivered core-hour (sim_hardware_options, marts.hardware_options).")] = False,
        marts: Annotated[Optional[Path], typer.Option(help="Read job_io_profile from this Parquet marts folder (e.g. <spark.sql.warehouse.dir>/marts.db) instead of the warehouse; results still go to --warehouse.", exists=True, file_okay=False)] = None,
        probe: Annotated[Optional[list[Path]], typer.Option(help="With --marts: device_probe Parquet files (`tierlens probe storage --out`); repeat.", exists=True, dir_okay=False)] = None,
    ) -> None:
        """Predict CPU efficiency and throughput of configurations, calibrated on the measured jobs."""
        from ..cli import _warehouse
        from ..warehouse import Warehouse
        from . import store, whatif

        options = whatif.EfficiencyOptions(
            job_class=None if job_class == "all" else job_class,
            storage_types=tuple(storage_type or ()),
            jobs_per_node=tuple(jobs_per_node or (4, 8, 16)),
            caches=tuple(parse_cache(c) for c in (cache or ["none"])),
            start=start, end=end, validate=validate, candidates=candidates)
        wh = _warehouse(warehouse)
        if marts is not None:
            _efficiency_from_marts(options, marts, probe, wh if write else None)
            return
        if not wh.exists():
            raise typer.BadParameter(f"no warehouse at {wh}: ingest and run `tierlens transform` first")
        with Warehouse(wh, read_only=not write) as w:
            try:
                with console.status("simulating") as status:
                    run = whatif.run(w.con, options, progress=lambda m: status.update(m))
            except ValueError as e:
                err.print(f"[red]{e}[/red]")
                raise typer.Exit(1) from e
            except Exception as e:  # noqa: BLE001 - the mart is missing until dbt has run
                if "job_io_profile" in str(e) or "int_file_access_by_job" in str(e):
                    err.print(f"[red]{wh} has no marts.job_io_profile: run `tierlens transform` first[/red]")
                    raise typer.Exit(1) from e
                raise
            rid = store.write_efficiency(w.con, run) if write else None
        print_efficiency(run, rid)
        print_hardware(run)

    @export_app.command("trace")
    def export_trace(
        out: Annotated[Path, typer.Option("--out", "-o", help="Output file.")],
        fmt: Annotated[str, typer.Option("--format", help="oracleGeneral (libCacheSim binary).")] = "oracleGeneral",
        warehouse: WarehouseOpt = None,
        size_unit: Annotated[int, typer.Option(help="Write sizes in units of this many bytes (files over 4 GiB need > 1).")] = 1,
        server: Annotated[Optional[str], typer.Option(help="Only accesses to this server_host.")] = None,
        role: Annotated[Optional[str], typer.Option(help="Only accesses to servers of this role.")] = None,
        start: Annotated[Optional[str], typer.Option(help="Only accesses opened at or after this UTC time.")] = None,
        end: Annotated[Optional[str], typer.Option(help="Only accesses opened before this UTC time.")] = None,
    ) -> None:
        """Write the warehouse's file accesses as a cache trace for other simulators."""
        from . import trace as tr

        if fmt.lower() != "oraclegeneral":
            raise typer.BadParameter(f"unknown format {fmt!r}; supported: oracleGeneral")
        trace = _load_trace(warehouse, None, None, 1, server, role, start, end)
        try:
            n = tr.write_oracle(trace, out, size_unit)
        except ValueError as e:
            err.print(f"[red]{e}[/red]")
            raise typer.Exit(1) from e
        console.print(f"{out}: {n:,} requests, {trace.n_objects:,} objects (oracleGeneral, size unit {size_unit} B)")
