"""The settings of the Airflow DAGs, and the places and dbt environment they resolve to.

Each setting is read by :func:`setting`: Airflow Variable ``tierlens_<name>`` when the DAG passes
a Variable lookup, else environment ``TIERLENS_<NAME>``, else the default. dags/README.md lists
every setting. Paths come from config.Paths of the configured home; a setting only overrides one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Optional

from .. import config
from ..resources import shipped
from ..sources import registry

#: How a DAG looks up an Airflow Variable (None: environment and defaults only).
Lookup = Optional[Callable[[str], Optional[str]]]

#: Sources the ingest DAG knows, in task order (sources/registry.py). Each is switched on by
#: listing it in ``TIERLENS_SOURCES`` (comma-separated).
SOURCES = tuple(s.name for s in registry.sources())

#: Every setting, its default and meaning: dags/README.md renders the same list.
SETTINGS: dict[str, tuple[str, str]] = {
    "home": ("", "tierlens home folder; default $TIERLENS_HOME, else ~/.local/share/tierlens"),
    "warehouse": ("", "DuckDB warehouse file; default <home>/warehouse.duckdb"),
    "sources": ("", f"comma-separated sources the ingest DAG loads: {', '.join(SOURCES)}"),
    "ingest_schedule": ("@hourly", "schedule of tierlens_ingest (cron or preset)"),
    "report_schedule": ("@weekly", "schedule of tierlens_report"),
    "simulate_schedule": ("@weekly", "schedule of tierlens_simulate"),
    "simulate_caches": (
        "",
        "cache configurations tierlens_simulate replays, policy:size comma-separated "
        "(e.g. lru:11TB,slac2:11TB); empty: the DAG skips",
    ),
    "simulate_role": ("", "replay only accesses to servers of this role (origin, cache); default all"),
    "simulate_efficiency": (
        "analysis",
        "job class tierlens_simulate predicts efficiency for ('all': every class); empty: no efficiency prediction",
    ),
    "efficiency_jobs_per_node": ("4,8,16", "jobs per node of the efficiency what-if grid, comma-separated"),
    "start_date": ("2026-10-01", "first data interval of the scheduled DAGs (UTC date)"),
    "catchup": ("false", "back-fill every interval since start_date when the DAG is switched on"),
    "raw_retention_months": (
        "0",
        "months of raw file accesses kept (before the newest one); older ones are "
        "deleted after a successful transform, the marts keep them. 0: keep all",
    ),
    "all_tests_every_hours": (
        "24",
        "hours between transforms that run every dbt test; the runs between leave out the column "
        "checks (not_null, accepted_range, accepted_values) and run the tests of keys, conserved "
        "rows, completeness and cross-mart sums. 0: every run runs every test",
    ),
    "pool": ("tierlens_warehouse", "Airflow pool (1 slot) serialising every task that writes the warehouse"),
    "dbt_executable": ("", "dbt binary (dbt-duckdb) for Cosmos; default the dbt beside this Python"),
    "dbt_project_dir": ("", "dbt project; default the one shipped with tierlens (dbt/ of a checkout)"),
    "dbt_target": (
        "duckdb",
        "dbt target (dbt/profiles.yml) the transform DAG builds: duckdb, spark (local "
        "session) or spark_thrift (a cluster, deploy/spark/README.md)",
    ),
    "lake": (
        "",
        "Parquet lake the spark targets read; the ingest DAG's publish task exports it for them; default <home>/lake",
    ),
    "spark_warehouse": (
        "",
        "spark.sql.warehouse.dir of the Spark targets (the session's; for spark_thrift the cluster's, "
        "as the Airflow worker sees it); default <home>/spark-warehouse",
    ),
    "python_marts_dir": (
        "",
        "folder where the transform DAG writes, on a Spark target, the marts dbt-spark cannot build "
        "(ab_uncertainty.parquet), from the marts under spark_warehouse; default <home>/python-marts",
    ),
    "dbt_select": (
        "",
        "dbt node selection rendered by Cosmos, comma-separated (e.g. +job_efficiency); default the whole project",
    ),
    "report_dir": ("", "folder of the weekly reports, one sub-folder per interval; default <home>/reports"),
    "report_email": ("", "comma-separated recipients; empty: no e-mail (uses Airflow's smtp_default)"),
    "task_timeout_minutes": ("60", "execution timeout of each task"),
    "retries": ("2", "retries per task"),
    "retry_delay_minutes": ("5", "delay between retries"),
    # each source's own settings (sources/registry.py)
    **{name: value for source in registry.sources() for name, value in source.settings.items()},
    # Completeness alerts of tierlens_transform (tests on marts.data_completeness, per day x subject)
    "completeness_min_cpu_hours_tagged": (
        "0.90",
        "warn when a cluster-day has a smaller share of CPU hours from plugin-tagged jobs",
    ),
    "completeness_min_bytes_joined": (
        "0.80",
        "warn when a server-day has a smaller share of bytes read joined to jobs",
    ),
    "completeness_max_kernel_drops": ("0", "warn when a collector-day has more datagrams dropped by the kernel"),
    "completeness_floor_cpu_hours_tagged": (
        "0.50",
        "fail the transform when a cluster-day's tagged CPU-hours share is below this hard floor",
    ),
    "completeness_floor_bytes_joined": (
        "0.30",
        "fail the transform when a server-day's joined bytes share is below this hard floor",
    ),
    "alert_email": (
        "",
        "comma-separated recipients of completeness warnings; empty: no e-mail (uses Airflow's smtp_default)",
    ),
}

#: The completeness settings and the environment variables the dbt tests read them from.
COMPLETENESS_SETTINGS = (
    "completeness_min_cpu_hours_tagged",
    "completeness_min_bytes_joined",
    "completeness_max_kernel_drops",
    "completeness_floor_cpu_hours_tagged",
    "completeness_floor_bytes_joined",
)


def setting(name: str, lookup: Lookup = None) -> str:
    """Airflow Variable ``tierlens_<name>`` (through ``lookup``), else ``TIERLENS_<NAME>``, else default."""
    if name not in SETTINGS:
        raise KeyError(f"unknown tierlens setting {name!r}")
    if lookup is not None:
        try:
            value = lookup(f"tierlens_{name}")
        except Exception:  # noqa: BLE001 - no metadata database reachable: fall back to environment
            value = None
        if value not in (None, ""):
            return str(value)
    return os.environ.get(f"TIERLENS_{name.upper()}", SETTINGS[name][0])


def settings_list(name: str, lookup: Lookup = None) -> list[str]:
    return [s.strip() for s in setting(name, lookup).split(",") if s.strip()]


def source_options(source: registry.Source, lookup: Lookup = None):
    """A source's options dataclass from its settings (``<source>_<field>``), each read as the
    type of the field's default: a tuple comma-separated, a number as a number. A field whose
    metadata names ``or_setting`` falls back to that setting when empty; one naming a
    ``home_folder`` is that folder of the configured home (config.Paths)."""
    cls = source.options_class()
    values: dict[str, object] = {}
    for f in fields(cls):
        if "home_folder" in f.metadata:
            values[f.name] = str(getattr(paths(lookup), f.metadata["home_folder"]))
        if "meaning" not in f.metadata:
            continue
        name = f"{source.name}_{f.name}"
        text = setting(name, lookup) or (
            setting(f.metadata["or_setting"], lookup) if "or_setting" in f.metadata else ""
        )
        values[f.name] = _typed(text, f.default, name)
    return cls(**values)


def _typed(text: str, default: object, name: str) -> object:
    if isinstance(default, tuple):
        return tuple(s.strip() for s in text.split(",") if s.strip())
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return type(default)(text or 0)
        except ValueError as e:
            raise ValueError(f"setting {name} must be a number, not {text!r}") from e
    return text


def _path(name: str, default: Path, lookup: Lookup) -> Path:
    value = setting(name, lookup)
    return Path(value).expanduser() if value else default


def paths(lookup: Lookup = None) -> config.Paths:
    """The layout under the configured home (setting ``home``, else config's)."""
    home = setting("home", lookup)
    return config.Paths(Path(home).expanduser()) if home else config.paths()


def warehouse_path(lookup: Lookup = None) -> Path:
    return _path("warehouse", paths(lookup).warehouse, lookup)


def lake_path(lookup: Lookup = None) -> Path:
    return _path("lake", paths(lookup).lake, lookup)


def report_dir(lookup: Lookup = None) -> Path:
    return _path("report_dir", paths(lookup).reports, lookup)


def spark_warehouse(lookup: Lookup = None) -> Path:
    return _path("spark_warehouse", paths(lookup).spark_warehouse, lookup)


def python_marts_dir(lookup: Lookup = None) -> Path:
    return _path("python_marts_dir", paths(lookup).python_marts, lookup)


def dbt_project_dir(lookup: Lookup = None) -> Path:
    return _path("dbt_project_dir", shipped("dbt"), lookup)


def dbt_executable(lookup: Lookup = None) -> str:
    exe = setting("dbt_executable", lookup)
    if exe:
        return exe
    from ..transform import _dbt_executable

    return _dbt_executable()[0]


DBT_TARGETS = ("duckdb", "spark", "spark_thrift")


def dbt_target(lookup: Lookup = None) -> str:
    """The profiles.yml target the transform DAG builds; a clear error for an unknown one."""
    target = setting("dbt_target", lookup).strip() or "duckdb"
    if target not in DBT_TARGETS:
        raise ValueError(f"dbt_target {target!r} is not one of {', '.join(DBT_TARGETS)} (dbt/profiles.yml)")
    return target


def dbt_env(lookup: Lookup = None) -> dict[str, str]:
    """Environment of the dbt subprocesses: the warehouse, and for the Spark targets the lake."""
    env = {
        "TIERLENS_WAREHOUSE": str(warehouse_path(lookup).resolve()),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "False",
        "DO_NOT_TRACK": "1",
    }
    env.update(completeness_env(lookup))
    if dbt_target(lookup) != "duckdb":
        env["TIERLENS_LAKE"] = str(lake_path(lookup).resolve())
        env["TIERLENS_SPARK_WAREHOUSE"] = str(spark_warehouse(lookup).resolve())
    return env


def completeness_env(lookup: Lookup = None) -> dict[str, str]:
    """TIERLENS_COMPLETENESS_* for the dbt tests on marts.data_completeness, each a checked number."""
    env = {}
    for name in COMPLETENESS_SETTINGS:
        value = setting(name, lookup)
        try:
            float(value)
        except ValueError as e:
            raise ValueError(f"setting {name} must be a number, not {value!r}") from e
        env[f"TIERLENS_{name.upper()}"] = value
    return env


def cache_configs(lookup: Lookup = None) -> list:
    """The ``simulate_caches`` setting, ``policy:size`` comma-separated (e.g. lru:11TB,slac2:11TB), as
    simulator.whatif.CacheOption values; ValueError naming a bad one."""
    from ..simulator.whatif import CacheOption

    return [CacheOption.parse(item, allow_none=False) for item in settings_list("simulate_caches", lookup)]
