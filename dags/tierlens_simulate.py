"""tierlens_simulate: replay the week's file accesses through cache configurations not deployed,
and predict the efficiency of configurations not deployed.

Weekly by default. For each ``policy:size`` in the ``simulate_caches`` setting, the accesses
opened in the data interval are replayed by ``tierlens.simulator`` and the run is written to the
warehouse (sim_cache_runs, sim_cache_hourly); a run's id hashes its parameters and its trace, so
a rerun or back-fill replaces rows and never adds. The efficiency model is calibrated on the jobs
that ended in the interval (job class from ``simulate_efficiency``), predicts storage type x
``efficiency_jobs_per_node`` x (no cache and each cache configuration), writes the predictions
beside the measurements and rebuilds the marts that compare them. Settings: dags/README.md.
"""

from __future__ import annotations

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException

from tierlens.orchestration import airflow_glue as af, settings as cfg, tasks

var = af.airflow_var


@dag(**af.dag_kwargs("tierlens_simulate", "simulate_schedule"), doc_md=__doc__)
def tierlens_simulate():
    @task
    def replay_caches(data_interval_start=None, data_interval_end=None) -> dict:
        caches = cfg.cache_configs(var)
        if not caches:
            raise AirflowSkipException("no cache configurations in the simulate_caches setting")
        return tasks.simulate_caches(
            cfg.warehouse_path(var),
            data_interval_start,
            data_interval_end,
            caches,
            role=af.dag_setting("simulate_role") or None,
        )

    @task
    def predict_efficiency(data_interval_start=None, data_interval_end=None) -> dict:
        job_class = af.dag_setting("simulate_efficiency").strip()
        if not job_class:
            raise AirflowSkipException("simulate_efficiency is empty: no efficiency prediction")
        per_node = [float(x) for x in cfg.settings_list("efficiency_jobs_per_node", var)]
        try:
            return tasks.predict_efficiency(
                cfg.warehouse_path(var),
                data_interval_start,
                data_interval_end,
                job_class,
                per_node,
                cfg.cache_configs(var),
            )
        except tasks.MartsMissing as e:
            raise AirflowSkipException(str(e)) from e

    replay_caches()
    predict_efficiency()


tierlens_simulate()
