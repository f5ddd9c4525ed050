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
from tierlens import orchestration as tl

var = tl.airflow_var


@dag(dag_id="tierlens_simulate", schedule=tl.dag_timetable("simulate_schedule"), start_date=tl.dag_start_date(),
     catchup=tl.dag_catchup(), max_active_runs=1, default_args=tl.dag_default_args(), tags=["tierlens"],
     doc_md=__doc__)
def tierlens_simulate():
    @task
    def replay_caches(data_interval_start=None, data_interval_end=None) -> dict:
        configs = tl.parse_cache_configs(tl.dag_setting("simulate_caches"))
        if not configs:
            raise AirflowSkipException("no cache configurations in the simulate_caches setting")
        return tl.simulate_caches(tl.warehouse_path(var), data_interval_start, data_interval_end, configs,
                                  role=tl.dag_setting("simulate_role") or None)

    @task
    def predict_efficiency(data_interval_start=None, data_interval_end=None) -> dict:
        job_class = tl.dag_setting("simulate_efficiency").strip()
        if not job_class:
            raise AirflowSkipException("simulate_efficiency is empty: no efficiency prediction")
        per_node = [float(x) for x in tl.dag_setting("efficiency_jobs_per_node").split(",") if x.strip()]
        try:
            return tl.predict_efficiency(tl.warehouse_path(var), data_interval_start, data_interval_end, job_class,
                                         per_node, tl.parse_cache_configs(tl.dag_setting("simulate_caches")))
        except tl.MartsMissing as e:
            raise AirflowSkipException(str(e)) from e

    replay_caches()
    predict_efficiency()


tierlens_simulate()
