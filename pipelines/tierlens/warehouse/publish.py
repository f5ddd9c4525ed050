"""The published snapshot: the warehouse as of the last transform, for readers.

DuckDB lets one process write a file, and other processes open it read-only only while nobody
writes; a person's read-only session on the working file would make the next hourly load fail,
and a load would make their query fail. So the pipeline keeps ``warehouse.duckdb`` to itself and,
after each transform, publishes a snapshot that readers open instead (``tierlens sql``, the
report, ``duckdb -readonly``): ``published/warehouse.duckdb`` beside the working file.

The snapshot keeps the working file's name in its own folder because dbt-duckdb's views name their
catalog after the file (``"warehouse"."staging"...``).

Cost in proportion to what changed. Where the filesystem can share blocks between files (XFS with
reflink, the default of mkfs.xfs on EL8/EL9 and Debian; btrfs), a publish is a *clone*: a new slot
that shares every block of the working file, made without reading or writing any (one ioctl). The
filesystem copies a shared block only when the working file later overwrites it, so the snapshot
never changes under its readers, and it costs disk only for the blocks the working file has
changed since. Elsewhere (ext4) the publish diffs blocks, as follows.

The snapshot is one of a few *slots*
(``published/.slots/warehouse.duckdb.<n>``) and ``published/warehouse.duckdb`` is a hard link to
the current one. A publish brings the previous slot (the one readers left an hour ago) up to date
by writing only the blocks of the working file that differ from it; DuckDB rewrites only the
blocks of the row groups that changed at a checkpoint, so after an hourly incremental transform
most of the file is byte-identical and stays unwritten. Then the slot is linked over the published
name (a rename: atomic). A reader that has a snapshot open keeps its inode, untouched:

- a slot is only rewritten when no process holds DuckDB's lock on it (a reader's session takes a
  shared lock; the publisher takes the exclusive one, non-blocking, before writing), otherwise a
  fresh slot is written in full and the held one is only unlinked (its reader keeps reading);
- the current slot is never written.

Common filesystems (ext4) have no reflinks, so this block diff is what keeps the write proportional to
the change. Finding the changed blocks must not read the spare slot either (an hour after it was
written it has usually left the page cache: reading it back was most of a publish at a year of
history). So each slot has a *block index* beside it (``.slots/warehouse.duckdb.<n>.blocks``):
a 128-bit XXH3 digest of each of its blocks, written when the slot is synced. A publish hashes the
working file's blocks once (it has just been written: page cache) and writes the blocks whose
digest differs from the index. XXH3 rather than a cryptographic hash: the digest guards against
accidental change, not an adversary (who could write the working file itself), and at ~15 GB/s
it costs a year of history a fraction of a second where SHA-1 took ~3 s (1.6 GB/s), the part
of an hourly run that grew with the warehouse's size. The index is trusted only while it describes the slot exactly: its format version,
block layout and hash agree with this code, its own digest matches its content (not truncated or
corrupted), and the slot's device, inode, size and modification time are those recorded after the
last sync (the publisher stamps the slot with a modification time of its own choosing, a
nanosecond value no later write reproduces: any write to the slot since, by DuckDB or anything
else, changes it). Otherwise the publish falls back to comparing the bytes of both files, as
before, and writes a fresh index. The index is removed before a slot is written, so a publish
that stops midway leaves no index to trust.

DuckDB's own per-block checksums are not used for this: they are a position-independent XOR of
the block's words, blind to words swapped within a block.

Blocks follow DuckDB's file layout (three 4 KiB headers, then 256 KiB blocks), so one changed DuckDB
block is one block written; any other file is still copied correctly, only less finely. The disk
holds two snapshots (current and spare) beside the working file. ``published/.slots/state.json``
records the last publish (format version, when, bytes compared and written).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import xxhash

from ..durable import fsync_dir

PUBLISHED_DIR = "published"
SLOTS_DIR = ".slots"
STATE_FILE = "state.json"
#: Version of ``state.json``; bump when its fields change meaning.
STATE_FORMAT_VERSION = 2
#: DuckDB's storage block (256 KiB): the unit a checkpoint rewrites, so the unit compared.
CHUNK = 256 * 1024
#: DuckDB's file starts with three 4 KiB headers; its blocks follow, so blocks are counted from here.
HEADER_BYTES = 3 * 4096
#: Version of a slot's block index (``<slot>.blocks``); bump when its layout or hash changes.
#: 1: SHA-1 digests; 2: XXH3-128 (an index of version 1 is not trusted: the slot is compared by its
#: bytes once, and a version 2 index written).
INDEX_FORMAT_VERSION = 2
INDEX_SUFFIX = ".blocks"
INDEX_HASH = "xxh3_128"
DIGEST_BYTES = 16
#: Linux's ioctl that makes one file share all of another's blocks (``_IOW(0x94, 9, int)``).
FICLONE = 0x40049409
#: What a filesystem (or a pair of them) that cannot share blocks answers FICLONE with.
_CANNOT_CLONE = frozenset({errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS})


def _digest(block: bytes | memoryview) -> bytes:
    """The digest of one block in a slot's index."""
    return xxhash.xxh3_128_digest(block)


