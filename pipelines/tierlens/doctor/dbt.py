"""dbt: the project and the executable the transform runs."""

from __future__ import annotations

from .findings import Finding, Options, Status


def check_dbt(opts: Options) -> list[Finding]:
    from ..resources import ResourceMissing, dbt_project_dir
    from ..transform import _dbt_executable

    try:
        project = dbt_project_dir()
    except ResourceMissing as e:
        return [Finding("dbt", "project", Status.FAIL, str(e), "reinstall the tierlens wheel")]
    if not (project / "dbt_project.yml").is_file():
        return [
            Finding(
                "dbt",
                "project",
                Status.FAIL,
                f"no dbt_project.yml in {project}",
                "unset TIERLENS_DBT_PROJECT_DIR or point it at a dbt project",
            )
        ]
    findings = [Finding("dbt", "project", Status.OK, str(project))]
    try:
        findings.append(Finding("dbt", "executable", Status.OK, _dbt_executable()[0]))
    except FileNotFoundError as e:
        findings.append(Finding("dbt", "executable", Status.FAIL, str(e), "pip install 'dbt-duckdb<1.12'"))
    return findings
