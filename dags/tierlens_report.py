"""tierlens_report: the HTML + CSV report of the marts, weekly by default, optionally e-mailed.

Written to ``<report_dir>/<interval start>_<interval end>/`` (replaced on rerun), then sent to
the ``report_email`` recipients through Airflow's ``smtp_default`` connection when set.
Settings: dags/README.md.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException
from tierlens import orchestration


def _report_dir() -> Path:
    d = orchestration.dag_setting("report_dir")
    return Path(d).expanduser() if d else orchestration.tierlens_home(orchestration.airflow_var) / "reports"


@dag(dag_id="tierlens_report", schedule=orchestration.dag_timetable("report_schedule"), start_date=orchestration.dag_start_date(),
     catchup=orchestration.dag_catchup(), max_active_runs=1, default_args=orchestration.dag_default_args(), tags=["tierlens"],
     doc_md=__doc__)
def tierlens_report():
    @task
    def build(data_interval_start=None, data_interval_end=None) -> dict:
        out = orchestration.interval_folder(_report_dir(), data_interval_start, data_interval_end)
        return orchestration.build_report(orchestration.warehouse_path(orchestration.airflow_var), out)

    @task(pool="default_pool")
    def email(report: dict, data_interval_start=None, data_interval_end=None) -> list[str]:
        to = orchestration.settings_list("report_email", orchestration.airflow_var)
        if not to:
            raise AirflowSkipException("no report_email recipients configured")
        from airflow.providers.smtp.hooks.smtp import SmtpHook

        subject = (f"tierlens report {data_interval_start:%Y-%m-%d} to {data_interval_end:%Y-%m-%d}")
        html = Path(report["html"])
        with SmtpHook(smtp_conn_id="smtp_default") as hook:
            hook.send_email_smtp(to=to, subject=subject, html_content=html.read_text(), files=[str(html)])
        return to

    email(build())


tierlens_report()
