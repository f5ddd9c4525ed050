"""The lake's commits: a manifest per table, hourly appends, compaction, all switched in atomically.

Why plain Parquet and not a table format: both engines read the lake by listing a table's
folder (DuckDB ``read_parquet('<table>/**/*.parquet')``, Spark an external table with
``recursiveFileLookup``), and neither can read Delta, Iceberg or DuckLake here without an
extension or a jar that is fetched at run time (DuckDB's ``delta``/``iceberg``/``ducklake``
extensions come from the extension server, Spark's from Maven at session start): an offline site
would lose the lake. Plain Parquet keeps every reader as it is; the price is that atomicity comes
from the file system, as follows.

Each table folder holds its committed files and ``_lake_manifest.json`` (a leading ``_`` hides
it from Spark; DuckDB's glob reads only ``*.parquet``). A commit never changes the live folder: it
builds the next generation of the whole table beside it (``<lake>/.<table>.next-*``, hidden),
hard-linking every unchanged file (no data is copied, only names), writing the changed
partitions' new files and the new manifest, then exchanges the two folders with one
``renameat2(RENAME_EXCHANGE)``. So a reader that lists the table sees the old generation or the
new one, never a half-written batch, even one that spans several day partitions. A reader that
listed the old generation and opens a file afterwards finds it under the same name in the new
one (linked), unless the commit removed that file (a partition rewrite, compaction, retention):
then it fails with file-not-found and is rerun, it never returns a mix. File names are never
reused (they carry the table's commit sequence), so a stale listing never reads other rows.

What changed is found from the warehouse and the manifest. Raw rows carry no batch id (the
warehouse replaces rows by natural key), so the manifest keeps, per table, how many rows its
kind's batches had loaded, and per partition its rows and a fingerprint (count, sum and xor of
row hashes). A table whose row count grew by exactly what its new batches loaded lost no row:
the partitions that grew (counted on the partition columns alone) are all that changed, and
only they are digested and read. Otherwise (a record re-sent with changed values, retention)
every partition is digested and compared; that also finds the partition an updated record left
(a job that got its start time moves out of the null-day partition). A changed partition whose
committed rows are all still in the warehouse gets one new file with the added rows; one that
lost rows is rewritten as one file. A table whose kind had no new batch and whose row count did
not change is not read at all. A batch loaded twice changes nothing in the warehouse, so nothing
in the lake; an append killed before its exchange leaves the lake as it was (the hidden folder
is removed on the next run), and rerunning does the same commit.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import stat
import uuid
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote as url_quote, unquote

from tierlens.records import SPECS, RecordKind
from tierlens.warehouse.core import Warehouse
from tierlens.warehouse.ddl import BATCHES_TABLE, literal, quote

MANIFEST = "_lake_manifest.json"
#: Version of the manifest file; a lake with another version is refused, not guessed at.
FORMAT_VERSION = 1
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_KIND_OF_TABLE: dict[str, RecordKind] = {kind.table: kind for kind in RecordKind}
_DAY_COLUMNS: dict[str, str | None] = {kind.table: SPECS[kind].day_column for kind in RecordKind}
#: The site of a row, second partition key of the day-partitioned tables that carry one.
SITE_COLUMNS: dict[str, str] = {"raw_job": "cluster", "raw_job_tag": "cluster"}


def day_column(table: str) -> str | None:
    return _DAY_COLUMNS.get(table)


# --- manifest ------------------------------------------------------------------------------------


@dataclass
class Partition:
    """One partition folder (``""``: the table's own folder) as committed."""

    rows: int
    fingerprint: str
    files: list[str]


@dataclass
class TableManifest:
    table: str
    #: Commits so far; new file names carry the next one, so no name is ever reused.
    sequence: int = 0
    #: Batches of the table's record kind in raw_batches when committed (None: not a record table).
    kind_batches: int | None = None
    #: Their rows_loaded added up: if the table grew by exactly what batches since loaded, no
    #: row was replaced or deleted, and the partitions that grew are all that changed.
    rows_loaded: int | None = None
    partitions: dict[str, Partition] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.partitions.values())


