"""The Slurm source as the command line and the ingest DAG both use it: one ``batches()`` entry.

``tierlens ingest slurm`` runs from a watermark (``watermark()``, advanced through
``Checkpoints`` only once what came before it is loaded); the DAG asks for its data interval and
keeps no watermark (ingest/slurm.py runs both). Both read sacct in bounded windows, then the
SPANK plugin's spool tags.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import chain
from pathlib import Path

from ...records import Batch
from ..watermark import Watermark
from .sacct import SacctRunner, WindowReport, sacct_batches
from .spool import spool_batches


def batches(
    runner: SacctRunner,
    start: float,
    end: float,
    *,
    window_hours: float,
    spool: Iterable[Path] = (),
    unfinished: Iterable[str] = (),
    on_window: Callable[[float, list[str]], None] | None = None,
    retry: list[WindowReport] | None = None,
    spool_since: datetime | None = None,
) -> Iterator[Batch]:
    """Jobs and steps of [start, end) (epoch seconds) from sacct in windows of ``window_hours``,
    plus the jobs still ``unfinished`` last time, then the spool tags of ``spool`` folders (the
    tagged jobs no window returned are asked for afterwards: ingest/tagged.py).

    ``on_window`` and ``retry`` are sacct_batches': a window's watermark once it is handed on, and
    the windows whose output was incomplete (asked for again next time). ``spool_since``: read
    only spool files written since then (spool_files), the earliest a job of the window can have
    been tagged."""
    out: Iterator[Batch] = sacct_batches(
        runner, start, end, window_hours * 3600, list(unfinished), on_window, retry=retry
    )
    dirs = [Path(d) for d in spool]
    return chain(out, spool_batches(dirs, modified_since=spool_since)) if dirs else out


def asked_by_id(
    runner: SacctRunner, jobs: Sequence[str], spool: Iterable[Path] = (), retry: list[WindowReport] | None = None
) -> Iterator[Batch]:
    """The ``jobs`` (tagged by the plugin, never returned by a time window) from sacct by id, then
    the spool tags of those jobs alone (their files only: the rest of the spool is not read)."""
    if not jobs:
        return iter(())
    out = sacct_batches(runner, 0.0, 0.0, 0.0, [], retry=retry, missing=jobs)
    dirs = [Path(d) for d in spool]
    return chain(out, spool_batches(dirs, jobs=set(jobs))) if dirs else out


def parse_when(text: str) -> float:
    """An epoch, or an ISO time; one without a zone is local time, as sacct reads it."""
    if text.isdigit():
        return float(text)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError as e:
        raise ValueError(f"not a time: {text!r} (ISO 8601, e.g. 2026-10-01T12:00, or epoch seconds)") from e
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return dt.timestamp()


def watermark(warehouse: Path, clusters: str | None) -> Watermark:
    """The watermark lives beside the warehouse it describes, one entry per --clusters."""
    return Watermark(warehouse.parent / f"{warehouse.stem}.slurm-state.json", clusters or "default")


class Checkpoints:
    """Saves a window's watermark only once every batch handed on before it has been loaded.

    The loader runs the source one batch ahead on a thread, so when the source reaches the end
    of a window its last batch may still be loading; saving the watermark then could run ahead
    of the warehouse if that load failed."""

    def __init__(self, save: Callable[[float, list[str]], None]) -> None:
        self.save = save
        self.handed = 0
        self.loaded = 0
        self.waiting: list[tuple[int, float, list[str]]] = []
        self.lock = threading.Lock()

    def count(self, batches: Iterable[Batch]) -> Iterator[Batch]:
        for b in batches:
            with self.lock:
                self.handed += 1
            yield b

    def on_window(self, mark: float, unfinished: list[str]) -> None:
        with self.lock:
            self.waiting.append((self.handed, mark, unfinished))
        self.flush()

    def on_batch(self, _result) -> None:
        with self.lock:
            self.loaded += 1
        self.flush()

    def flush(self) -> None:
        with self.lock:
            ready = [w for w in self.waiting if w[0] <= self.loaded]
            self.waiting = [w for w in self.waiting if w[0] > self.loaded]
            for _n, mark, unfinished in ready[-1:]:
                self.save(mark, unfinished)
