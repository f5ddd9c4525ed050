"""dbt's saved parse of the project, kept once per host for every tierlens home to start from.

dbt saves its parse of the project (``target/partial_parse.msgpack``) and reuses it while the
project's files, the profile's connection, the vars and the environment variables the project
reads are what they were. Each tierlens home has its own target folder, so a home's first run (a
second warehouse, the demo, the bench's, every test's) parsed the whole project: about 15 s on
two cores, more than a small site's hourly build takes. The newest parse of each project is kept
here, per warehouse file name and dbt target, and a run whose home has no parse of its own starts
from it. dbt checks that copy as it checks its own, and parses whole whatever differs.

The profile names the warehouse by its file name, dbt running in the warehouse's folder
(transform.run_dbt): dbt hashes the connection into its saved parse, and the file name is the same
in every home. A parse made with ``--vars`` is not kept: a run without them would parse whole.

``$TIERLENS_DBT_PARSE_CACHE`` names the folder; empty or ``off`` keeps no shared parse. Default:
``$XDG_CACHE_HOME/tierlens/dbt-parse`` (``~/.cache/tierlens/dbt-parse``). Nothing here can fail a
run: a folder that cannot be read or written only means dbt parses the whole project.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

CACHE_VARIABLE = "TIERLENS_DBT_PARSE_CACHE"
#: the layout of the cache folder: one slot per key (below), dbt's file in it
FORMAT_VERSION = 1
PARSE_FILE = "partial_parse.msgpack"


def shared_parse_root() -> Path | None:
    """The host's cache of saved parses, or None when the setting turns it off."""
    value = os.environ.get(CACHE_VARIABLE)
    if value is not None:
        value = value.strip()
        return None if value in ("", "off") else Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "tierlens" / "dbt-parse"


def shared_slot(project_dir: Path, warehouse_name: str, target_name: str | None) -> Path | None:
    """The folder of the parse a run of ``project_dir`` on a warehouse file of that name starts from."""
    root = shared_parse_root()
    if root is None:
        return None
    key = {
        "format_version": FORMAT_VERSION,
        "project_dir": str(Path(project_dir).resolve()),
        "warehouse": warehouse_name,
        "target": target_name or "",
    }
    return root / hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def slot_for_run(
    project_dir: Path, warehouse_name: str, target_name: str | None, dbt_args: list[str] | tuple[str, ...]
) -> Path | None:
    """The shared slot of a dbt run with ``dbt_args``: none for a run with --vars, whose parse no
    plain run can use (it neither takes nor leaves the shared one)."""
    if any(a == "--vars" or a.startswith("--vars=") for a in dbt_args):
        return None
    return shared_slot(project_dir, warehouse_name, target_name)


def start_from_shared(target: Path, slot: Path | None) -> bool:
    """Copy the shared parse into ``target`` when it holds none of its own; True if it did."""
    if slot is None or (target / PARSE_FILE).exists():
        return False
    try:
        data = (slot / PARSE_FILE).read_bytes()
        target.mkdir(parents=True, exist_ok=True)
        _write_whole(target / PARSE_FILE, data)
    except OSError:
        return False
    return True


def share(target: Path, slot: Path | None) -> None:
    """Keep the run's saved parse as the newest of its slot (replaced whole: a reader never sees half)."""
    if slot is None:
        return
    try:
        data = (target / PARSE_FILE).read_bytes()
        slot.mkdir(parents=True, exist_ok=True)
        _write_whole(slot / PARSE_FILE, data)
    except OSError:
        return


def _write_whole(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    # root writes here: never through a symlink someone left in the folder
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
