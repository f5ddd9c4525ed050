"""What the Airflow DAGs (dags/) call, by concern; none of it imports Airflow except airflow_glue.

    settings      the DAG settings (Variable, else TIERLENS_<NAME>, else default) and the paths,
                  dbt environment and cache configurations they resolve to, on top of config.Paths
    intervals     selecting one data interval's rows (what makes every task idempotent)
    tasks         one function per task: each source's batches() cut to the interval, publish,
                  report, alerts, the simulator
    airflow_glue  Variables, the raw Asset, timetables and default args for the DAG files

The names below are the ones scripts and tests reach for; the DAG files import the modules.
"""

from ..sources.synthetic.stored import synthetic_options, synthetic_site_files
from .intervals import interval_batches, interval_folder
from .settings import SETTINGS, SOURCES, setting, settings_list, warehouse_path
from .tasks import (build_report, ingest_condor, ingest_slurm, ingest_synthetic, ingest_xrootd, predict_efficiency,
                    simulate_caches)

__all__ = ["SETTINGS", "SOURCES", "build_report", "ingest_condor", "ingest_slurm", "ingest_synthetic",
           "ingest_xrootd", "interval_batches", "interval_folder", "predict_efficiency", "setting", "settings_list",
           "simulate_caches", "synthetic_options", "synthetic_site_files", "warehouse_path"]
