"""What the Airflow DAGs (dags/) call, by concern; none of it imports Airflow except airflow_glue.

    settings      the DAG settings (Variable, else TIERLENS_<NAME>, else default) and the paths,
                  dbt environment and cache configurations they resolve to, on top of config.Paths
    intervals     one report folder per data interval
    publish       the warehouse after the loads and around the transform, the published snapshot
    alerts        dbt's run results and the completeness alerts of the transform DAG
    report        the report DAG's task
    simulate      the simulate DAG's tasks
    tasks         every task function of the four above in one place (the loads are ingest/'s)
    airflow_glue  Variables, the raw Asset, timetables and default args for the DAG files

The names below are the ones scripts and tests reach for; the DAG files import the modules.
"""

from importlib import import_module

# Where each name lives. Loaded on first use: every Airflow task process parses its DAG file, which
# imports this package, and the synthetic site's modules alone took ~1.3 s of each such parse.
_HOME = {
    "synthetic_options": "..sources.synthetic.stored",
    "synthetic_site_files": "..sources.synthetic.stored",
    "interval_batches": "..ingest.intervals",
    "interval_folder": ".intervals",
    "SETTINGS": ".settings",
    "SOURCES": ".settings",
    "setting": ".settings",
    "settings_list": ".settings",
    "warehouse_path": ".settings",
    "source_options": ".settings",
    "build_report": ".report",
    "predict_efficiency": ".simulate",
    "simulate_caches": ".simulate",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOME[name], __name__), name)
