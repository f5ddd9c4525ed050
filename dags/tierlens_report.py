"""tierlens_report: the HTML + CSV report of the marts, weekly by default, optionally e-mailed.

Written to ``<report_dir>/<interval start>_<interval end>/`` (replaced on rerun), then sent to
the ``report_email`` recipients through Airflow's ``smtp_default`` connection when set.
Settings: dags/README.md.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException

from tierlens.orchestration import airflow_glue as af, settings as cfg, tasks
from tierlens.orchestration.intervals import interval_folder

var = af.airflow_var


@dag(**af.dag_kwargs("tierlens_report", "report_schedule"), doc_md=__doc__)
def tierlens_report():
    @task
    def build(data_interval_start=None, data_interval_end=None) -> dict:
        out = interval_folder(cfg.report_dir(var), data_interval_start, data_interval_end)
        return tasks.build_report(cfg.warehouse_path(var), out)

    @task(pool="default_pool")
    def email(report: dict, data_interval_start=None, data_interval_end=None) -> list[str]:
        to = cfg.settings_list("report_email", var)
        if not to:
            raise AirflowSkipException("no report_email recipients configured")
        from airflow.providers.smtp.hooks.smtp import SmtpHook

        subject = f"tierlens report {data_interval_start:%Y-%m-%d} to {data_interval_end:%Y-%m-%d}"
        html = Path(report["html"])
        with SmtpHook(smtp_conn_id="smtp_default") as hook:
            hook.send_email_smtp(to=to, subject=subject, html_content=html.read_text(), files=[str(html)])
        return to

    email(build())


tierlens_report()
