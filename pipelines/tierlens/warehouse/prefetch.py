"""Produce the next batch while the current one loads.

A source (a Parquet reader, a sacct parser) spends most of its time in pyarrow or C code that
releases the GIL, and so does DuckDB; running the producer one batch ahead on a thread fills
the moments one of them leaves a core idle. At most two batches are alive at once: the one
being loaded and the one being produced.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class _Item(Generic[T]):
    value: T | None = None
    error: BaseException | None = None
    done: bool = False


def prefetched(items: Iterable[T]) -> Iterator[T]:
    """Iterate ``items`` with the next element produced on a background thread."""
    ready: queue.Queue[_Item[T]] = queue.Queue()
    # The producer may start on item k+1 only once the consumer took item k, so at most the
    # item being consumed and the one being produced are alive.
    taken = threading.Semaphore(0)
    stop = threading.Event()

    def produce() -> None:
        try:
            for value in items:
                ready.put(_Item(value))
                taken.acquire()
                if stop.is_set():
                    return
            ready.put(_Item(done=True))
        except BaseException as err:  # handed to the consumer, which re-raises it
            ready.put(_Item(error=err))

    worker = threading.Thread(target=produce, name="tierlens-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item.error is not None:
                raise item.error
            if item.done:
                return
            taken.release()
            yield item.value  # type: ignore[misc]
    finally:
        stop.set()
        taken.release()
        worker.join()  # at most the item in production: the producer checks stop after it
