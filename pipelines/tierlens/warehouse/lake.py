"""The Parquet lake: every raw table exported, partitioned by UTC day, swapped in atomically.

Layout (hive style, what ``read_parquet(..., hive_partitioning = true)`` and dbt-duckdb's
``external_location`` read)::

    <lake>/raw_job/day=2024-05-01/data_0.parquet       tables with a day_column
    <lake>/raw_job/day=__HIVE_DEFAULT_PARTITION__/...  rows whose day_column is NULL
    <lake>/raw_node/data_0.parquet                     tables without one (and raw_rejects,
                                                        raw_batches)

The partition column is not repeated inside the files. A table with no rows and a day_column
leaves an empty folder.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import uuid
from pathlib import Path

from tierlens.records import SPECS, RecordKind
from tierlens.warehouse.core import Warehouse, fetch_one
from tierlens.warehouse.ddl import all_tables, literal, quote

_DAY_COLUMNS: dict[str, str | None] = {kind.table: SPECS[kind].day_column for kind in RecordKind}


def export_lake(warehouse: Warehouse | str | Path, lake_dir: str | Path) -> dict[str, int]:
    """Write every raw table to ``lake_dir`` as Parquet; returns rows written per table.

    The lake is written next to ``lake_dir`` and swapped in by rename, so a reader sees either
    the old lake or the new one, never a half-written one. All tables come from one snapshot.
    """
    lake = Path(lake_dir)
    if isinstance(warehouse, Warehouse):
        return _export(warehouse, lake)
    with Warehouse(warehouse, read_only=True) as wh:
        return _export(wh, lake)


def _export(wh: Warehouse, lake: Path) -> dict[str, int]:
    _check_replaceable(lake)
    lake.parent.mkdir(parents=True, exist_ok=True)
    staging = lake.parent / f".{lake.name}.new-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        counts = _write_tables(wh, staging)
        _swap_in(staging, lake)
    except BaseException:
        _remove_tree(staging)
        raise
    return counts


def _write_tables(wh: Warehouse, target: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    # One read transaction: the tables are exported from the same snapshot.
    wh.con.execute("BEGIN TRANSACTION")
    try:
        for table in all_tables():
            counts[table] = _write_table(wh, table, target)
    finally:
        wh.con.execute("COMMIT")
    return counts


def _write_table(wh: Warehouse, table: str, target: Path) -> int:
    day_column = _DAY_COLUMNS.get(table)
    folder = target / table
    if day_column is None:
        folder.mkdir()
        query = f"SELECT * FROM {quote(table)}"
        destination, options = folder / "data_0.parquet", "FORMAT parquet, COMPRESSION zstd"
    else:
        # timezone('UTC', ...) makes the day the UTC day whatever the session zone is.
        day = f"strftime(timezone('UTC', {quote(day_column)}), '%Y-%m-%d')"
        query = f"SELECT *, {day} AS day FROM {quote(table)}"
        destination, options = folder, "FORMAT parquet, COMPRESSION zstd, PARTITION_BY (day)"
    row = fetch_one(wh.con, f"COPY ({query}) TO {literal(str(destination))} ({options})")
    if day_column is not None:
        folder.mkdir(exist_ok=True)  # an empty table writes no partition, keep the table's folder
    return int(row[0]) if row else 0


def _check_replaceable(lake: Path) -> None:
    try:
        mode = os.lstat(lake).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        # A symlink or file where the lake should be: replacing it could clobber something the
        # user pointed it at; removing through it could delete someone else's data.
        raise ValueError(f"{lake} exists and is not a real directory (a symlink or a file); "
                         "point export_lake at a directory")


def _swap_in(staging: Path, lake: Path) -> None:
    if not os.path.lexists(lake):
        os.rename(staging, lake)
        return
    if _exchange(staging, lake):
        _remove_tree(staging)  # now holds the old lake
        return
    # No atomic exchange (not Linux, or a filesystem without it): move the old lake aside first.
    # Readers may find no lake for the instant between the renames, never a partial one.
    old = lake.parent / f".{lake.name}.old-{uuid.uuid4().hex[:12]}"
    os.rename(lake, old)
    os.rename(staging, lake)
    _remove_tree(old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux renameat2(RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL, EOPNOTSUPP: fall back to two renames
        return False
    raise OSError(errno, os.strerror(errno), str(b))


def _remove_tree(path: Path) -> None:
    """Remove a directory we created, never following a symlink (rmtree unlinks links inside)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)
