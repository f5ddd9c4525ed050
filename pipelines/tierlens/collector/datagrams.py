"""The hand-off between the collector's receiving side and its decoding side.

Receiving (socket, journal, pcap replay) produces :class:`DatagramBatch` values: many UDP
payloads packed into one contiguous byte buffer with their arrival times and senders. Decoding
consumes them through :class:`DatagramSink`. Nothing else crosses the boundary, so the journal
can change its file layout, and the decoder its compiled kernel, without the other noticing.

A batch keeps, per datagram, where it came from (``positions``: the byte offset of the record in
its source, a journal segment or a capture), so a decode error can name the offset and a
checkpoint can name the first datagram not yet durably decoded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class DatagramBatch:
    """``n`` datagrams; datagram ``i`` is ``payload[offsets[i]:offsets[i + 1]]``."""

    #: Arrival time of each datagram: the receiving host's wall clock (capture time in a replay).
    arrival: np.ndarray  # float64 [n], UTC seconds since the epoch
    #: Index into ``senders`` for each datagram.
    sender: np.ndarray  # int32 [n]
    #: Distinct senders of this batch as (ip, port), in the form socket.recvfrom returns them.
    senders: tuple[tuple[str, int], ...]
    #: Start of each datagram in ``payload``, plus the end of the last one.
    offsets: np.ndarray  # int64 [n + 1]
    payload: np.ndarray  # uint8, all payloads back to back
    #: Where the batch was read from: a journal segment, a capture file, or "socket".
    source: str
    #: Byte offset of each datagram's record in ``source`` (-1 where the source has none).
    positions: np.ndarray  # int64 [n]

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    def datagram(self, i: int) -> bytes:
        return self.payload[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def addr(self, i: int) -> tuple[str, int]:
        return self.senders[int(self.sender[i])]

    def __iter__(self) -> Iterator[tuple[float, tuple[str, int], bytes]]:
        """(arrival, sender, payload) per datagram, for code that decodes one at a time."""
        for i in range(len(self)):
            yield float(self.arrival[i]), self.addr(i), self.datagram(i)

    @classmethod
    def pack(
        cls, items: Sequence[tuple[float, tuple[str, int], bytes]], source: str, positions: Sequence[int] | None = None
    ) -> DatagramBatch:
        """Build a batch from (arrival, sender, payload) triples."""
        index: dict[tuple[str, int], int] = {}
        sender = np.empty(len(items), dtype=np.int32)
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        for i, (_, addr, data) in enumerate(items):
            sender[i] = index.setdefault((addr[0], int(addr[1])), len(index))
            offsets[i + 1] = offsets[i] + len(data)
        payload = np.frombuffer(b"".join(d for _, _, d in items), dtype=np.uint8)
        pos = (
            np.asarray(positions, dtype=np.int64) if positions is not None else np.full(len(items), -1, dtype=np.int64)
        )
        return cls(
            arrival=np.asarray([t for t, _, _ in items], dtype=np.float64),
            sender=sender,
            senders=tuple(index),
            offsets=offsets,
            payload=payload,
            source=source,
            positions=pos,
        )


class DatagramSink(Protocol):
    """What the receiving side needs of a decoder.

    ``snapshot``/``restore`` carry the decoder's state (servers, user and file dictionaries, open
    files, pending cache events) across a restart: the collector saves a snapshot together with
    its journal checkpoint, after the rows decoded up to that point are durably written, and on
    start restores it before decoding the journal from the checkpoint on.
    """

    def feed_batch(self, batch: DatagramBatch) -> None:
        """Decode every datagram of ``batch`` in order; finished rows go to the row sink."""

    def sweep(self, now: float) -> None:
        """Apply the timeouts (unclosed files, cache grace) as of ``now``."""

    def finish(self, now: float) -> None:
        """Shutdown: emit everything still open as unclosed."""

    def snapshot(self) -> bytes:
        """The state needed to continue after the last datagram fed, as bytes."""

    def restore(self, state: bytes) -> None:
        """Continue from a :meth:`snapshot`; call before the first ``feed_batch``."""
