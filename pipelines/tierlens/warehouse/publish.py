"""The published snapshot: the warehouse as of the last transform, for readers.

DuckDB lets one process write a file, and other processes open it read-only only while nobody
writes; a person's read-only session on the working file would make the next hourly load fail,
and a load would make their query fail. So the pipeline keeps ``warehouse.duckdb`` to itself and,
after each transform, publishes a copy that readers open instead (``tierlens sql``, the report,
``duckdb -readonly``): ``published/warehouse.duckdb`` beside the working file.

The copy keeps the working file's name in its own folder because dbt-duckdb's views name their
catalog after the file (``"warehouse"."staging"...``). It is written under a temporary name in
that folder and renamed over the previous one: a reader that has the old one open keeps reading
it, undisturbed; the next open sees the new one.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from pathlib import Path

import duckdb

PUBLISHED_DIR = "published"


def published_path(warehouse: str | Path) -> Path:
    """Where the snapshot of ``warehouse`` is published."""
    w = Path(warehouse)
    return w.parent / PUBLISHED_DIR / w.name


def reader_path(warehouse: str | Path) -> Path:
    """The file a reader should open: the published snapshot, else (nothing published yet, or
    ``warehouse`` is itself a snapshot) ``warehouse``."""
    published = published_path(warehouse)
    return published if published.is_file() else Path(warehouse)


def publish(warehouse: str | Path) -> Path:
    """Copy ``warehouse`` to its published snapshot; returns the snapshot's path.

    Holds a writing connection on ``warehouse`` while copying, so no other process can change it
    mid-copy (a writer meets the lock, as with any other task), after a checkpoint has put every
    committed change in the file itself.
    """
    source = Path(warehouse)
    if not source.is_file():
        raise FileNotFoundError(f"no warehouse at {source} to publish")
    target = published_path(source)
    _make_folder(target.parent)
    con = duckdb.connect(str(source))
    try:
        con.execute("CHECKPOINT")
        _copy_atomically(source, target)
    finally:
        con.close()
    return target


def _make_folder(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        # a symlink here could send the copy anywhere the pipeline's user may write
        raise ValueError(f"{folder} is not a plain folder (a symlink?): refusing to publish into it")


def _copy_atomically(source: Path, target: Path) -> None:
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with open(source, "rb") as src, os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 22)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)  # replaces the name (a symlink too), never writes through it
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
