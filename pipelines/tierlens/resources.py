"""The files tierlens ships beside its code: the dbt project, the sql/ queries, the startd cron script.

In a git clone they live where readers look for them (``dbt/``, ``sql/``, ``plugins/htcondor/`` at
the top of the repository). A wheel or sdist build copies them into the package as
``tierlens/_bundled/`` (setup.py's build step), so an installed tierlens finds them through
importlib.resources with no clone. An editable install (``pip install -e``) builds nothing into
the package, so the clone's folders are used: the lookup tries the package first, then the clone.

A site adds its own models by pointing ``TIERLENS_DBT_PROJECT_DIR`` (or ``tierlens transform
--project-dir``, or the Airflow variable ``tierlens_dbt_project_dir``) at its own dbt project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

BUNDLE = "_bundled"
#: The clone's top folder, when tierlens runs from one (pipelines/tierlens/ → the root).
_CLONE_ROOT = Path(__file__).resolve().parents[2]


class ResourceMissing(FileNotFoundError):
    """A shipped file is in neither the installed package nor a clone: a broken install."""


def _bundled_root() -> Path | None:
    bundle = files("tierlens") / BUNDLE
    # dbt needs real paths: a wheel installs plain files, so the traversable is a pathlib.Path
    # (a zip import would not be, and is not supported).
    if not isinstance(bundle, Path) or not bundle.is_dir():
        return None
    return bundle


def locate(relative: str) -> Path:
    """Where a shipped folder or file is (bundled copy first, then the clone), whether or not it exists."""
    bundled = _bundled_root()
    if bundled is not None and (bundled / relative).exists():
        return bundled / relative
    return _CLONE_ROOT / relative


def shipped(relative: str) -> Path:
    """The path of a shipped folder or file, e.g. ``"dbt"``, ``"sql"``, or a clear error when it is missing."""
    found = locate(relative)
    if found.exists():
        return found
    bundled = _bundled_root()
    where = f"{bundled} or {_CLONE_ROOT}" if bundled else str(_CLONE_ROOT)
    raise ResourceMissing(
        f"tierlens cannot find its {relative!r} (looked in {where}): reinstall the tierlens "
        "wheel, or run from a complete git clone"
    )


def dbt_project_dir() -> Path:
    """The dbt project to run: ``$TIERLENS_DBT_PROJECT_DIR`` when a site set one, else the shipped project."""
    own = os.environ.get("TIERLENS_DBT_PROJECT_DIR")
    if own:
        return Path(own).expanduser()
    return shipped("dbt")


def sql_dir() -> Path:
    return shipped("sql")


@dataclass(frozen=True)
class BundledQuery:
    name: str  # the file name without .sql, what `tierlens sql NAME` takes
    path: Path
    question: str  # the first comment line, without "-- Question:"


def question_of(text: str) -> str:
    """A query's question: its first ``--`` comment line, with the ``Question:`` label dropped."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            q = stripped[2:].strip()
            return q.split(":", 1)[1].strip() if q.lower().startswith("question:") else q
        if stripped:
            break
    return ""


def bundled_queries() -> list[BundledQuery]:
    return [BundledQuery(p.stem, p, question_of(p.read_text())) for p in sorted(sql_dir().glob("*.sql"))]


def find_query(name: str) -> Path:
    """A query by its bundled name (``efficiency_by_storage_type`` or ``efficiency_by_storage_type.sql``)
    or, when ``name`` is an existing file, that file."""
    given = Path(name).expanduser()
    if given.is_file():
        return given
    stem = name[:-4] if name.endswith(".sql") else name
    candidate = sql_dir() / f"{stem}.sql"
    if "/" not in stem and candidate.is_file():
        return candidate
    known = ", ".join(q.name for q in bundled_queries())
    raise FileNotFoundError(
        f"no file {name!r} and no bundled query of that name; bundled queries: {known} "
        "(`tierlens sql --list` shows their questions)"
    )
