"""The warehouse's writer lock: one tierlens writer at a time, across processes and schedulers.

DuckDB's own lock covers one open connection, not a run: a transform is several dbt invocations
with Python steps between them (history, retention, publish), and another writer (a cron transform
beside the Airflow DAG, a back-fill beside the hourly run, a load) would slip into the gaps. So
every tierlens writer holds this lock for the whole of its work: transforms and back-fills, loads,
retention and the publish.

It is an advisory ``flock`` on ``<warehouse>.lock`` beside the working file. The kernel releases it
when its holder dies, however it dies (SIGKILL, OOM killer, a node's reboot clears it), so a crash
can never leave the warehouse locked. The file also holds a small JSON record of the holder (pid,
host, command, what it does, since when, with a format version), written once the lock is held and
emptied when it is released: a waiting process names who it waits for, and a process that gets the
lock and still finds a record knows its holder ended without releasing it, and says so in one line.

The lock is re-entrant within a process: the transform holds it and its publish, retention and the
landed batches it loads take it again at no cost. A transform passes it to its dbt (the only child
that writes): killed alone, the transform leaves its dbt running, and the lock stays held, naming
the ended transform, until that dbt ends too.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

LOCK_SUFFIX = ".lock"
#: Version of the holder record in the lock file; a record of another version names no holder.
FORMAT_VERSION = 1
#: How long a writer waits for the lock by default (setting lock_wait_seconds): an hourly transform
#: outlasting its hour is normal at a large site; a back-fill of months is not waited for.
DEFAULT_WAIT_S = 600.0
_POLL_S = 0.2

_held: dict[str, list] = {}  # lock path -> [fd, depth]
_guard = threading.Lock()


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) the lock, as its record says."""

    pid: int
    host: str
    command: str
    purpose: str
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} ({self.purpose}: {self.command}), since {self.since}"


class WarehouseBusy(RuntimeError):
    """Another process holds the warehouse's write lock."""


class WarehouseLocked(WarehouseBusy):
    """Another tierlens writer held the lock for longer than this one would wait."""

    def __init__(self, lock: Path, holder: Holder | None, waited: float, purpose: str) -> None:
        self.lock, self.holder, self.waited = lock, holder, waited
        who = holder.describe() if holder else "a process that has not written its record yet"
        if holder and _gone(holder):
            who += f"; pid {holder.pid} has ended, but a process it started (its dbt) still runs and holds the lock"
        super().__init__(
            f"the warehouse is busy: {lock} is held by {who}; this {purpose} waited {waited:.0f} s. "
            "Run it again once that one has finished (give --wait SECONDS to wait longer), or, if "
            "that process hangs, stop it: the lock is released when it ends."
        )


class LockFileUnusable(OSError):
    """The lock file cannot be used as one (a symlink, not a regular file): the message says what to do."""


def lock_path(warehouse: str | Path) -> Path:
    w = Path(warehouse)
    return w.with_name(w.name + LOCK_SUFFIX)


def default_wait() -> float:
    """Seconds a writer waits for the lock: setting lock_wait_seconds, else DEFAULT_WAIT_S."""
    raw = os.environ.get("TIERLENS_LOCK_WAIT_SECONDS", "")
    try:
        return float(raw) if raw.strip() else DEFAULT_WAIT_S
    except ValueError as e:
        raise ValueError(f"TIERLENS_LOCK_WAIT_SECONDS: a number of seconds, not {raw!r}") from e


def read_holder(path: Path) -> Holder | None:
    """The record in a lock file (None: none, torn mid-write, or of another format version)."""
    try:
        data = json.loads(path.read_bytes() or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
        return None
    try:
        return Holder(
            int(data["pid"]), str(data["host"]), str(data["command"]), str(data["purpose"]), str(data["since"])
        )
    except (KeyError, TypeError, ValueError):
        return None


def _open(path: Path) -> int:
    # root takes this lock in a site's setup: never through a symlink someone left in the folder
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LockFileUnusable(f"{path} is a symlink: remove it (tierlens never follows one there)") from e
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockFileUnusable(f"{path} is not a regular file: remove it")
    return fd


def _write_record(fd: int, purpose: str) -> None:
    record = {
        "format_version": FORMAT_VERSION,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:500] if sys.argv else "python",
        "purpose": purpose,
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    try:
        os.pwrite(fd, json.dumps(record).encode(), 0)
    except OSError:
        # a full disk: the lock is held all the same, only unnamed (waiters say so); the writer
        # that needed the space then fails with what it could not write
        os.ftruncate(fd, 0)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def warehouse_lock(
    warehouse: str | Path,
    purpose: str,
    wait: float | None = None,
    say: Callable[[str], None] = _say,
) -> Iterator[Path]:
    """Hold the writer lock of ``warehouse`` for the block, waiting up to ``wait`` seconds for it
    (None: :func:`default_wait`; 0: not at all); raises WarehouseLocked naming the holder.

    ``purpose`` (transform, load, publish, retention) goes into the holder record. Taking over the
    lock of a holder that died is said once through ``say``."""
    path = lock_path(warehouse)
    key = str(path.absolute())
    with _guard:
        mine = _held.get(key)
        if mine is not None:
            mine[1] += 1
    if mine is not None:
        try:
            yield path
        finally:
            with _guard:
                mine[1] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    limit = default_wait() if wait is None else max(0.0, wait)
    fd = _open(path)
    started = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= limit:
                    raise WarehouseLocked(path, read_holder(path), waited, purpose) from None
                time.sleep(min(_POLL_S, limit - waited))
        # The lock is free, so a record still there is that of a holder that ended without
        # releasing it (killed, crashed, its host rebooted): the lock is ours now.
        stale = read_holder(path)
        if stale is not None:
            say(
                f"took over the warehouse lock {path} from {stale.describe()}: it ended without "
                f"releasing it (killed or crashed); this {purpose} goes ahead"
            )
        _write_record(fd, purpose)
    except BaseException:
        os.close(fd)
        raise
    with _guard:
        _held[key] = [fd, 1]
    try:
        yield path
    finally:
        with _guard:
            del _held[key]
        try:
            os.ftruncate(fd, 0)  # released cleanly: no record left to be taken for a dead holder's
        finally:
            os.close(fd)  # closing the only descriptor releases the flock


def holds_lock(warehouse: str | Path) -> bool:
    """Whether this process holds the writer lock of ``warehouse``."""
    with _guard:
        return str(lock_path(warehouse).absolute()) in _held


def held_fds(warehouse: str | Path) -> tuple[int, ...]:
    """The descriptor of the writer lock this process holds on ``warehouse`` (none when it holds
    none), for a child that writes the warehouse to hold the lock too (``pass_fds``)."""
    with _guard:
        mine = _held.get(str(lock_path(warehouse).absolute()))
        return (mine[0],) if mine else ()


def _gone(holder: Holder) -> bool:
    """Whether the holder named by the record is a process of this host that no longer runs."""
    if holder.host != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
