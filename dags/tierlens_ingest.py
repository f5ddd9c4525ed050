"""tierlens_ingest: each configured source loads the records of one data interval (hourly).

One task per source of sources/registry.py (synthetic, slurm, condor, xrootd); a source not
listed in the ``sources`` setting is skipped. A job belongs to the interval its end_time falls in
(file accesses likewise), and the warehouse upserts by natural key, so reruns and back-fills never
duplicate rows. These tasks do not take the writer pool: while a transform holds the warehouse, a
load lands its batches beside it and returns (tierlens_transform loads them first), so the ingest
never queues. When at least one source ran, ``publish`` updates the ``tierlens_raw`` Asset, which triggers
tierlens_transform. Settings: dags/README.md.
"""

from __future__ import annotations

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException

from tierlens.orchestration import airflow_glue as af, settings as cfg, tasks
from tierlens.sources import registry

var = af.airflow_var


def load_source(source: str, start, end) -> dict:
    """Load one source's records of [start, end) into the warehouse (skip when switched off)."""
    enabled = cfg.settings_list("sources", var)
    if source not in enabled:
        raise AirflowSkipException(f"source {source!r} is not in the sources setting {enabled}")
    entry = registry.source(source)
    # the source's options from its settings, then its interval load (ingest/<source>.py)
    return entry.interval_load()(cfg.warehouse_path(var), start, end, cfg.source_options(entry, var))


@dag(**af.dag_kwargs("tierlens_ingest", "ingest_schedule"), doc_md=__doc__)
def tierlens_ingest():
    loads = []
    for source in cfg.SOURCES:
        # not in the writer pool: while a transform holds the warehouse, the load lands its
        # batches (warehouse/landing.py) and returns, so the hourly ingest never queues
        @task(task_id=f"ingest_{source}", pool="default_pool")
        def load(source: str = source, data_interval_start=None, data_interval_end=None) -> dict:
            return load_source(source, data_interval_start, data_interval_end)

        loads.append(load())

    @task(outlets=[af.raw_asset()], trigger_rule="none_failed_min_one_success", pool="default_pool")
    def publish() -> dict:
        """Rows per raw table after this interval's loads; updates the tierlens_raw Asset.
        With a Spark dbt target (setting dbt_target) it first exports the Parquet lake Spark reads."""
        return tasks.publish(cfg.warehouse_path(var), var)

    loads >> publish()


tierlens_ingest()
