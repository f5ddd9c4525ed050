"""Airflow: the deployment's tierlens Variables, asked only where a deployment already is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .findings import Finding, Options, Status, given_but_missing, last_line, not_here, run


def check_airflow(opts: Options) -> list[Finding]:
    from ..orchestration.settings import SETTINGS

    exe = opts.airflow or shutil.which("airflow")
    if not exe:
        return not_here(
            "airflow",
            "no airflow on PATH",
            "on the Airflow host, give --airflow PATH (deploy/airflow/README.md) with its AIRFLOW_HOME set",
        )
    if opts.airflow is not None and not (Path(exe).is_file() and os.access(exe, os.X_OK)):
        return given_but_missing(
            "airflow",
            "variables",
            "airflow executable",
            exe,
            "give --airflow the airflow command of the deployment's virtualenv",
        )
    unset = _airflow_home_problem()
    if unset:
        # Named with --airflow, the admin meant it checked; merely on PATH, it may be no deployment.
        return [
            Finding(
                "airflow",
                "variables" if opts.airflow else "present",
                Status.WARN if opts.airflow else Status.INFO,
                f"not checked: {unset}",
                "export AIRFLOW_HOME=<the deployment's folder> (the one standalone.sh uses; "
                "deploy/airflow/README.md) and run doctor again",
            )
        ]
    try:
        proc = run([exe, "variables", "list", "-o", "json"], max(opts.timeout, 120))
    except (OSError, subprocess.TimeoutExpired) as e:
        return [Finding("airflow", "variables", Status.FAIL, f"{exe} variables list: {e}", "check AIRFLOW_HOME")]
    if proc.returncode != 0:
        return [
            Finding(
                "airflow",
                "variables",
                Status.FAIL,
                f"airflow variables list failed: {last_line(proc.stderr)}",
                "run airflow db migrate, with the AIRFLOW_HOME of the deployment",
            )
        ]
    try:
        keys = {v["key"] for v in json.loads(proc.stdout[proc.stdout.find("[") :] or "[]")}
    except (json.JSONDecodeError, KeyError, TypeError):
        return [
            Finding(
                "airflow",
                "variables",
                Status.FAIL,
                "airflow variables list printed no JSON list",
                f"run {exe} variables list -o json by hand with the deployment's AIRFLOW_HOME and see what it prints",
            )
        ]
    ours = sorted(k for k in keys if k.startswith("tierlens_"))
    unknown = [k for k in ours if k.removeprefix("tierlens_") not in SETTINGS]
    findings = [
        Finding(
            "airflow",
            "variables",
            Status.OK,
            f"{len(ours)} tierlens variables set ({', '.join(ours) or 'none: defaults and TIERLENS_* apply'})",
        )
    ]
    if unknown:
        findings.append(
            Finding(
                "airflow",
                "unknown variables",
                Status.WARN,
                f"ignored, not tierlens settings: {', '.join(unknown)}",
                "fix their names (dags/README.md lists the settings)",
            )
        )
    return findings


def _airflow_home_problem() -> str | None:
    """Why running ``airflow`` here would write to the host, or None. Airflow creates
    ``$AIRFLOW_HOME/airflow.cfg`` (default ``~/airflow``) and a SQLite database on its first command,
    and doctor promises to change nothing: it asks Airflow only where a deployment already is."""
    config = os.environ.get("AIRFLOW_CONFIG")
    if config:
        return None if Path(config).is_file() else f"$AIRFLOW_CONFIG names {config}, which does not exist"
    home = os.environ.get("AIRFLOW_HOME")
    if not home:
        return "AIRFLOW_HOME is not set: airflow would create ~/airflow to answer"
    if not (Path(home) / "airflow.cfg").is_file():
        return f"no airflow.cfg in $AIRFLOW_HOME ({home}): airflow would create one to answer"
    return None