class LakeError(ValueError):
    """The lake cannot be appended to as it is (a damaged or foreign manifest, a symlink)."""


def read_manifest(table_dir: Path) -> TableManifest | None:
    path = table_dir / MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise LakeError(f"{path} is not a regular file (a symlink?); run `tierlens lake export` to repair the lake")
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise LakeError(f"{path}: unreadable lake manifest ({e}); run `tierlens lake export` to repair the lake") from e
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise LakeError(
            f"{path}: field format_version is {version!r}, this tierlens reads {FORMAT_VERSION}; "
            "run `tierlens lake export` to rewrite the lake"
        )
    try:
        parts = {
            k: Partition(int(v["rows"]), str(v["fingerprint"]), list(v["files"])) for k, v in data["partitions"].items()
        }
        return TableManifest(
            data["table"], int(data["sequence"]), data["kind_batches"], data.get("rows_loaded"), parts, version
        )
    except (KeyError, TypeError, ValueError) as e:
        raise LakeError(f"{path}: lake manifest lacks or mangles field {e}; run `tierlens lake export`") from e


def _write_manifest(folder: Path, manifest: TableManifest) -> None:
    # O_EXCL | O_NOFOLLOW: the folder is one this process just created; never write through a link.
    fd = os.open(folder / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(manifest), f, indent=1, sort_keys=True)


# --- partitions and fingerprints ------------------------------------------------------------------


def _columns(wh: Warehouse, table: str) -> list[str]:
    return [d[0] for d in wh.con.execute(f"SELECT * FROM {quote(table)} LIMIT 0").description]


def key_expressions(table: str) -> list[tuple[str, str]]:
    """(partition name, SQL giving its value as text) for the table's partition folders."""
    keys = []
    if (col := day_column(table)) is not None:
        # timezone('UTC', ...) makes the day the UTC day whatever the session zone is.
        keys.append(("day", f"strftime(timezone('UTC', {quote(col)}), '%Y-%m-%d')"))
        if (site := SITE_COLUMNS.get(table)) is not None:
            keys.append(("site", f"CAST({quote(site)} AS VARCHAR)"))
    return keys


def partition_key(names: list[str], values: tuple[str | None, ...]) -> str:
    """The folder below the table, spelled as DuckDB's PARTITION_BY spells it (percent-encoded)."""
    return "/".join(f"{n}={NULL_PARTITION if v is None else url_quote(v, safe='')}" for n, v in zip(names, values))


def _group_expressions(table: str) -> list[str]:
    """The partition keys as cheap values to group by: the UTC day as days since 1970 (an epoch
    is UTC, so no time zone conversion per row: ten times faster than strftime), the site as is."""
    exprs = []
    if (col := day_column(table)) is not None:
        exprs.append(f"CAST(floor(epoch_us({quote(col)}) / 86400000000) AS BIGINT)")
        if (site := SITE_COLUMNS.get(table)) is not None:
            exprs.append(f"CAST({quote(site)} AS VARCHAR)")
    return exprs


def _key_of(table: str, values: tuple) -> str:
    names = [n for n, _ in key_expressions(table)]
    text = [
        None if v is None else (_EPOCH + timedelta(days=v)).isoformat() if n == "day" else v
        for n, v in zip(names, values)
    ]
    return partition_key(names, tuple(text))


_EPOCH = date(1970, 1, 1)


def partition_counts(wh: Warehouse, table: str) -> dict[str, int]:
    """Rows per partition: reads the partition columns only."""
    exprs = _group_expressions(table)
    if not exprs:
        return {"": table_row_count(wh, table)}
    keys = ", ".join(f"{e} AS k{i}" for i, e in enumerate(exprs))
    group = ", ".join(f"k{i}" for i in range(len(exprs)))
    rows = wh.con.execute(f"SELECT {group}, count(*) FROM (SELECT {keys} FROM {quote(table)}) GROUP BY {group}")
    return {_key_of(table, r[:-1]): int(r[-1]) for r in rows.fetchall()}