@dataclass(frozen=True)
class PublishStats:
    """What one publish did: ``bytes_written`` is what changed since the slot it updated."""

    format_version: int
    published_at: str
    slot: str
    reused_slot: bool
    file_bytes: int
    bytes_written: int
    chunks_written: int
    seconds: float
    #: "clone": the slot shares the working file's blocks (nothing compared or written);
    #: "index": blocks found by the slot's block index; "bytes": by reading the slot (no valid index)
    compared_by: str
    #: bytes read back from the slot to compare (0 when its index was valid)
    slot_bytes_read: int


def published_path(warehouse: str | Path) -> Path:
    """Where the snapshot of ``warehouse`` is published."""
    w = Path(warehouse)
    return w.parent / PUBLISHED_DIR / w.name


def reader_path(warehouse: str | Path) -> Path:
    """The file a reader should open: the published snapshot, else (nothing published yet, or
    ``warehouse`` is itself a snapshot) ``warehouse``."""
    published = published_path(warehouse)
    return published if published.is_file() else Path(warehouse)


def last_publish(warehouse: str | Path) -> PublishStats | None:
    """The record of the last publish of ``warehouse`` (None: none yet, or written by another version)."""
    path = published_path(warehouse).parent / SLOTS_DIR / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # truncated or corrupted: the next publish writes it whole again
    if not isinstance(data, dict) or data.get("format_version") != STATE_FORMAT_VERSION:
        return None
    try:
        return PublishStats(**{k: data[k] for k in PublishStats.__dataclass_fields__})
    except KeyError:
        return None  # a field missing: damaged, as above


def publish(warehouse: str | Path) -> Path:
    """Bring the published snapshot of ``warehouse`` up to date; returns the snapshot's path."""
    return publish_with_stats(warehouse)[0]


def publish_with_stats(warehouse: str | Path, *, clone: bool = True) -> tuple[Path, PublishStats]:
    """:func:`publish`, also returning what it wrote; ``clone=False`` diffs blocks even where the
    filesystem could clone.

    Holds the writer lock (warehouse/lock.py; a transform that publishes holds it already) and a
    writing connection on ``warehouse`` throughout, so no other process can change it mid-copy,
    after a checkpoint has put every committed change in the file itself.
    """
    from .lock import warehouse_lock

    source = Path(warehouse)
    if not source.is_file():
        raise FileNotFoundError(f"no warehouse at {source} to publish")
    with warehouse_lock(source, "publish"):
        return _publish_with_stats(source, clone)


def _publish_with_stats(source: Path, clone: bool) -> tuple[Path, PublishStats]:
    target = published_path(source)
    _make_folder(target.parent)
    slots = target.parent / SLOTS_DIR
    _make_folder(slots)
    t0 = time.perf_counter()
    con = duckdb.connect(str(source))
    try:
        con.execute("CHECKPOINT")
        current = _inode(target)
        cloned = _cloned_slot(slots, source) if clone else None
        if cloned is not None:
            slot, fd = cloned
            reused = False
        else:
            slot, fd, reused = _writable_slot(slots, source.name, current)
        try:
            if cloned is not None:
                sync = _Synced(0, 0, os.fstat(fd).st_size, "clone", 0)
            else:
                sync = _slot_written(source, slot, fd)
            _link_atomically(slot, target)
        finally:
            os.close(fd)  # releases the lock: the slot is now the published one
    finally:
        con.close()
    # A clone needs no spare: the next publish clones again. Without clones the slot readers left
    # is kept as the next publish's spare.
    keep = {slot.name} if cloned is not None else {slot.name, *_names_of(slots, source.name, current)}
    _drop_old_slots(slots, source.name, keep=keep)
    stats = PublishStats(
        STATE_FORMAT_VERSION,
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        slot.name,
        reused,
        sync.size,
        sync.written,
        sync.chunks,
        round(time.perf_counter() - t0, 3),
        sync.compared_by,
        sync.slot_bytes_read,
    )
    _write_state(slots / STATE_FILE, stats)
    return target, stats


