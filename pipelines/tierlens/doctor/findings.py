"""What every check returns and takes, and the few steps they share."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class Status(str, Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    area: str
    check: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Options:
    """What doctor looks at; every default is what the host itself says."""

    slurm_conf: Path | None = None  # default $SLURM_CONF, else /etc/slurm/slurm.conf
    test_srun: bool = False  # submit one tiny job to see the plugin's variables
    srun_args: list[str] = field(default_factory=list)  # e.g. ["-p", "debug"]
    collector_stats: Path | None = None  # default $TIERLENS_HOME/spool/xrootd/collector-stats.json
    warehouse: Path | None = None  # default: the tierlens setting
    airflow: str | None = None  # the airflow executable; default: on PATH, if any
    timeout: float = 60.0


def not_here(area: str, why: str, fix: str) -> list[Finding]:
    """A part that is not on this host: said once, so the admin sees what was not checked, and
    what to pass or install to have it checked where it does belong."""
    return [Finding(area, "present", Status.INFO, f"not checked: {why}", fix)]


def given_but_missing(area: str, check: str, what: str, path: Path | str, fix: str) -> list[Finding]:
    """A path the admin named (an option or a TIERLENS_/SLURM_ variable) that is not there: a failure
    for every part alike, since doctor cannot check what it was pointed at."""
    return [Finding(area, check, Status.FAIL, f"no {what} at {path}", fix)]


def last_line(text: str) -> str:
    """The last non-empty line of a command's error output: the message, not the traceback above it."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no error output)"


def run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