def fingerprints(wh: Warehouse, table: str, only: list[str] | None = None) -> dict[str, tuple[int, str]]:
    """Rows and an order-free digest of them per partition, from the warehouse (``only``: just
    these partitions, each read through its range, which the zone maps keep short)."""
    row_hash = f"hash({', '.join(quote(c) for c in _columns(wh, table))})"
    if only is not None:
        out = {}
        for key in only:
            where, params = _predicate(table, key)
            rows, xor, total = wh.con.execute(
                f"SELECT count(*), bit_xor(h), sum(h) FROM (SELECT {row_hash} AS h FROM {quote(table)} WHERE {where})",
                params,
            ).fetchall()[0]
            if rows or key == "":
                out[key] = (int(rows), f"{rows}:{xor}:{total}")
        return out
    exprs = _group_expressions(table)
    keys = "".join(f"{e} AS k{i}, " for i, e in enumerate(exprs))
    group = ", ".join(f"k{i}" for i in range(len(exprs)))
    query = (
        f"SELECT {group + ', ' if group else ''}count(*), bit_xor(h), sum(h) "
        f"FROM (SELECT {keys}{row_hash} AS h FROM {quote(table)})"
        f"{' GROUP BY ' + group if group else ''}"
    )
    out = {}
    for row in wh.con.execute(query).fetchall():
        values, (rows, xor, total) = row[: len(exprs)], row[len(exprs) :]
        if rows:
            out[_key_of(table, values)] = (int(rows), f"{rows}:{xor}:{total}")
    if not exprs:
        out.setdefault("", (0, "0:None:None"))  # an unpartitioned table always has its file
    return out


def _predicate(table: str, key: str) -> tuple[str, list[object]]:
    """WHERE clause selecting a partition's rows in the warehouse; ranges on the raw column so
    DuckDB's zone maps skip the row groups of other days."""
    if key == "":
        return "TRUE", []
    parts = dict(p.split("=", 1) for p in key.split("/"))
    col = quote(day_column(table) or "")
    clauses: list[str] = []
    params: list[object] = []
    if parts["day"] == NULL_PARTITION:
        clauses.append(f"{col} IS NULL")
    else:
        start = datetime.combine(date.fromisoformat(parts["day"]), datetime.min.time(), timezone.utc)
        clauses.append(f"{col} >= ? AND {col} < ?")
        params += [start, start + timedelta(days=1)]
    if "site" in parts:
        clauses.append(f"{quote(SITE_COLUMNS[table])} = ?")
        params.append(unquote(parts["site"]))
    return " AND ".join(clauses), params


# --- file system primitives ---------------------------------------------------------------------------


