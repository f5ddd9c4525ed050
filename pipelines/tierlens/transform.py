"""Run the dbt project (staging → intermediate → marts) against a warehouse file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .resources import dbt_project_dir

# dbt phones home unless told not to; a site's batch nodes often have no way out anyway.
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
os.environ.setdefault("DO_NOT_TRACK", "1")


@dataclass
class TransformResult:
    success: bool
    models: int = 0
    tests: int = 0
    seeds: int = 0
    failures: list[str] = field(default_factory=list)


def _dbt_executable() -> list[str]:
    """dbt from the same environment as tierlens, whichever virtualenv that is."""
    beside = Path(sys.executable).parent / "dbt"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("dbt")
    if found:
        return [found]
    raise FileNotFoundError("dbt is not installed beside tierlens: pip install 'dbt-duckdb<1.12'")


def run_dbt(warehouse: Path, state_dir: Path, command: str = "build", extra: list[str] | None = None,
            project_dir: Path | None = None, target: str | None = None, lake: Path | None = None,
            spark_warehouse: Path | None = None) -> TransformResult:
    """Run dbt in a child process; the caller must have closed its own connections to ``warehouse``.

    A child process, not dbt's in-process runner: dbt-duckdb keeps its DuckDB connection open for
    the life of the process, which would lock the warehouse against the report that follows.
    dbt's target/ and logs/ go to ``state_dir`` so the source tree stays clean.

    ``target`` picks a profiles.yml output (duckdb, spark, spark_thrift; default: the profile's).
    ``lake`` makes the raw sources the Parquet lake instead of the warehouse's raw tables (the
    spark targets need one). ``spark_warehouse`` is where the spark session target keeps its tables.
    ``project_dir``: a site's own dbt project; default ``$TIERLENS_DBT_PROJECT_DIR``, else the shipped one.
    """
    project_dir = project_dir or dbt_project_dir()
    target_name = target
    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / "target"
    args = [*_dbt_executable(), command, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir),
            "--target-path", str(target), "--log-path", str(state_dir / "logs"), *(extra or [])]
    if target_name:
        args += ["--target", target_name]
    env = dict(os.environ, TIERLENS_WAREHOUSE=str(Path(warehouse).resolve()))
    if lake is not None:
        env["TIERLENS_LAKE"] = str(_lake_dir(lake))
    if spark_warehouse is not None:
        env["TIERLENS_SPARK_WAREHOUSE"] = str(Path(spark_warehouse).resolve())
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    result = TransformResult(success=proc.returncode == 0)
    run_results = target / "run_results.json"
    if run_results.exists():
        for r in json.loads(run_results.read_text()).get("results", []):
            rtype = r["unique_id"].split(".", 1)[0]
            if rtype == "model":
                result.models += 1
            elif rtype == "test":
                result.tests += 1
            elif rtype == "seed":
                result.seeds += 1
            if r["status"] in ("error", "fail", "runtime error"):
                result.failures.append(f"{r['unique_id']}: {r['status']}: {r.get('message')}")
    if not result.success and not result.failures:
        result.failures.append(f"dbt {command} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return result


def _lake_dir(lake: Path) -> Path:
    """The lake as an absolute path dbt can put into SQL, or a clear error before dbt starts."""
    path = Path(lake).resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no Parquet lake at {lake}: write one with `tierlens lake export`")
    if "'" in str(path) or "\\" in str(path):
        raise ValueError(f"the lake path {path} must not contain quotes or backslashes (it goes into SQL)")
    return path


#: The models that read the simulator's efficiency tables, from staging to the marts.
EFFICIENCY_MODELS = ("stg_sim_efficiency_runs", "stg_sim_efficiency_predictions", "int_latest_efficiency_predictions+",
                     "stg_sim_hardware_options+", "stg_sim_efficiency_type_loo+")


def refresh_efficiency_marts(warehouse: Path, state_dir: Path) -> None:
    """Rebuild (and test) the models over the simulator's efficiency tables after a new run, so
    the marts comparing measured and predicted show it without a whole dbt build."""
    result = run_dbt(Path(warehouse), state_dir, "build", ["--select", *EFFICIENCY_MODELS])
    if not result.success:
        raise RuntimeError("dbt build of the efficiency marts failed: " + "; ".join(result.failures))
    from .warehouse.publish import publish

    publish(Path(warehouse))

