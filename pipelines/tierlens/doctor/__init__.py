"""`tierlens doctor`: what a site admin checks on a worker node, a submit/accounting host or the
analytics host, each finding with its fix.

Each check looks at one part (Slurm plugin, HTCondor tags, sacct, XRootD collector, warehouse,
dbt, Airflow) and applies only where that part is on the host: a worker node without a warehouse
is not a failure. Nothing here changes the host: files are read, the warehouse is opened
read-only, and the one job it may start (a test `srun`) runs only when asked for.

    findings   Finding, Status, Options and the steps every check shares
    slurm      the SPANK plugin and sacct
    condor     the startd cron's tags
    collector  the XRootD collector's stats
    warehouse  schema, permissions, transform and publish history
    dbt        the project and its executable
    airflow    the deployment's tierlens Variables
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict

from .airflow import check_airflow
from .collector import JOURNAL_BACKLOG_WARN_BYTES, STATS_STALE_SECONDS, check_collector
from .condor import check_htcondor
from .dbt import check_dbt
from .findings import Finding, Options, Status
from .slurm import DEFAULT_SLURM_CONF, check_sacct, check_slurm, data_parser, plugstack_lines
from .warehouse import check_warehouse

__all__ = [
    "CHECKS",
    "DEFAULT_SLURM_CONF",
    "JOURNAL_BACKLOG_WARN_BYTES",
    "STATS_STALE_SECONDS",
    "Finding",
    "Options",
    "Status",
    "check_airflow",
    "check_collector",
    "check_dbt",
    "check_htcondor",
    "check_sacct",
    "check_slurm",
    "check_warehouse",
    "data_parser",
    "failed",
    "plugstack_lines",
    "run_checks",
    "to_json",
]

CHECKS: tuple[Callable[[Options], list[Finding]], ...] = (
    check_slurm,
    check_sacct,
    check_htcondor,
    check_collector,
    check_warehouse,
    check_dbt,
    check_airflow,
)


def run_checks(opts: Options) -> list[Finding]:
    findings = []
    for check in CHECKS:
        try:
            findings.extend(check(opts))
        except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
            findings.append(
                Finding(
                    check.__name__.removeprefix("check_"),
                    "doctor",
                    Status.FAIL,
                    f"the check itself failed: {type(e).__name__}: {e}",
                    "check the files this part's option points at; if they are right, send this "
                    "line and `tierlens --version` to the tierlens developers",
                )
            )
    return findings


def failed(findings: list[Finding]) -> bool:
    return any(f.status is Status.FAIL for f in findings)


def to_json(findings: list[Finding]) -> str:
    return json.dumps(
        {"ok": not failed(findings), "findings": [{**asdict(f), "status": f.status.value} for f in findings]}, indent=1
    )