def swap_in(staging: Path, lake: Path) -> None:
    if not os.path.lexists(lake):
        os.rename(staging, lake)
        return
    if exchange(staging, lake):
        remove_tree(staging)  # now holds the old lake
        return
    # No atomic exchange (not Linux, or a filesystem without it): move the old lake aside first.
    # Readers may find no lake for the instant between the renames, never a partial one.
    old = lake.parent / f".{lake.name}.old-{uuid.uuid4().hex[:12]}"
    os.rename(lake, old)
    os.rename(staging, lake)
    remove_tree(old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux renameat2(RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # fall back to two renames
        return False
    raise OSError(err, os.strerror(err), str(b))


def remove_tree(path: Path) -> None:
    """Remove a directory we created, never following a symlink (rmtree unlinks links inside)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


# --- building and switching a table generation ------------------------------------------------------


def check_real_dir(path: Path, what: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {path}") from None
    if not stat.S_ISDIR(mode):
        raise LakeError(f"{what} {path} is not a real directory (a symlink or a file); refusing to touch it")


def partition_folder(live: Path, key: str) -> Path:
    """A committed partition's folder, each level checked: an lstat of a file below would
    follow a symlinked folder."""
    folder = live
    for part in key.split("/") if key else []:
        folder = folder / part
        check_real_dir(folder, "partition folder")
    return folder


@dataclass
class _Generation:
    """The next generation of one table, built in a hidden folder at the lake's top."""

    lake: Path
    table: str
    folder: Path = field(init=False)

    def __post_init__(self) -> None:
        self.folder = self.lake / f".{self.table}.next-{uuid.uuid4().hex[:12]}"
        self.folder.mkdir()

    def partition_dir(self, key: str) -> Path:
        target = self.folder / key if key else self.folder
        target.mkdir(parents=True, exist_ok=True)
        return target

    def link(self, live: Path, key: str, name: str) -> None:
        source = partition_folder(live, key) / name
        if not stat.S_ISREG(os.lstat(source).st_mode):
            raise LakeError(f"{source} is not a regular file (a symlink?); run `tierlens lake export` to repair")
        target = self.partition_dir(key) / name
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
                raise
            # A file system without hard links (some network mounts): a copy, which costs the
            # table's size instead of its file count, but keeps the switch atomic.
            shutil.copy2(source, target, follow_symlinks=False)


def _switch(gen: _Generation, manifest: TableManifest) -> None:
    _write_manifest(gen.folder, manifest)
    swap_in(gen.folder, gen.lake / gen.table)  # after it, gen.folder holds the old generation
    remove_tree(gen.folder)


def remove_leftovers(lake: Path) -> None:
    """Hidden generations of an append or compaction that was killed before its switch."""
    for p in lake.iterdir():
        if p.name.startswith(".") and (".next-" in p.name or p.name.startswith(".compact-")):
            remove_tree(p)


# --- append ----------------------------------------------------------------------------------------


@dataclass
class TableAppend:
    """What one append did to one table."""

    table: str
    scanned: bool = False
    #: Every row digested: a row was replaced or deleted since (else only the grown partitions).
    digested_all: bool = False
    appended_partitions: int = 0
    rewritten_partitions: int = 0
    removed_partitions: int = 0
    rows_written: int = 0

    @property
    def committed(self) -> bool:
        return bool(self.appended_partitions or self.rewritten_partitions or self.removed_partitions)


def kind_batch_counts(wh: Warehouse) -> dict[str, tuple[int, int]]:
    """Per record table: batches of its kind in raw_batches, and their rows_loaded added up."""
    rows = wh.con.execute(
        f"SELECT record_kind, count(*), coalesce(sum(rows_loaded), 0) FROM {quote(BATCHES_TABLE)} GROUP BY ALL"
    ).fetchall()
    return {RecordKind(kind).table: (int(n), int(loaded)) for kind, n, loaded in rows}


def table_row_count(wh: Warehouse, table: str) -> int:
    row = wh.con.execute(f"SELECT count(*) FROM {quote(table)}").fetchall()
    return int(row[0][0])


def append_table(wh: Warehouse, lake: Path, table: str, batches: dict[str, tuple[int, int]]) -> TableAppend:
    """Bring one table of the lake up to the warehouse's content, touching only what changed."""
    live = lake / table
    check_real_dir(live, "table folder")
    old = read_manifest(live)
    if old is None:
        raise LakeError(f"{live} has no {MANIFEST}; run `tierlens lake export` first")
    result = TableAppend(table)
    kind_batches, loaded = batches.get(table, (0, 0)) if table in _KIND_OF_TABLE else (None, None)
    count = table_row_count(wh, table)
    if kind_batches is not None and kind_batches == old.kind_batches and count == old.rows:
        return result  # no batch of its kind since, no retention: nothing can have changed
    result.scanned = True
    additions_only = loaded is not None and old.rows_loaded is not None and count - old.rows == loaded - old.rows_loaded
    counts = partition_counts(wh, table) if additions_only else {}
    # Every committed partition still there, none smaller: then a shrink elsewhere did not offset a growth.
    if additions_only and all(counts.get(k, 0) >= p.rows for k, p in old.partitions.items()):
        # Only the partitions that grew changed: found by counting, digested alone.
        changed = sorted(k for k, n in counts.items() if n != _rows(old, k))
        now = fingerprints(wh, table, changed)
    else:
        additions_only, result.digested_all = False, True
        now = fingerprints(wh, table)
        changed = sorted(k for k in set(now) | set(old.partitions) if now.get(k, (0, None))[1] != _fp(old, k))
    if not changed and kind_batches == old.kind_batches:
        return result
    new = TableManifest(table, old.sequence + 1, kind_batches, loaded, dict(old.partitions))
    gen = _Generation(lake, table)
    try:
        for key in changed:
            _update_partition(wh, live, gen, new, key, now.get(key), result, additions_only)
        for key, part in new.partitions.items():
            for name in part.files:
                if not os.path.lexists(gen.partition_dir(key) / name):
                    gen.link(live, key, name)
        _switch(gen, new)
    except BaseException:
        remove_tree(gen.folder)
        raise
    return result


def _rows(manifest: TableManifest, key: str) -> int:
    part = manifest.partitions.get(key)
    return part.rows if part else 0


def _fp(manifest: TableManifest, key: str) -> str | None:
    part = manifest.partitions.get(key)
    return part.fingerprint if part else None


def _update_partition(
    wh: Warehouse,
    live: Path,
    gen: _Generation,
    new: TableManifest,
    key: str,
    now: tuple[int, str] | None,
    result: TableAppend,
    additions_only: bool,
) -> None:
    before = new.partitions.get(key)
    if now is None:  # every row of the partition left the warehouse (retention, a moved record)
        if key == "":
            raise AssertionError("an unpartitioned table always has a fingerprint")
        del new.partitions[key]
        result.removed_partitions += 1
        return
    where, params = _predicate(new.table, key)
    current = f"SELECT * FROM {quote(new.table)} WHERE {where}"
    name = f"part-{new.sequence:06d}.parquet"  # one new file per partition and commit
    target = gen.partition_dir(key) / name
    if before is not None and before.files:
        files = ", ".join(literal(str((live / key / f) if key else live / f)) for f in before.files)
        committed = f"SELECT * FROM read_parquet([{files}], hive_partitioning = false)"
        lost = 0 if additions_only else _count(wh, f"{committed} EXCEPT ALL {current}", params)
        if lost == 0:  # only additions: one new file beside the committed ones
            written = _copy(wh, _added(new.table, current, files, committed, additions_only), params, target)
            new.partitions[key] = Partition(now[0], now[1], [*before.files, name])
            result.appended_partitions += 1
            result.rows_written += written
            return
    written = _copy(wh, current, params, target)
    new.partitions[key] = Partition(now[0], now[1], [name])
    if before is None:
        result.appended_partitions += 1  # a new partition: its first file
    else:
        result.rewritten_partitions += 1  # it lost rows: replaced by one file of what is left
    result.rows_written += written


def _added(table: str, current: str, files: str, committed: str, additions_only: bool) -> str:
    """The rows of ``current`` the committed files lack. With additions only, every committed row
    is still in the warehouse unchanged and natural keys are unique there, so a row is new when
    its key is: only the key columns of the committed files are read."""
    if not additions_only:
        return f"{current} EXCEPT ALL {committed}"
    keys = ", ".join(quote(k) for k in SPECS[_KIND_OF_TABLE[table]].natural_key)
    return (
        f"SELECT c.* FROM ({current}) AS c ANTI JOIN "
        f"(SELECT {keys} FROM read_parquet([{files}], hive_partitioning = false)) AS k USING ({keys})"
    )


def _count(wh: Warehouse, query: str, params: list[object]) -> int:
    return int(wh.con.execute(f"SELECT count(*) FROM ({query})", params).fetchall()[0][0])


def _copy(wh: Warehouse, query: str, params: list[object], target: Path) -> int:
    row = wh.con.execute(
        f"COPY ({query}) TO {literal(str(target))} (FORMAT parquet, COMPRESSION zstd)", params
    ).fetchall()
    return int(row[0][0]) if row else 0


# --- manifests for a full export --------------------------------------------------------------------


def manifest_for_export(wh: Warehouse, folder: Path, table: str, batches: dict[str, tuple[int, int]]) -> None:
    """Write the manifest of a table ``export_lake`` just wrote into ``folder`` (its staging copy)."""
    now = fingerprints(wh, table)
    on_disk: dict[str, list[str]] = {}
    for root, _dirs, files in os.walk(folder, followlinks=False):
        parquet = sorted(f for f in files if f.endswith(".parquet") and not f.startswith((".", "_")))
        relative = Path(root).relative_to(folder).as_posix()
        if parquet:
            on_disk["" if relative == "." else relative] = parquet
    if set(on_disk) != set(now):
        raise LakeError(
            f"{table}: the partition folders DuckDB wrote ({sorted(set(on_disk) - set(now))[:3]}) and the "
            f"partitions the warehouse holds ({sorted(set(now) - set(on_disk))[:3]}) differ"
        )
    parts = {k: Partition(rows, fp, on_disk[k]) for k, (rows, fp) in now.items()}
    kind_batches, loaded = batches.get(table, (0, 0)) if table in _KIND_OF_TABLE else (None, None)
    _write_manifest(folder, TableManifest(table, 0, kind_batches, loaded, parts))


# --- compaction ----------------------------------------------------------------------------------


def compact_table(lake: Path, table: str, rows_per_file: int) -> int:
    """Merge every partition of a manifested table that holds several files; one switch for the
    whole table. Returns the partitions merged."""
    import pyarrow.parquet as pq

    live = lake / table
    old = read_manifest(live)
    assert old is not None
    crowded = sorted(k for k, p in old.partitions.items() if len(p.files) > 1)
    if not crowded:
        return 0
    new = TableManifest(table, old.sequence + 1, old.kind_batches, old.rows_loaded, dict(old.partitions))
    gen = _Generation(lake, table)
    try:
        for key in crowded:
            part = old.partitions[key]
            folder = partition_folder(live, key)
            merged = _concat([pq.read_table(_regular(folder / f)) for f in part.files])
            names = []
            for n, start in enumerate(range(0, max(merged.num_rows, 1), rows_per_file)):
                names.append(f"part-{new.sequence:06d}-{n}.parquet")
                pq.write_table(
                    merged.slice(start, rows_per_file), gen.partition_dir(key) / names[-1], compression="zstd"
                )
            new.partitions[key] = Partition(part.rows, part.fingerprint, names)
        for key, part in new.partitions.items():
            if key not in crowded:
                for name in part.files:
                    gen.link(live, key, name)
            gen.partition_dir(key)
        _switch(gen, new)
    except BaseException:
        remove_tree(gen.folder)
        raise
    return len(crowded)


def _regular(path: Path) -> Path:
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise LakeError(f"{path} is not a regular file (a symlink?); refusing to compact it")
    return path


def _concat(tables: list):  # noqa: ANN202 - pyarrow is imported lazily
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="default")


# --- the lake as a whole ------------------------------------------------------------------------------


class lake_lock:  # noqa: N801 - used as a context manager, named like one
    """One writer at a time (append, compaction): a flock on ``<lake>/_lake.lock``."""

    def __init__(self, lake: Path) -> None:
        self.path = lake / "_lake.lock"

    def __enter__(self) -> lake_lock:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LakeError(
                f"{self.path}: another append or compaction is writing this lake; run it again later"
            ) from None
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def table_order(tables: list[str]) -> list[str]:
    """Records first, the rejects next, raw_batches last: a reader that finds a batch in
    raw_batches finds its rows in their table too (the other way round can happen for an instant)."""
    from tierlens.warehouse.ddl import REJECTS_TABLE

    last = [t for t in (REJECTS_TABLE, BATCHES_TABLE) if t in tables]
    return [t for t in tables if t not in last] + last