def _slot_written(source: Path, slot: Path, fd: int) -> _Synced:
    """:func:`_sync_blocks`; a slot it could not finish (a full disk) is removed, index and all: it
    is not the published one, so readers keep the previous snapshot, and the next publish writes
    a fresh slot."""
    try:
        return _sync_blocks(source, fd, _index_path(slot))
    except OSError as e:
        _index_path(slot).unlink(missing_ok=True)
        slot.unlink(missing_ok=True)
        raise OSError(
            e.errno, f"could not write the snapshot {slot} (a copy of {source}): {e.strerror or e}", str(slot)
        ) from e


def _make_folder(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        # a symlink here could send the copy anywhere the pipeline's user may write
        raise ValueError(f"{folder} is not a plain folder (a symlink?): refusing to publish into it")


def _inode(path: Path) -> tuple[int, int] | None:
    """The (device, inode) the published name points at now; a symlink counts as nothing."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _slot_files(slots: Path, name: str) -> list[Path]:
    return sorted(p for p in slots.iterdir() if p.name.startswith(name + ".") and p.name[len(name) + 1 :].isdigit())


def _names_of(slots: Path, name: str, inode: tuple[int, int] | None) -> set[str]:
    return {p.name for p in _slot_files(slots, name) if inode is not None and _inode(p) == inode}


def _writable_slot(slots: Path, name: str, current: tuple[int, int] | None) -> tuple[Path, int, bool]:
    """A slot that is not the published one and that no reader has open, locked for writing;
    else a new empty slot. Returns (path, fd, reused)."""
    for path in reversed(_slot_files(slots, name)):
        if _inode(path) in (current, None):
            continue  # the snapshot readers open now, or not a plain file
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                continue  # a reader's session holds it: leave it to them
            raise
        return path, fd, True
    return (*_new_slot(slots, name), False)


def _new_slot(slots: Path, name: str) -> tuple[Path, int]:
    """A new empty slot, numbered after the others, locked for writing."""
    taken = [int(p.name[len(name) + 1 :]) for p in _slot_files(slots, name)]
    path = slots / f"{name}.{max(taken, default=-1) + 1}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return path, fd


def _cloned_slot(slots: Path, source: Path) -> tuple[Path, int] | None:
    """A new slot sharing all of ``source``'s blocks (a reflink clone: XFS with reflink, btrfs,
    bcachefs, OCFS2), locked; None where the filesystem cannot clone (ext4, or the published folder
    on another filesystem). Nothing is read or written: the filesystem copies a shared block only
    when the working file later overwrites it, so the snapshot never changes and costs disk only
    for what the working file has changed since."""
    path, fd = _new_slot(slots, source.name)
    try:
        src_fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            fcntl.ioctl(fd, FICLONE, src_fd)
        finally:
            os.close(src_fd)
        os.fsync(fd)
    except BaseException as e:
        os.close(fd)
        path.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in _CANNOT_CLONE:
            return None
        raise
    return path, fd


@dataclass(frozen=True)
class _Synced:
    written: int
    chunks: int
    size: int
    compared_by: str
    slot_bytes_read: int


def _blocks(size: int) -> list[tuple[int, int]]:
    """(offset, length) of each block of a file of ``size`` bytes: DuckDB's headers, then its blocks."""
    if size <= HEADER_BYTES:
        return [(0, size)] if size else []
    tail = range(HEADER_BYTES, size, CHUNK)
    return [(0, HEADER_BYTES), *((off, min(CHUNK, size - off)) for off in tail)]


def _sync_blocks(source: Path, fd: int, index: Path) -> _Synced:
    """Make the file open at ``fd`` byte-identical to ``source``, writing only the blocks that
    differ (found from the slot's block index when it is valid, else by reading the slot), and
    write the slot's new index."""
    known = _read_index(index, fd)
    index.unlink(missing_ok=True)  # from here on the slot may change: no index to trust until rewritten
    fsync_dir(index.parent)
    written = chunks = slot_read = 0
    digests: list[bytes] = []
    buffer = bytearray(CHUNK)  # one buffer for every block: no allocation per block
    with open(source, "rb", buffering=0) as src:
        size = os.fstat(src.fileno()).st_size
        for i, (offset, length) in enumerate(_blocks(size)):
            new = memoryview(buffer)[:length]
            if os.preadv(src.fileno(), [new], offset) != length:
                raise OSError(f"{source} shrank while being published (block at offset {offset})")
            digest = _digest(new)
            digests.append(digest)
            if known is not None:
                same = i < len(known) and known[i] == digest
            else:
                old = os.pread(fd, length, offset)
                slot_read += len(old)
                same = old == new
            if not same:
                os.pwrite(fd, new, offset)
                written += length
                chunks += 1
    os.ftruncate(fd, size)
    os.fsync(fd)
    _write_index(index, fd, digests)
    # The slot's pages (written, or read back) would push the working file out of the page cache,
    # and the next hour's run reads the working file, not the snapshot.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return _Synced(written, chunks, size, "index" if known is not None else "bytes", slot_read)


