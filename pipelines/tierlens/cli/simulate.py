"""`tierlens simulate cache | efficiency`: replay accesses and predict configurations not deployed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..units import parse_bytes
from .common import FormatOpt, OutputFormat, WarehouseOpt, console, err, fail, parsed, print_rows, warehouse

app = typer.Typer(
    name="simulate",
    help="Replay file accesses through cache configurations you have not deployed.",
    no_args_is_help=True,
)


def load_trace(
    warehouse_file: Path | None,
    parquet: list[Path] | None,
    oracle: Path | None,
    size_unit: int,
    server: str | None,
    role: str | None,
    start: str | None,
    end: str | None,
):
    """The trace a command replays: an oracleGeneral file, Parquet files, or the warehouse."""
    from ..simulator import trace as tr

    if oracle is not None:
        return tr.read_oracle(oracle, size_unit)
    if parquet:
        return tr.from_parquet(list(parquet))
    from ..warehouse import Warehouse

    wh = warehouse(warehouse_file)
    if not wh.exists():
        raise typer.BadParameter(f"no warehouse at {wh}: load file accesses first, or pass --parquet/--oracle")
    with Warehouse(wh, read_only=True) as w:
        return tr.from_warehouse(w.con, server, role, start, end)


def _efficiency_from_marts(options, marts: Path, probes: list[Path] | None, out: Path | None) -> None:
    """`simulate efficiency --marts`: profiles from another engine's Parquet marts; results
    written to the warehouse ``out`` (created if needed) unless it is None."""
    from ..simulator import store, whatif
    from ..simulator.tables import print_efficiency, print_hardware
    from ..warehouse import Warehouse

    try:
        con = whatif.marts_connection(marts, probes)
        if (
            any(c.policy for c in options.caches)
            and not con.execute(
                "select count(*) from duckdb_views() where view_name = 'int_file_access_by_job'"
            ).fetchone()[0]
        ):
            raise ValueError(
                f"cache what-ifs replay int_file_access_by_job, and {marts.parent / 'intermediate.db'} "
                "has none: use --cache none"
            )
        with console.status("simulating") as status:
            run = whatif.run(con, options, progress=lambda m: status.update(m))
    except ValueError as e:
        fail(str(e), 1, e)
    rid = None
    if out is not None:
        with Warehouse(out) as w:
            rid = store.write_efficiency(w.con, run)
    print_efficiency(run, rid, console)
    print_hardware(run, console)


#: `simulate cache`'s result columns: byte figures in bytes and ratios as fractions in CSV and JSON,
#: in the table with their units (TB, %, s) so each column reads as one unit.
CACHE_COLUMNS = (
    "policy",
    "capacity",
    "hit_ratio",
    "byte_hit_ratio",
    "bytes_from_cache",
    "bytes_staged",
    "ssd_writes_per_day",
    "days_to_endurance",
    "peak_nic_utilisation",
    "replay_seconds",
)


def _cache_row(r, for_table: bool) -> tuple:
    """One run's results: exact values for CSV/JSON, with units where the table shows them."""
    from ..units import format_bytes

    util = r.hourly["nic_utilisation"].to_numpy()
    peak = float(util.max()) if len(util) else None
    days = r.extra.get("days_to_endurance")
    figures = (r.params.capacity_bytes, r.bytes_from_cache, r.bytes_staged, r.ssd_writes_per_day)
    capacity, from_cache, staged, writes = (format_bytes(b) for b in figures) if for_table else figures
    return (
        r.params.policy,
        capacity,
        float(r.hit_ratio),
        float(r.byte_hit_ratio),
        from_cache,
        staged,
        writes,
        float(days) if days else None,
        (f"{peak:.1%}" if for_table and peak is not None else peak),
        float(r.elapsed_s),
    )


