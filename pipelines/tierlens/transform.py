"""Run the dbt project (staging → intermediate → marts) against a warehouse file."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .config import DBT_PROJECT_DIR

# dbt phones home unless told not to; a site's batch nodes often have no way out anyway.
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "False")
os.environ.setdefault("DO_NOT_TRACK", "1")


@dataclass
class TransformResult:
    success: bool
    models: int = 0
    tests: int = 0
    seeds: int = 0
    failures: list[str] = field(default_factory=list)


@contextmanager
def _env(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_dbt(warehouse: Path, state_dir: Path, command: str = "build", extra: list[str] | None = None,
            project_dir: Path = DBT_PROJECT_DIR) -> TransformResult:
    """Invoke dbt in-process; the caller must have closed its own connections to ``warehouse``.

    dbt's target/ and logs/ go to ``state_dir`` so the source tree stays clean and read-only
    installs work.
    """
    from dbt.cli.main import dbtRunner  # heavy import, paid only when transforming

    state_dir.mkdir(parents=True, exist_ok=True)
    args = [command, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir),
            "--target-path", str(state_dir / "target"), "--log-path", str(state_dir / "logs"),
            "--quiet", *(extra or [])]
    with _env(TIERLENS_WAREHOUSE=str(Path(warehouse).resolve())):
        res = dbtRunner().invoke(args)
    result = TransformResult(success=bool(res.success))
    if res.exception is not None:
        result.failures.append(f"dbt {command}: {res.exception}")
    for node_result in getattr(res.result, "results", None) or []:
        node = node_result.node
        rtype = getattr(node, "resource_type", "")
        status = str(node_result.status).lower()
        if rtype == "model":
            result.models += 1
        elif rtype == "test":
            result.tests += 1
        elif rtype == "seed":
            result.seeds += 1
        if status in ("error", "fail", "runtimeerr"):
            result.failures.append(f"{rtype} {node.name}: {status}: {node_result.message}")
    return result