def _index_path(slot: Path) -> Path:
    return slot.with_name(slot.name + INDEX_SUFFIX)


def _stamp(fd: int) -> dict[str, int]:
    """Set the slot's modification time to a value no later write reproduces (a second in the
    past, random nanoseconds: a write stamps the current time) and return what identifies the
    slot's state: device, inode, size, that time."""
    now = time.time_ns()
    mtime = (now // 1_000_000_000 - 1) * 1_000_000_000 + 1 + secrets.randbelow(999_999_998)
    st = os.fstat(fd)
    os.utime(fd, ns=(st.st_atime_ns, mtime))
    st = os.fstat(fd)
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _identity(fd: int) -> dict[str, int]:
    st = os.fstat(fd)
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_index(index: Path, fd: int, digests: list[bytes]) -> None:
    """The block index of the slot at ``fd``: one JSON line (format version, layout, hash, the
    slot's identity, a digest of the digests), then the blocks' digests."""
    body = b"".join(digests)
    os.fsync(fd)
    header = {
        "format_version": INDEX_FORMAT_VERSION,
        "hash": INDEX_HASH,
        "header_bytes": HEADER_BYTES,
        "block_bytes": CHUNK,
        "blocks": len(digests),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "slot": _stamp(fd),
    }
    os.fsync(fd)
    _write_aside(index, json.dumps(header, sort_keys=True).encode() + b"\n" + body, "block index")


def _read_index(index: Path, fd: int) -> list[bytes] | None:
    """The slot's block digests from its index, or None when the index cannot be trusted (missing,
    another format, truncated or corrupted, or the slot changed since it was written)."""
    try:
        in_fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(in_fd, "rb") as f:
        data = f.read()
    line_end = data.find(b"\n")
    if line_end < 0:
        return None
    try:
        header = json.loads(data[:line_end])
    except ValueError:
        return None
    body = data[line_end + 1 :]
    expected = {
        "format_version": INDEX_FORMAT_VERSION,
        "hash": INDEX_HASH,
        "header_bytes": HEADER_BYTES,
        "block_bytes": CHUNK,
    }
    if not isinstance(header, dict) or any(header.get(k) != v for k, v in expected.items()):
        return None
    if header.get("slot") != _identity(fd):
        return None  # the slot was written (or replaced) since its index was
    blocks = header.get("blocks")
    size = header["slot"]["size"]
    if blocks != len(_blocks(size)) or len(body) != blocks * DIGEST_BYTES:
        return None
    if hashlib.sha256(body).hexdigest() != header.get("body_sha256"):
        return None
    return [body[i : i + DIGEST_BYTES] for i in range(0, len(body), DIGEST_BYTES)]


def _link_atomically(slot: Path, target: Path) -> None:
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp"
    os.link(slot, tmp, follow_symlinks=False)
    try:
        os.replace(tmp, target)  # replaces the name (a symlink too), never writes through it
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def _drop_old_slots(slots: Path, name: str, keep: set[str]) -> None:
    """Keep the published slot and the one it replaced (the next publish's spare); unlink others.
    Unlinking never disturbs a reader that has one open: it keeps the inode until it closes."""
    for path in _slot_files(slots, name):
        if path.name not in keep:
            _index_path(path).unlink(missing_ok=True)
            path.unlink(missing_ok=True)
    fsync_dir(slots)


def _write_state(path: Path, stats: PublishStats) -> None:
    _write_aside(path, json.dumps(asdict(stats), indent=1).encode(), "publish record")


def _write_aside(path: Path, data: bytes, what: str) -> None:
    """``data`` written beside ``path`` and renamed over it: never half a file, and a temporary
    that could not be written whole (a full disk) is removed."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OSError(e.errno, f"could not write the snapshot's {what} {path}: {e.strerror or e}", str(path)) from e
    os.replace(tmp, path)
