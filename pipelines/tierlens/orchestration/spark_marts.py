"""After a build on a Spark target: the marts dbt-spark cannot build (dbt Python models run on
Spark only under Databricks), computed by their CLI twins from the marts the cluster wrote."""

from __future__ import annotations

from pathlib import Path

from .settings import Lookup, dbt_project_dir, python_marts_dir, spark_warehouse


def project_vars(project: Path) -> dict:
    """The vars of a dbt project's dbt_project.yml, as a run without --vars sees them."""
    import yaml

    path = project / "dbt_project.yml"
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: cannot read the project's vars: {e}") from e
    found = loaded.get("vars") or {}
    if not isinstance(found, dict):
        raise ValueError(f"{path}: vars is not a mapping")
    return found


def python_marts(lookup: Lookup = None) -> dict:
    """marts.ab_uncertainty from <spark_warehouse>/marts.db (the job_efficiency and cache_hourly
    the build just wrote), with the A/B parameters of the project's vars, written whole to
    <python_marts_dir>/ab_uncertainty.parquet; returns its rows and path."""
    from ..analysis.uncertainty import ab_params_from_vars, write_ab_uncertainty

    marts = spark_warehouse(lookup) / "marts.db"
    out = python_marts_dir(lookup) / "ab_uncertainty.parquet"
    params = ab_params_from_vars(project_vars(dbt_project_dir(lookup)))
    table = write_ab_uncertainty(marts, out, params)
    return {"ab_uncertainty": {"rows": table.num_rows, "path": str(out), "from": str(marts)}}