@app.command("cache")
def cache(
    size: Annotated[
        list[str], typer.Option("--size", "-s", help="Cache capacity, e.g. 11TB or 500GiB; repeat for several.")
    ],
    policy: Annotated[
        list[str],
        typer.Option("--policy", "-p", help="lru, fifo, lfu, s3fifo, belady, slac1, slac2, slac3; repeat for several."),
    ] = ["lru"],  # noqa: B006
    warehouse_file: WarehouseOpt = None,
    parquet: Annotated[
        Optional[list[Path]],
        typer.Option(
            help="Read file_access records from Parquet instead of the warehouse.", exists=True, dir_okay=False
        ),
    ] = None,
    oracle: Annotated[
        Optional[Path],
        typer.Option(help="Read a libCacheSim oracleGeneral trace instead.", exists=True, dir_okay=False),
    ] = None,
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
    whole_object: Annotated[
        bool, typer.Option(help="Every access reads its whole file (libCacheSim semantics).")
    ] = False,
    nic_gbytes_per_s: Annotated[float, typer.Option(help="Cache NIC cap for the utilisation series, GB/s.")] = 2.5,
    ssd: Annotated[
        Optional[str], typer.Option(help="storage_catalog config_name for SSD wear [default: most enduring SSD/NVMe].")
    ] = None,
    mrc: Annotated[bool, typer.Option(help="Also write the LRU miss-ratio curve for 100 sizes (one pass).")] = False,
    write: Annotated[bool, typer.Option(help="Write runs to the warehouse (sim_cache_runs, sim_cache_hourly).")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print results as JSON lines.")] = False,
    fmt: FormatOpt = None,
) -> None:
    """Replay file accesses through byte-capacity caches and write the results to the warehouse."""
    from ..simulator import engine, store
    from ..warehouse import Warehouse

    trace = load_trace(warehouse_file, parquet, oracle, size_unit, server, role, start, end)
    if len(trace) == 0:
        where = trace.source or (str(oracle or "") or ", ".join(map(str, parquet or [])))
        chosen = ", ".join(
            f"{k} {v}" for k, v in (("server", server), ("role", role), ("start", start), ("end", end)) if v
        )
        err.print(
            f"no file accesses to replay: {where or 'the source'} holds none"
            + (f" that match {chosen}" if chosen else "")
            + " (load file accesses with `tierlens ingest`, or widen the selection)"
        )
        raise typer.Exit(1)
    results = []
    for s in size:
        for p in policy:
            try:
                params = engine.CacheParams(
                    p.lower(),
                    parse_bytes(s),
                    min_reads=min_reads,
                    stage_cap_pct=stage_cap_pct,
                    window_days=window_days,
                    upcoming_minutes=upcoming_minutes,
                    assumed_read_frac=assumed_read_frac,
                    whole_object=whole_object,
                    nic_bytes_per_s=nic_gbytes_per_s * 1e9,
                )
            except ValueError as e:
                raise typer.BadParameter(str(e)) from e
            results.append(engine.simulate(trace, params))
    curve = None
    if mrc:
        osize = engine.object_sizes(trace)
        curve = engine.mrc(trace, engine.log_sizes(int(osize.max()), int(osize.sum())), whole_object)
    ids = []
    if write:
        with Warehouse(warehouse(warehouse_file)) as w:
            ssd_row = store.catalog_ssd(w.con, ssd)
            for i, r in enumerate(results):
                ids.append(store.write_run(w.con, r, ssd_row, curve if i == 0 else None))
                r.extra.update(store.wear(r, ssd_row))
    fmt = fmt or OutputFormat.TABLE
    if as_json:
        for i, r in enumerate(results):
            console.print_json(json.dumps(dict(r.summary(), run_id=ids[i] if ids else None)))
        return
    print_rows(
        f"{len(trace):,} accesses, {trace.n_objects:,} files ({trace.source})",
        CACHE_COLUMNS,
        [_cache_row(r, fmt is OutputFormat.TABLE) for r in results],
        fmt,
    )
    if ids:  # on stderr under CSV or JSON, which stdout carries alone
        (console if fmt is OutputFormat.TABLE else err).print(
            f"written to {warehouse(warehouse_file)}: sim_cache_runs run_id {', '.join(ids)}"
            + (" (+ sim_cache_mrc)" if curve is not None else "")
        )


@app.command("efficiency")
def efficiency(
    job_class: Annotated[
        str, typer.Option(help="Job class to calibrate and predict ('all' for every class).")
    ] = "analysis",
    storage_type: Annotated[
        Optional[list[str]],
        typer.Option(
            "--storage-type", "-t", help="Storage type for the what-if grid; repeat [default: every measured type]."
        ),
    ] = None,
    jobs_per_node: Annotated[
        Optional[list[float]],
        typer.Option("--jobs-per-node", "-n", help="Jobs per node for the grid; repeat [default: 4, 8, 16]."),
    ] = None,
    cache: Annotated[
        Optional[list[str]],
        typer.Option("--cache", "-c", help="'none' or POLICY:SIZE (e.g. lru:50TB, slac2:6TB); repeat [default: none]."),
    ] = None,
    warehouse_file: WarehouseOpt = None,
    start: Annotated[Optional[str], typer.Option(help="Only jobs ending at or after this UTC time.")] = None,
    end: Annotated[Optional[str], typer.Option(help="Only jobs ending before this UTC time.")] = None,
    validate: Annotated[
        bool, typer.Option(help="Leave each measured configuration out in turn and predict it.")
    ] = True,
    write: Annotated[bool, typer.Option(help="Write the run to the warehouse (sim_efficiency_*).")] = True,
    candidates: Annotated[
        bool,
        typer.Option(
            help="Buying guide: price every storage_catalog configuration per delivered core-hour (sim_hardware_options, marts.hardware_options)."
        ),
    ] = False,
    marts: Annotated[
        Optional[Path],
        typer.Option(
            help="Read job_io_profile from this Parquet marts folder (e.g. <spark.sql.warehouse.dir>/marts.db) instead of the warehouse; results still go to --warehouse.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    probe: Annotated[
        Optional[list[Path]],
        typer.Option(
            help="With --marts: device_probe Parquet files (`tierlens probe storage --out`); repeat.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    node_catalog: Annotated[
        Optional[Path],
        typer.Option(
            help="With --candidates: CSV of worker nodes to price the storage in (config_name, cores, cpu_price, memory_gb, memory_price, chassis_price, watts, currency, source) [default: tierlens' stated estimates].",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    power_price: Annotated[
        float, typer.Option(help="With --candidates: electricity tariff, in the catalogue's currency per kWh.", min=0.0)
    ] = 0.25,
    service_years: Annotated[
        float, typer.Option(help="With --candidates: years a node is written off over.", min=0.1)
    ] = 5.0,
) -> None:
    """Predict CPU efficiency and throughput of configurations, calibrated on the measured jobs."""
    from ..simulator import hardware as hw, store, whatif
    from ..simulator.tables import print_efficiency, print_hardware
    from ..warehouse import Warehouse

    try:
        nodes = hw.read_node_catalog(node_catalog) if node_catalog else hw.DEFAULT_NODES
    except (OSError, ValueError) as e:
        fail(str(e), 2, e)
    options = whatif.EfficiencyOptions(
        job_class=None if job_class == "all" else job_class,
        storage_types=tuple(storage_type or ()),
        jobs_per_node=tuple(jobs_per_node or (4, 8, 16)),
        caches=tuple(parsed(whatif.CacheOption.parse, c, "--cache") for c in (cache or ["none"])),
        start=start,
        end=end,
        validate=validate,
        candidates=candidates,
        economics=hw.Economics(nodes, power_price, service_years),
    )
    wh = warehouse(warehouse_file)
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
            fail(str(e), 1, e)
        except Exception as e:  # noqa: BLE001 - the mart is missing until dbt has run
            if "job_io_profile" in str(e) or "int_file_access_by_job" in str(e):
                fail(f"{wh} has no marts.job_io_profile: run `tierlens transform` first", 1, e)
            raise
        replaced = write and store.efficiency_run_exists(w.con, run)
        rid = store.write_efficiency(w.con, run) if write else None
    print_efficiency(run, rid, console)
    print_hardware(run, console)
    if replaced:
        console.print(
            f"run {rid} had been written before from the same jobs, probes, catalogue and settings: "
            "its rows were replaced by identical ones"
        )
    if rid and candidates:
        _refresh_hardware_marts(wh)


def _refresh_hardware_marts(wh: Path) -> None:
    """Rebuild marts.hardware_options (and the other efficiency marts) so the buying guide shows
    this run; when dbt cannot run here, say which command does it."""
    from ..config import paths
    from ..transform import refresh_efficiency_marts

    try:
        with console.status("rebuilding marts.hardware_options"):
            refresh_efficiency_marts(wh, paths().dbt_state)
    except Exception as e:  # noqa: BLE001 - the run is written; only the marts wait for dbt
        err.print(
            f"the run is written, but marts.hardware_options could not be rebuilt ({e}); "
            f"run `tierlens transform -w {wh}` to show it"
        )
        return
    console.print("marts.hardware_options rebuilt: `tierlens sql cheapest_configuration_for_efficiency` ranks it")
