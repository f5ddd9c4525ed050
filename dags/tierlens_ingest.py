"""tierlens_ingest: each configured source loads the records of one data interval (hourly).

One task per source (synthetic, slurm, condor, xrootd); a source not listed in the ``sources``
setting is skipped. A job belongs to the interval its end_time falls in (file accesses likewise),
and the warehouse upserts by natural key, so reruns and back-fills never duplicate rows. When at
least one source ran, ``publish`` updates the ``tierlens_raw`` Asset, which triggers
tierlens_transform. Settings: dags/README.md.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException
from tierlens import orchestration as tl

var = tl.airflow_var


def _paths(name: str) -> list[Path]:
    return [Path(p).expanduser() for p in tl.settings_list(name, var)]


def load_source(source: str, start, end) -> dict:
    """Load one source's records of [start, end) into the warehouse (skip when switched off)."""
    enabled = tl.settings_list("sources", var)
    if source not in enabled:
        raise AirflowSkipException(f"source {source!r} is not in the sources setting {enabled}")
    wh = tl.warehouse_path(var)
    s = tl.dag_setting
    if source == "synthetic":
        opts = tl.synthetic_options(s("synthetic_start"), float(s("synthetic_days")), int(s("synthetic_seed")),
                                    int(s("synthetic_nodes_per_type")))
        return tl.ingest_synthetic(wh, start, end, opts, tl.tierlens_home(var) / "synthetic")
    if source == "slurm":
        return tl.ingest_slurm(wh, start, end, sacct=s("slurm_sacct"), clusters=s("slurm_clusters") or None,
                               spool_dirs=_paths("slurm_spool"))
    if source == "condor":
        return tl.ingest_condor(wh, start, end, _paths("condor_history"), s("condor_cluster"))
    if source == "xrootd":
        if not s("xrootd_dir"):
            raise ValueError("xrootd source: set TIERLENS_XROOTD_DIR (the collector's output folder)")
        return tl.ingest_xrootd(wh, start, end, Path(s("xrootd_dir")).expanduser())
    raise ValueError(f"unknown source {source!r}")


@dag(dag_id="tierlens_ingest", schedule=tl.dag_timetable("ingest_schedule"), start_date=tl.dag_start_date(),
     catchup=tl.dag_catchup(), max_active_runs=1, default_args=tl.dag_default_args(), tags=["tierlens"],
     doc_md=__doc__)
def tierlens_ingest():
    loads = []
    for source in tl.SOURCES:
        @task(task_id=f"ingest_{source}")
        def load(source: str = source, data_interval_start=None, data_interval_end=None) -> dict:
            return load_source(source, data_interval_start, data_interval_end)

        loads.append(load())

    @task(outlets=[tl.raw_asset()], trigger_rule="none_failed_min_one_success")
    def publish() -> dict:
        """Rows per raw table after this interval's loads; updates the tierlens_raw Asset.
        With a Spark dbt target (setting dbt_target) it first exports the Parquet lake Spark reads."""
        return tl.publish(tl.warehouse_path(var), var)

    loads >> publish()


tierlens_ingest()
