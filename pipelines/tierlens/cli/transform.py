"""`tierlens transform` (the dbt project) and `tierlens ab-uncertainty` (its Python model for other engines)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import paths
from .common import WarehouseOpt, console, err, fail, warehouse

app = typer.Typer()


@app.command()
def transform(
    warehouse_file: WarehouseOpt = None,
    target: Annotated[Optional[str], typer.Option(help="dbt target in dbt/profiles.yml: duckdb (default), spark, "
                                                       "spark_thrift.")] = None,
    lake: Annotated[Optional[Path], typer.Option(help="Read the raw sources from this Parquet lake "
                                                      "(needed by the spark targets).")] = None,
    project_dir: Annotated[Optional[Path], typer.Option(
        file_okay=False, exists=True, help="A site's own dbt project [default: $TIERLENS_DBT_PROJECT_DIR, "
                                           "else the one shipped with tierlens].")] = None,
) -> None:
    """Build the dbt project (staging → intermediate → marts) and run its tests."""
    if target and target.startswith("spark") and lake is None:
        fail("the spark targets read the Parquet lake: give --lake (tierlens lake export writes it)", 2)
    run_transform(warehouse(warehouse_file), paths().dbt_state, target=target, lake=lake, project_dir=project_dir)


def run_transform(wh: Path, state: Path, target: str | None = None, lake: Path | None = None,
                  project_dir: Path | None = None) -> None:
    """dbt build with a status line, its failures printed; publishes the snapshot readers open."""
    from ..transform import run_dbt

    with console.status("dbt build: staging → intermediate → marts, with tests"):
        try:
            result = run_dbt(wh, state, target=target, lake=lake, project_dir=project_dir,
                             spark_warehouse=state / "spark-warehouse" if target == "spark" else None)
        except (FileNotFoundError, ValueError) as e:
            fail(str(e), 2, e)
    if not result.success:
        for f in result.failures:
            err.print(f"[red]{f}[/red]")
        err.print(f"dbt logs: {state / 'logs'}")
        raise typer.Exit(1)
    console.print(f"dbt build: {result.models} models, {result.tests} tests, {result.seeds} seeds passed.")
    if target in (None, "duckdb"):
        from ..warehouse.publish import publish

        console.print(f"published for readers: {publish(wh)}", soft_wrap=True)


@app.command("ab-uncertainty")
def ab_uncertainty(
    marts: Annotated[Path, typer.Option(help="Folder holding the marts job_efficiency/ and cache_hourly/ as "
                                             "Parquet (e.g. <spark.sql.warehouse.dir>/marts.db).")],
    out: Annotated[Path, typer.Option(help="Parquet file to write marts.ab_uncertainty to.")],
    arm_a: Annotated[str, typer.Option(help="Arm A (dbt var arm_a).")] = "A",
    arm_b: Annotated[str, typer.Option(help="Arm B (dbt var arm_b).")] = "B",
    block: Annotated[str, typer.Option(help="Bootstrap block: hour or day (dbt var ab_block).")] = "hour",
    seed: Annotated[int, typer.Option(help="Random seed (dbt var ab_seed).")] = 42,
) -> None:
    """Build marts.ab_uncertainty from another engine's marts (Spark, Trino): the dbt Python model's twin."""
    from ..analysis.uncertainty import ABParams, ab_uncertainty as build
    from ..warehouse.lake import read_parquet_table, write_parquet_atomically

    try:
        params = ABParams(arm_a=arm_a, arm_b=arm_b, block=block, seed=seed)
        jobs = read_parquet_table(marts / "job_efficiency")
        cache = read_parquet_table(marts / "cache_hourly")
        table = build(jobs, cache, params)
        write_parquet_atomically(table, out)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e), 2, e)
    console.print(f"ab_uncertainty: {table.num_rows:,} rows -> {out}")
