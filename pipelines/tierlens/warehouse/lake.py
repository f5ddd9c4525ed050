"""The Parquet lake: every raw table exported, partitioned by UTC day and site, swapped in atomically.

Layout (hive style, what ``read_parquet(..., hive_partitioning = true)``, Spark and Trino read)::

    <lake>/raw_job/day=2024-05-01/site=t2test/data_0.parquet   tables with a day_column and a
                                                               site (cluster) column
    <lake>/raw_file_access/day=2024-05-01/data_0.parquet       a day_column only (a file access
                                                               names no site)
    <lake>/raw_job/day=__HIVE_DEFAULT_PARTITION__/...          rows whose day_column is NULL
    <lake>/raw_node/data_0.parquet                             tables without a day (and
                                                               raw_rejects, raw_batches, the
                                                               simulator's sim_* results)

Day first: most reads want a range of days, over every site. The partition columns are not
repeated inside the files. A table with no rows and a day_column leaves an empty folder. Each
table folder also holds ``_lake_manifest.json``, the files committed and a fingerprint per partition.

``export_lake`` writes the whole lake (the first export, or a repair). ``append_lake`` is the
hourly path: it writes only the partitions the warehouse changed since the last commit, as new
files switched in with the table's manifest in one atomic exchange (lake_commit.py says how and
why plain Parquet rather than a table format). ``compact_lake`` merges partitions that collected
many small files, switched in the same way.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from pathlib import Path

from tierlens.warehouse import lake_commit
from tierlens.warehouse.core import Warehouse, fetch_one
from tierlens.warehouse.ddl import all_tables, literal, quote
from tierlens.warehouse.lake_commit import remove_tree as _remove_tree, swap_in as _swap_in


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


def append_lake(warehouse: Warehouse | str | Path, lake_dir: str | Path) -> dict[str, lake_commit.TableAppend] | None:
    """Bring the lake up to the warehouse by writing only what changed since its last commit;
    returns what each table got. A lake without manifests (none yet, or written by an older
    tierlens) gets a full export instead, and None is returned."""
    lake = Path(lake_dir)
    if isinstance(warehouse, Warehouse):
        return _append(warehouse, lake)
    with Warehouse(warehouse, read_only=True) as wh:
        return _append(wh, lake)


def _append(wh: Warehouse, lake: Path) -> dict[str, lake_commit.TableAppend] | None:
    tables = _lake_tables()
    if not _has_manifests(lake, tables):
        _export(wh, lake)
        return None
    with lake_commit.lake_lock(lake):
        lake_commit.remove_leftovers(lake)
        wh.con.execute("BEGIN TRANSACTION")  # every table from one snapshot, as the export does
        try:
            batches = lake_commit.kind_batch_counts(wh)
            return {t: lake_commit.append_table(wh, lake, t, batches) for t in lake_commit.table_order(tables)}
        finally:
            wh.con.execute("COMMIT")


def _has_manifests(lake: Path, tables: list[str]) -> bool:
    if not os.path.lexists(lake):
        return False
    lake_commit.check_real_dir(lake, "lake")
    return all(os.path.lexists(lake / t / lake_commit.MANIFEST) for t in tables)


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
        batches = lake_commit.kind_batch_counts(wh)
        for table in _lake_tables():
            counts[table] = _write_table(wh, table, target)
            lake_commit.manifest_for_export(wh, target / table, table, batches)
    finally:
        wh.con.execute("COMMIT")
    return counts


def _lake_tables() -> list[str]:
    return [*all_tables(), *_simulation_tables()]


def _simulation_tables() -> tuple[str, ...]:
    """The simulator's result tables (dbt source 'simulator'): single files, like raw_node."""
    from tierlens.records import SIMULATOR_DDL as DDL

    return tuple(DDL)


def _write_table(wh: Warehouse, table: str, target: Path) -> int:
    keys = lake_commit.key_expressions(table)
    folder = target / table
    if not keys:
        folder.mkdir()
        query = f"SELECT * FROM {quote(table)}"
        destination, options = folder / "data_0.parquet", "FORMAT parquet, COMPRESSION zstd"
    else:
        columns = ", ".join(f"{expr} AS {name}" for name, expr in keys)
        query = f"SELECT *, {columns} FROM {quote(table)}"
        names = ", ".join(name for name, _ in keys)
        destination, options = folder, f"FORMAT parquet, COMPRESSION zstd, PARTITION_BY ({names})"
    row = fetch_one(wh.con, f"COPY ({query}) TO {literal(str(destination))} ({options})")
    if keys:
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
        raise ValueError(
            f"{lake} exists and is not a real directory (a symlink or a file); point export_lake at a directory"
        )


