"""Where the elements of a JSON array end, found for a whole block of bytes at once.

Decoding sacct's jobs one ``raw_decode`` call at a time spends most of its time in Python; a
typed decoder (msgspec) is several times faster but decodes only whole values. This scanner cuts a
block into whole elements so that each can go to the typed decoder on its own (and keep its exact
offset): brackets are found with numpy, those inside strings are masked by the parity of the
unescaped quotes before them, and an element ends where the bracket depth returns to the array's.

The scan only proposes boundaries. A proposal is taken when the element decodes as valid JSON on
its own: an object's extent is fixed by the grammar, so a decoded span is the element
``json.JSONDecoder.raw_decode`` would have found. Anything else (a non-object element, the block
ending inside an element) is reported, and the caller hands that element to the generic decoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

_OPEN_OBJ, _OPEN_ARR, _CLOSE_OBJ, _CLOSE_ARR = 1, 2, 3, 4
_BRACKETS = bytearray(256)
for _ch, _code in ((b"{", _OPEN_OBJ), (b"[", _OPEN_ARR), (b"}", _CLOSE_OBJ), (b"]", _CLOSE_ARR)):
    _BRACKETS[_ch[0]] = _code
_BRACKETS = bytes(_BRACKETS)
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class Stop(Enum):
    MORE = "more"  # the block ends inside an element (or before the array's end)
    END = "end"  # the array closes after ``stop``
    ODD = "odd"  # what follows ``stop`` is not an object element: the generic decoder takes it


@dataclass
class Scan:
    """Whole object elements of the block (``starts[i]``: its '{', ``ends[i]``: one past its '}'),
    and where and why the scan stopped: ``stop`` is the end of the last whole element (or 0)."""

    starts: np.ndarray
    ends: np.ndarray
    stop: int
    why: Stop


def _escaped(positions: np.ndarray) -> np.ndarray:
    """Positions of the characters escaped by a run of backslashes (odd-length runs only).

    In valid JSON a backslash occurs only inside a string, where ``\\\\`` is one escaped
    backslash: a quote after a run of backslashes is escaped when the run is odd."""
    new_run = np.empty(len(positions), bool)
    new_run[0] = True
    np.not_equal(np.diff(positions), 1, out=new_run[1:])
    run_start = positions[new_run][np.cumsum(new_run) - 1]
    run_end = np.empty(len(positions), bool)
    run_end[:-1] = new_run[1:]
    run_end[-1] = True
    length = positions - run_start + 1
    return positions[run_end & (length % 2 == 1)] + 1


def scan_array(block: bytes) -> Scan:
    """Elements of a JSON array in ``block``, which starts inside the array between two elements
    (just after '[', or after an element), so outside any string."""
    raw = np.frombuffer(block, np.uint8)
    quote = raw == _QUOTE
    if block.find(b"\\") >= 0:
        esc = _escaped(np.flatnonzero(raw == _BACKSLASH))
        quote[esc[esc < len(quote)]] = False
    # a byte is inside a string when an odd number of real quotes come before it (or it is one)
    inside = np.bitwise_xor.accumulate(quote.view(np.uint8))
    cls = np.frombuffer(block.translate(_BRACKETS), np.uint8)
    bpos = np.flatnonzero(cls)
    bpos = bpos[inside[bpos] == 0]
    bkind = cls[bpos]
    opens = bkind <= _OPEN_ARR
    depth = np.cumsum(np.where(opens, 1, -1))  # depth after each bracket; the array's own is 0
    closing = np.flatnonzero(depth < 0)
    why = Stop.MORE
    if len(closing):
        # the array's end (or, in a broken document, a stray closer): what follows the last
        # whole element is left to the generic decoder, which checks it
        k = closing[0]
        why = Stop.END if bkind[k] == _CLOSE_ARR else Stop.ODD
        bpos, bkind, opens, depth = bpos[:k], bkind[:k], opens[:k], depth[:k]
    first = opens & (depth == 1)
    starts, start_kind = bpos[first], bkind[first]
    ends = bpos[~opens & (depth == 0)] + 1
    not_obj = np.flatnonzero(start_kind != _OPEN_OBJ)
    if len(not_obj):
        # elements before the first non-object are whole; the scan stops where that one begins
        starts, ends, why = starts[: not_obj[0]], ends[: not_obj[0]], Stop.ODD
    starts = starts[: len(ends)]
    return Scan(starts, ends, int(ends[-1]) if len(ends) else 0, why)


def char_offsets(block: bytes, byte_offsets: np.ndarray) -> np.ndarray:
    """Character offsets of byte offsets in UTF-8 ``block`` (identical when it is ASCII)."""
    if block.isascii() or not len(byte_offsets):
        return byte_offsets
    raw = np.frombuffer(block, np.uint8)
    continuation = np.concatenate(([0], np.cumsum((raw & 0xC0) == 0x80)))
    return byte_offsets - continuation[byte_offsets]
