"""Build times of the dbt marts on DuckDB and on local Spark at 1x, 10x (and 100x) the demo's data.

    .venv/bin/python bench/spark_bench.py                 # 1x and 10x
    .venv/bin/python bench/spark_bench.py --scales 1 10 100 --spark-memory 8g

1x is the demo's site (`tierlens demo`: 30 days, 2 worker nodes per storage type). Larger scales
are that site copied k times as k sites of a grid (cluster, node, server and client hosts, job ids
and identities renamed per copy), which is what a national grid's or WLCG-wide accounting looks
like: the same kind of site, many times. Every copy is exported to one Parquet lake; both engines
then build every model (seed and models, no tests: `dbt build --exclude-resource-type test`)
from that lake, each in a dbt child process of its own:

* DuckDB: dbt-duckdb into a fresh DuckDB file (threads 1, as shipped);
* Spark: dbt-spark's session target, local[2] (the machine's two cores), driver memory --spark-memory.

Peak memory is the largest resident set of the dbt process tree (dbt and, for Spark, its JVM),
sampled every 0.2 s from /proc. Not part of `make test`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from proctree import PeakSampler  # bench/, beside this script

ROOT = Path(__file__).resolve().parents[1]
DBT = Path(sys.executable).parent / "dbt"
DEMO_DAYS, DEMO_NODES, DEMO_SEED = 30.0, 2, 42

# k copies of a raw table: every name that identifies a site's thing gets the copy's prefix, so
# the copies never join to each other (exact identities, inferred host matches, node configs).
COPY_SQL = {
    "raw_job": """select * replace (
        cluster || '-' || k as cluster, job_id || '-' || k as job_id,
        job_identity || '-' || k as job_identity, 's' || k || '-' || node as node,
        regexp_replace(node_list, '(^|,)', '\\1s' || k || '-', 'g') as node_list)""",
    "raw_job_tag": """select * replace (
        cluster || '-' || k as cluster, job_id || '-' || k as job_id, 's' || k || '-' || node as node)""",
    "raw_node": """select * replace (cluster || '-' || k as cluster, 's' || k || '-' || node as node)""",
    "raw_file_access": """select * replace (
        's' || k || '-' || server_host as server_host, job_identity || '-' || k as job_identity,
        's' || k || '-' || client_host as client_host, file_lfn || '-' || k as file_lfn)""",
}


def make_site(work: Path) -> Path:
    """The demo's site, generated and ingested once into a DuckDB file."""
    from tierlens.pipeline import ingest
    from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate

    source = work / "demo.duckdb"
    if not source.exists():
        opts = SyntheticOptions(days=DEMO_DAYS, seed=DEMO_SEED, site=demo_site(nodes_per_type=DEMO_NODES))
        ingest(generate(opts), source)
    return source


def make_lake(source: Path, scale: int, work: Path) -> tuple[Path, dict[str, int]]:
    """A warehouse of ``scale`` copies of the site, exported as the lake."""
    from tierlens.warehouse import export_lake

    if scale == 1:
        lake = work / "lake-1x"
        return lake, export_lake(source, lake)
    scaled = work / f"site-{scale}x.duckdb"
    scaled.unlink(missing_ok=True)
    con = duckdb.connect(str(scaled))
    try:
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"attach '{source}' as src (read_only)")
        for (table,) in con.execute(
            "select table_name from duckdb_tables() where database_name = 'src' and schema_name = 'main'"
        ).fetchall():
            if table in COPY_SQL:
                con.execute(
                    f"create table main.{table} as {COPY_SQL[table]} from src.main.{table}, "
                    f"(select cast(range as varchar) as k from range({scale})) as copies"
                )
            else:
                con.execute(f"create table main.{table} as select * from src.main.{table}")
    finally:
        con.close()
    lake = work / f"lake-{scale}x"
    counts = export_lake(scaled, lake)
    scaled.unlink()
    return lake, counts


def run_dbt(target: str, lake: Path, work: Path, spark_memory: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one dbt build of every model from ``lake``."""
    state = work / f"dbt-{target}"
    shutil.rmtree(state, ignore_errors=True)
    env = dict(
        os.environ,
        TIERLENS_LAKE=str(lake),
        TIERLENS_WAREHOUSE=str(state / "marts.duckdb"),
        TIERLENS_SPARK_WAREHOUSE=str(state / "spark-warehouse"),
        TIERLENS_SPARK_DRIVER_MEMORY=spark_memory,
        DBT_SEND_ANONYMOUS_USAGE_STATS="False",
        DO_NOT_TRACK="1",
    )
    state.mkdir(parents=True)
    argv = [
        str(DBT),
        "build",
        "--exclude-resource-type",
        "test",
        "--exclude-resource-type",
        "unit_test",
        "--target",
        target,
        "--project-dir",
        str(ROOT / "dbt"),
        "--profiles-dir",
        str(ROOT / "dbt"),
        "--target-path",
        str(state / "target"),
        "--log-path",
        str(state / "logs"),
    ]
    with open(state / "out.log", "w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=state)
        with PeakSampler(proc, every=0.2) as sampled:
            code = proc.wait()
        wall = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"dbt build --target {target} failed ({code}): see {state / 'out.log'}")
    return wall, sampled.peak_mib


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--engines", nargs="+", default=["duckdb", "spark"], choices=["duckdb", "spark"])
    ap.add_argument("--spark-memory", default="4g", help="spark.driver.memory (local mode: all of Spark)")
    ap.add_argument("--work", type=Path, default=None, help="work folder (kept); default a temporary one")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tierlens-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    source = make_site(work)
    print(f"demo site generated and ingested in {time.perf_counter() - t0:.0f} s ({work})", flush=True)
    print("| scale | job rows | file_access rows | lake MiB | engine | build (s) | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---|---:|---:|", flush=True)
    for scale in args.scales:
        lake, counts = make_lake(source, scale, work)
        size = sum(f.stat().st_size for f in lake.rglob("*.parquet")) / 2**20
        for engine in args.engines:
            wall, peak = run_dbt(engine, lake, work, args.spark_memory)
            print(
                f"| {scale}x | {counts['raw_job']:,} | {counts['raw_file_access']:,} | {size:,.0f} | {engine} "
                f"| {wall:.1f} | {peak:,.0f} |",
                flush=True,
            )
        shutil.rmtree(lake)


if __name__ == "__main__":
    main()