# --- compaction --------------------------------------------------------------------------------

DEFAULT_ROWS_PER_FILE = 1_000_000


def compact_lake(lake_dir: str | Path, rows_per_file: int = DEFAULT_ROWS_PER_FILE) -> dict[str, int]:
    """Rewrite every partition folder of the lake that holds several Parquet files into as few
    files as ``rows_per_file`` allows; returns how many folders were compacted per table.

    Engines pay per file (a listing, a footer read, a task): the collector's and loaders' small
    batches make many. Each folder is rewritten into a staging folder at the lake's top (where no
    table's files are looked for) and swapped in by an atomic exchange, so a reader sees the old
    files or the new ones. Symlinks are refused, never followed.
    """
    if rows_per_file < 1:
        raise ValueError(f"rows_per_file must be at least 1, not {rows_per_file}")
    lake = Path(lake_dir)
    _check_real_dir(lake, "lake")
    compacted: dict[str, int] = {}
    with lake_commit.lake_lock(lake):
        lake_commit.remove_leftovers(lake)
        for table_dir in sorted(p for p in lake.iterdir() if not p.name.startswith((".", "_"))):
            _check_real_dir(table_dir, "table folder")
            if lake_commit.read_manifest(table_dir) is not None:
                # The manifest names the files: merge them and switch the manifest with them.
                compacted[table_dir.name] = lake_commit.compact_table(lake, table_dir.name, rows_per_file)
                continue
            compacted[table_dir.name] = sum(
                _compact_folder(lake, folder, rows_per_file) for folder in _data_folders(table_dir)
            )
    return compacted


_check_real_dir = lake_commit.check_real_dir


def _data_folders(table_dir: Path) -> list[Path]:
    """Folders below a table (itself included) that directly hold Parquet files."""
    found: list[Path] = []
    for root, dirs, files in os.walk(table_dir, followlinks=False):
        root_path = Path(root)
        for d in list(dirs):
            if d.startswith((".", "_")):
                dirs.remove(d)
            else:
                _check_real_dir(root_path / d, "partition folder")
        if any(f.endswith(".parquet") and not f.startswith((".", "_")) for f in files):
            found.append(root_path)
    return found


def _parquet_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.suffix == ".parquet" and not p.name.startswith((".", "_")))
    for f in files:
        if not stat.S_ISREG(os.lstat(f).st_mode):
            raise ValueError(f"{f} is not a regular file (a symlink?); refusing to compact {folder}")
    return files


def _compact_folder(lake: Path, folder: Path, rows_per_file: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = _parquet_files(folder)
    entries = list(folder.iterdir())
    if len(files) < 2 or any(stat.S_ISDIR(os.lstat(e).st_mode) for e in entries):
        return 0  # nothing to merge, or a folder with partition subfolders: left as it is
    staging = lake / f".compact-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        # File by file, not a dataset read: that could add the folder's hive key as a column.
        table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
        for n, start in enumerate(range(0, max(table.num_rows, 1), rows_per_file)):
            pq.write_table(table.slice(start, rows_per_file), staging / f"data_{n}.parquet", compression="zstd")
        for other in entries:  # keep what is not a data file (markers, notes)
            if other not in files and stat.S_ISREG(os.lstat(other).st_mode):
                shutil.copy2(other, staging / other.name)
        _swap_in(staging, folder)
    except BaseException:
        _remove_tree(staging)
        raise
    return 1


def read_parquet_table(folder: str | Path):
    """All Parquet files of a folder (an engine's table, or a lake table) as one Arrow table.

    Partition folders (``day=2026-10-01/``, Spark's incremental tables) give their column back,
    as text; ``__HIVE_DEFAULT_PARTITION__`` reads as null."""
    import pyarrow.dataset as ds

    path = Path(folder)
    _check_real_dir(path, "table folder")
    files = sorted(str(p) for p in path.rglob("*.parquet") if not p.name.startswith((".", "_")))
    if not files:
        raise FileNotFoundError(f"no Parquet files in {path}")
    return ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=str(path)).to_table()


def write_parquet_atomically(table, out: str | Path) -> None:
    """Write one Parquet file next to ``out`` and rename it over ``out`` (never through a symlink)."""
    import pyarrow.parquet as pq

    target = Path(out)
    if os.path.islink(target) or (target.exists() and not target.is_file()):
        raise ValueError(f"{target} exists and is not a regular file; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.new-{uuid.uuid4().hex[:12]}"
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
