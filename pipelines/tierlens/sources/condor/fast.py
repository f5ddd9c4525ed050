"""History files read a block at a time, as arrays: the fast path of ``history.history_batches``.

A block (``READ_BYTES``, cut after a banner line) is read by one compiled pass (``_scan``, numba)
that fills per-line arrays: where the line starts and ends, whether it is a ``*** `` banner, its
name (the leading run of name characters) and `` = ``, where its value starts and ends, its
bracket balance, quotes and backslashes. The lines, cut into name / `` = `` / value / rest, are one
Arrow string array over the block's bytes, without copying. Each ad is the run of lines between
two banners (ad number = running count of banners). Names are grouped by a compiled hash table
(every match confirmed byte by byte), so the checks on names (well-formed, one of ``NEEDED``, a
needed name spelt in another case) run once per distinct name; numbers are checked and read by a
compiled loop (``_numbers``).

An ad is read here, without classad2, only when classad2 would read the same thing:

* every line is ``Name = value`` with a well-formed name, its last character is not one that leaves
  an expression open (an operator, an opening bracket, a comma, a blank), and its quotes and
  brackets balance (checked per line, stricter than per ad);
* every needed value is a literal written the plain way HTCondor writes it: a decimal integer of up
  to 18 digits without sign or leading zero, a real ``123.45[e±NN]``, a string without escapes, a
  list of such strings, or true/false/undefined/error in any case;
* every other value is a plain string or number, or classad2 parses it as the value of a line
  (``_parses``: once per distinct value, cached; expressions such as Requirements repeat from job
  to job), so an ad classad2 would reject for a damaged value it does not need is rejected too;
* no needed attribute appears twice or in another spelling, the ad has a GlobalJobId string, its
  storage type is ASCII, and its scratch devices (when present) are a list.

Any other ad goes to classad2 (``history.parse_ad``), so its row is exactly what classad2 gives:
tests compare both paths on every ad. The checks on names and values are narrower than the
ClassAd grammar on purpose; what they do not recognise costs time, never a wrong row.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

#: bytes read from a history file at a time (a block ends at its last banner line)
READ_BYTES = 1 << 24
_BANNER_AFTER_NEWLINE = b"\n*** "

NAME = r"^[A-Za-z_][A-Za-z0-9_.]*$"
_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_."
#: the plain numbers _numbers reads (tests check it against this pattern)
_INT_OR_REAL = r"^(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+(?:[eE][-+]?[0-9]{1,2})?)?$"
_STRING_LIST = r'^\{[ \t]*(?:"[^"\\]*"[ \t]*(?:,[ \t]*"[^"\\]*"[ \t]*)*)?\}$'
_KEYWORDS = pa.array(["true", "false", "undefined", "error"])
#: characters Python's str.strip() removes from an ASCII string
ASCII_SPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _lut(chars: str, value: int = 1, dtype=np.uint8) -> np.ndarray:
    t = np.zeros(256, dtype)
    t[np.frombuffer(chars.encode(), np.uint8)] = value
    return t


#: a value ending in one of these was cut or leaves an expression open
_CUT = _lut("-+*/%&|^<>=!?:,([{. \t\r").astype(bool)
_LETTER = _lut("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_").astype(bool)
_NAME_BYTES = _lut(_NAME_CHARS).astype(bool)
#: what the scan counts per line: the newline ends it, then brackets, quotes, backslashes
_NEWLINE, _QUOTE, _BACKSLASH = 1, 2, 3
_SPECIAL = np.zeros(256, np.uint8)
_FNV_BASIS, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
for _i, _c in enumerate('\n"\\()[]{}', 1):
    _SPECIAL[ord(_c)] = _i

#: value kinds of a needed attribute line
NOT_LITERAL, NUMBER, STRING, LIST, TRUE, OTHER_LITERAL = range(6)


def blocks(path: Path) -> Iterator[tuple[int, bytearray]]:
    """(file offset, bytes) of consecutive blocks of a history file, each ending after a banner
    line (the last block: at the end of the file). Each block is read into its own buffer, after
    what the last read left beyond its last banner."""
    opener = gzip.open if path.suffix == ".gz" else open
    base, rest = 0, b""
    with opener(path, "rb") as f:
        while True:
            block = bytearray(len(rest) + READ_BYTES)
            block[: len(rest)] = rest
            got = f.readinto(memoryview(block)[len(rest) :])
            del block[len(rest) + got :]
            if not got:
                break
            i = block.rfind(_BANNER_AFTER_NEWLINE)
            end = block.find(b"\n", i + 1) if i >= 0 else -1
            if end < 0:  # no complete banner line in this read; the next brings one
                rest = block
                continue
            rest = block[end + 1 :]
            del block[end + 1 :]
            yield base, block
            base += len(block)
    if rest:
        yield base, rest


@dataclass
class Block:
    """What a block holds: its fast ads as needed-attribute columns, and the others' text."""

    needed: tuple[str, ...]  # the attribute names of the columns
    offsets: np.ndarray  # file offset of each fast ad
    numbers: np.ndarray  # (len(NEEDED), ads) float64; NaN: absent or not a number
    text_at: np.ndarray  # (len(NEEDED), ads) position in values of a string; -1: none
    values: pa.Array  # the needed values of the block's lines, quotes dropped
    true: dict[str, np.ndarray]  # needed name -> value is the literal true
    lists: dict[str, pa.Array]  # needed name -> list<string> per ad; null: not a list
    slow: list[tuple[int, bytes]]  # (file offset, text) of the ads classad2 reads

    def __len__(self) -> int:
        return len(self.offsets)

    def number(self, name: str) -> np.ndarray:
        return self.numbers[self.needed.index(name)]

    def string(self, name: str) -> pa.Array:
        """The attribute's string per ad; null where absent, empty or not a string."""
        at = self.text_at[self.needed.index(name)]
        return self.values.take(pa.array(at, mask=at < 0)).cast(pa.string())


def _np(a: pa.Array) -> np.ndarray:
    return a.to_numpy(zero_copy_only=False)


def _segments(
    starts: np.ndarray, ends: np.ndarray, banner: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per ad (the lines between banners): first and end byte, number of lines; per line: ad."""
    seg = np.cumsum(banner, dtype=starts.dtype) - banner
    where = np.flatnonzero(banner)
    first = np.r_[0, ends[where] + 1]
    stops = np.r_[starts[where], size]
    lines = np.bincount(seg[~banner], minlength=len(first))
    return seg, first, stops, lines


class ByteClasses(NamedTuple):
    """What the scan looks a byte up in (256 entries each)."""

    name: np.ndarray  # may stand in a name
    special: np.ndarray  # 0, or what the scan counts: _NEWLINE, _QUOTE, _BACKSLASH, then brackets
    cut: np.ndarray  # a value ending in it was cut or leaves an expression open


class LineScan(NamedTuple):
    """The per-line arrays one pass of ``_scan`` fills (``cuts``: 4 a line, and the block's end)."""

    cuts: np.ndarray  # line start, name end, value start, value end (quotes dropped)
    ends: np.ndarray  # position of the newline
    value_start: np.ndarray
    value_end: np.ndarray
    first: np.ndarray  # first and last byte of the value (0: empty)
    last: np.ndarray
    banner: np.ndarray
    quoted: np.ndarray  # the value is "..." with no other quote in the line
    bad: np.ndarray  # not 'Name = value', or cut, unbalanced, odd quotes
    backslashes: np.ndarray
    name_hash: np.ndarray  # FNV-1a of the name piece


#: the array types of a LineScan (positions: 32-bit or 64-bit, chosen per block)
_SCAN_DTYPES = {
    "first": np.uint8,
    "last": np.uint8,
    "banner": bool,
    "quoted": bool,
    "bad": bool,
    "backslashes": np.int32,
    "name_hash": np.uint64,
}


def _empty_scan(n: int, itype: type) -> LineScan:
    """A LineScan for n lines, every array sized and typed from its field name."""
    return LineScan(
        **{
            name: np.empty(4 * n + 1 if name == "cuts" else n, _SCAN_DTYPES.get(name, itype))
            for name in LineScan._fields
        }
    )


@dataclass
class _Lines:
    """A block's lines as arrays: the scan's, where each line starts, the line cut after its name
    and " = ", and the line's own checks. ``pieces`` holds four views of ``data`` a line: name,
    " = " (and an opening quote), value, the rest (closing quote, newline)."""

    data: bytes
    scan: LineScan
    pieces: pa.Array
    needed: np.ndarray  # index in NEEDED of the line's name, -1: not needed

    @property
    def starts(self) -> np.ndarray:
        return self.scan.cuts[0:-1:4]


_BYTES = ByteClasses(_NAME_BYTES, _SPECIAL, _CUT)


@njit(cache=True, nogil=True)
def _scan(u, classes, out):
    """One pass over a block's bytes (``u`` ends with a newline), filling ``out`` (a LineScan):
    ``cuts`` gets the four pieces of each line, name / " = " / value / rest, and ``name_hash``
    the FNV-1a hash of the name piece (here it costs next to nothing)."""
    name_bytes, special, cut = classes.name, classes.special, classes.cut
    cuts, ends, banner, name_hash = out.cuts, out.ends, out.banner, out.name_hash
    i = 0
    for line in range(ends.shape[0]):
        s = i
        # each test reads a byte only after the one before it was not the newline
        banner[line] = u[s] == 42 and u[s + 1] == 42 and u[s + 2] == 42 and u[s + 3] == 32
        j = s
        h = _FNV_BASIS
        while name_bytes[u[j]]:
            h = (h ^ u[j]) * _FNV_PRIME
            j += 1
        sep = j > s and u[j] == 32 and u[j + 1] == 61 and u[j + 2] == 32
        k = j  # the name holds no special byte: count from its end
        paren = square = brace = quotes = slashes = 0
        while True:
            c = special[u[k]]
            if c:
                if c == 1:
                    break
                elif c == 2:
                    quotes += 1
                elif c == 3:
                    slashes += 1
                elif c == 4:
                    paren += 1
                elif c == 5:
                    paren -= 1
                elif c == 6:
                    square += 1
                elif c == 7:
                    square -= 1
                elif c == 8:
                    brace += 1
                else:
                    brace -= 1
            k += 1
        a, b, name_end = (j + 3, k, j) if sep else (s, s, s)
        full = b > a
        f = u[a] if full else 0
        t = u[b - 1] if full else 0
        q = 1 if full and f == 34 and t == 34 and b - a >= 2 and quotes == 2 else 0
        ends[line], out.value_start[line], out.value_end[line], out.first[line], out.last[line] = k, a, b, f, t
        out.quoted[line] = q == 1
        out.backslashes[line] = slashes
        name_hash[line] = h if sep else _FNV_BASIS
        out.bad[line] = not banner[line] and (
            not full or cut[t] or paren != 0 or square != 0 or brace != 0 or quotes % 2 == 1
        )
        cuts[4 * line], cuts[4 * line + 1], cuts[4 * line + 2], cuts[4 * line + 3] = s, name_end, a + q, b - q
        i = k + 1
    cuts[4 * ends.shape[0]] = u.shape[0]


def _cut_lines(data: bytes, needed: tuple[str, ...]) -> _Lines:
    u = np.frombuffer(data, np.uint8)
    # 32-bit positions where the block allows: half the memory traffic of every step below
    strings, itype = _string_type(data)
    n = int(np.count_nonzero(u == 10))
    scan = _empty_scan(n, itype)
    _scan(u, _BYTES, scan)
    cuts = scan.cuts
    pieces = strings.from_buffers(4 * n, pa.py_buffer(cuts), pa.py_buffer(data))
    well_formed, needed_index = _names(u, cuts, scan.name_hash, pieces, needed)
    scan.bad[:] |= ~scan.banner & ~well_formed
    return _Lines(data, scan, pieces, needed_index)


def _string_type(data) -> tuple[type, type]:
    return (pa.StringArray, np.int32) if 4 * len(data) < 2**31 else (pa.LargeStringArray, np.int64)


def _names(u, cuts, name_hash, pieces: pa.Array, needed: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per line: the name is well-formed (and not a needed name spelt in another case, which
    classad2 would take for it); the name's index in ``needed`` or -1. Checked once per
    distinct name."""
    grouped = _group_pieces(u, _words(u), cuts[0:-1:4], cuts[1::4], name_hash, _TABLE_BITS)
    if grouped is None:
        codes = pc.take(pieces, pa.array(np.arange(0, len(pieces), 4))).dictionary_encode()
        distinct, at = codes.dictionary, _np(codes.indices)
    else:
        at, first = grouped
        distinct = pc.take(pieces, pa.array(4 * first))
    needed_arr = pa.array(needed)
    exact = _np(pc.index_in(distinct, value_set=needed_arr).fill_null(-1))
    folded = _np(pc.index_in(pc.ascii_lower(distinct), value_set=pc.ascii_lower(needed_arr)).fill_null(-1))
    good = _np(pc.match_substring_regex(distinct, NAME)) & (exact == folded)
    return good[at], exact[at]


def _words(data) -> np.ndarray:
    """words[i]: the 8 bytes from data[i] on as one (unaligned) uint64, for i < len(data) - 7."""
    return np.ndarray(shape=(max(len(data) - 7, 0),), dtype=np.uint64, buffer=data, strides=(1,))


# allocates nothing: compiled without reference counting, which would cost more than the compare
@njit(cache=True, nogil=True, _nrt=False)
def _same_piece(u, words, a, b, other):
    """u[a:b] equals the bytes of the same length from ``other`` on; 8 bytes at a time."""
    k, n = 0, b - a
    while k + 8 <= n:
        if words[a + k] != words[other + k]:
            return False
        k += 8
    if k == n:
        return True
    if max(a, other) + k < words.shape[0]:  # the tail, from one word each (its high bytes dropped)
        return ((words[a + k] ^ words[other + k]) << np.uint64(8 * (8 - n + k))) == 0
    for i in range(k, n):
        if u[a + i] != u[other + i]:
            return False
    return True


#: _group_pieces' table: 2**12 slots, for at most 1024 distinct pieces (names, values) a block;
#: beyond, Arrow groups them
_TABLE_BITS = 12


@njit(cache=True, nogil=True)
def _group_pieces(u, words, starts, ends, hashes, table_bits):
    """Per piece u[starts[i]:ends[i]], its number among the distinct pieces (in order of first
    appearance), and the first piece of each; None when there are more than a quarter of
    2**table_bits. An open-addressing table keyed by the pieces' hashes, every match confirmed
    byte by byte; a slot holds what the match needs, so a look-up follows no index."""
    n = starts.shape[0]
    group = np.empty(n, np.int32)
    first = np.empty(n, np.int64)
    size = 1 << table_bits
    mask, shift = size - 1, np.uint64(64 - table_bits)
    slot_group = np.full(size, -1, np.int32)
    slot_hash = np.empty(size, np.uint64)
    slot_at = np.empty(size, np.int64)
    slot_len = np.empty(size, np.int64)
    groups = 0
    for line in range(n):
        a, b, h = starts[line], ends[line], hashes[line]
        i = np.int64((h * _GOLDEN) >> shift)  # Fibonacci hashing: FNV's high bits miss the last byte
        while True:
            g = slot_group[i]
            if g < 0 or (slot_hash[i] == h and slot_len[i] == b - a and _same_piece(u, words, a, b, slot_at[i])):
                break
            i = (i + 1) & mask
        if g < 0:
            if 4 * groups >= size:
                return None
            g = groups
            groups += 1
            slot_group[i], slot_hash[i], slot_at[i], slot_len[i], first[g] = g, h, a, b - a, line
        group[line] = g
    return group, first[:groups]


def _kinds(lines: _Lines, sel: np.ndarray, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """What kind of literal the value of each selected line is, and its number (NaN: none)."""
    kind = np.full(len(sel), NOT_LITERAL, np.int8)
    first = lines.scan.first[sel]
    string = lines.scan.quoted[sel] & (lines.scan.backslashes[sel] == 0)
    kind[string] = STRING
    # "" is a literal, but no text for the row (as _str)
    kind[string & ((lines.scan.value_end - lines.scan.value_start)[sel] == 2)] = OTHER_LITERAL
    # numbers read by _numbers; the few it cannot give exactly by Arrow's cast
    scan = lines.scan
    how, number = _numbers(np.frombuffer(lines.data, np.uint8), scan.value_start[sel], scan.value_end[sel])
    kind[how != NO_NUMBER] = NUMBER
    other = np.flatnonzero(how == TO_CAST)
    if len(other):
        number[other] = _np(pc.cast(values.take(pa.array(other)), pa.float64()))
    lists = np.flatnonzero(first == 123)
    if len(lists):
        text = values.take(pa.array(lists))
        kind[lists[_np(pc.match_substring_regex(text, _STRING_LIST))]] = LIST
    words = np.flatnonzero(_LETTER[first])
    if len(words):
        word = pc.ascii_lower(values.take(pa.array(words)))
        kind[words[_np(pc.is_in(word, value_set=_KEYWORDS))]] = OTHER_LITERAL
        kind[words[_np(pc.equal(word, "true"))]] = TRUE
    return kind, number


def read_block(data: bytes | bytearray, base: int, needed: tuple[str, ...], numbers: tuple[str, ...] = ()) -> Block:
    """The ads of one block; ``data`` ends after a banner line or at the end of the file.
    ``numbers``: the needed attributes the row reads as numbers (any other value: classad2)."""
    size = len(data)
    if not data.endswith(b"\n"):
        data += b"\n"
    lines = _cut_lines(data, needed)
    seg, seg_start, seg_stop, seg_lines = _segments(lines.starts, lines.scan.ends, lines.scan.banner, size)
    nseg = len(seg_start)
    slow = np.bincount(seg[lines.scan.bad], minlength=nseg) > 0
    if not data.isascii():
        slow |= _not_utf8(data, seg_start, seg_stop)

    slow[seg[_unparsed(data, lines, ~lines.scan.banner & ~slow[seg] & (lines.needed < 0))]] = True
    sel = np.flatnonzero(~lines.scan.banner & (lines.needed >= 0) & ~slow[seg])
    # the needed values, in a short array of their own: later look-ups stay in cache
    values = pc.take(lines.pieces, pa.array(4 * sel + 2))
    value_at = np.arange(len(sel))
    kind, number = _kinds(lines, sel, values)
    ad, ks = seg[sel], lines.needed[sel]
    slow[ad[kind == NOT_LITERAL]] = True
    key = ad * len(needed) + ks
    slow[ad[np.bincount(key, minlength=nseg * len(needed))[key] > 1]] = True  # twice: classad2
    _demand(slow, nseg, ad, ks, kind, values, value_at, needed, numbers)

    # ads without lines (two banners in a row, the empty tail) are no ads at all
    fast = ~slow & (seg_lines > 0)
    slow &= seg_lines > 0
    # text between banners that is blank is no ad (as split_ads)
    slow_ads = [
        (base + a, data[a:b]) for a, b in zip(seg_start[slow].tolist(), seg_stop[slow].tolist()) if data[a:b].strip()
    ]
    nads = int(fast.sum())
    index = np.full(nseg, -1, np.int64)
    index[fast] = np.arange(nads)
    keep = fast[ad]
    columns = _columns(values, needed, nads, index[ad[keep]], ks[keep], kind[keep], value_at[keep], number[keep])
    return Block(needed, base + seg_start[fast], *columns, slow=slow_ads)


def _unparsed(data, lines: _Lines, among: np.ndarray) -> np.ndarray:
    """The lines (of those in ``among``) whose value classad2 would not parse. Plain strings and
    numbers parse; any other value is parsed by classad2 once per distinct value, as in the ad
    (expressions mostly repeat from job to job)."""
    scan = lines.scan
    lines_at = np.flatnonzero(among & ~(scan.quoted & (scan.backslashes == 0)))
    how, _ = _numbers(np.frombuffer(data, np.uint8), scan.value_start[lines_at], scan.value_end[lines_at])
    lines_at = lines_at[how == NO_NUMBER]
    if not len(lines_at):
        return lines_at
    return lines_at[~_parse_each(data, scan.value_start[lines_at], scan.value_end[lines_at])]


#: number kinds of a value for _numbers
NO_NUMBER, EXACT, TO_CAST = 0, 1, 2
_EXACT_POWERS = np.array([10.0**k for k in range(23)])  # 1e0..1e22, all exact in float64


@njit(cache=True, nogil=True)
def _numbers(u, starts, ends):
    """Per value u[starts[i]:ends[i]]: whether it is a number written the plain way (as
    _INT_OR_REAL: an integer of 1 to 18 digits without a leading 0, as classad2 reads 010 as
    octal; then maybe a fraction, then maybe an exponent of 1 or 2 digits), and its value.
    EXACT: the value is exact here; TO_CAST: a number whose value Arrow's cast must give.
    A value is exact when its digits, as an integer M, are at most 2**53 and its power of ten
    at most 22 either way: M and 10**k are then exact doubles, and one IEEE multiplication or
    division rounds correctly, as a correct parse of the text does."""
    kind = np.zeros(starts.shape[0], np.int8)
    value = np.full(starts.shape[0], np.nan)
    for i in range(starts.shape[0]):
        a, b = starts[i], ends[i]
        k, m, digits = a, 0, 0
        while k < b and 48 <= u[k] <= 57 and k - a < 19:
            m = m * 10 + (np.int64(u[k]) - 48)
            k += 1
        if k == a or k - a > 18 or (u[a] == 48 and k - a > 1):
            continue
        digits, shift = k - a, 0
        if k < b and u[k] == 46:  # a fraction: at least one digit
            k += 1
            f = k
            while k < b and 48 <= u[k] <= 57:
                if digits < 18:
                    m = m * 10 + (np.int64(u[k]) - 48)
                    shift -= 1
                digits += 1
                k += 1
            if k == f:
                continue
            if k < b and (u[k] == 101 or u[k] == 69):  # an exponent: sign, one or two digits
                k += 1
                sign = 1
                if k < b and (u[k] == 43 or u[k] == 45):
                    sign = 1 if u[k] == 43 else -1
                    k += 1
                e = 0
                f = k
                while k < b and 48 <= u[k] <= 57 and k - f < 3:
                    e = e * 10 + (np.int64(u[k]) - 48)
                    k += 1
                if k == f or k - f > 2:
                    continue
                shift += sign * e
        if k != b:
            continue
        if digits > 18 or m > (1 << 53) or shift > 22 or shift < -22:
            kind[i] = TO_CAST
        else:
            kind[i] = EXACT
            value[i] = m * _EXACT_POWERS[shift] if shift >= 0 else m / _EXACT_POWERS[-shift]
    return kind, value


def _views(data, starts: np.ndarray, stops: np.ndarray) -> pa.Array:
    """data[starts[i]:stops[i]] for each i (ascending, not overlapping) as one string array."""
    strings, itype = _string_type(data)
    cuts = np.empty(2 * len(starts) + 1, itype)
    cuts[0:-1:2], cuts[1::2] = starts, stops
    cuts[-1] = len(data)
    pieces = strings.from_buffers(2 * len(starts), pa.py_buffer(cuts), pa.py_buffer(data))
    return pieces.take(pa.array(np.arange(0, 2 * len(starts), 2)))


def _parse_each(data, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Per value data[starts[i]:stops[i]] (in ads that are UTF-8): classad2 parses it as the
    value of an attribute line. Asked once per distinct value."""
    u = np.frombuffer(data, np.uint8)
    words = _words(u)
    grouped = _group_pieces(u, words, starts, stops, _sampled_hashes(u, words, starts, stops), _TABLE_BITS)
    if grouped is None:
        codes = _views(data, starts, stops).dictionary_encode()
        texts, at = codes.dictionary.to_pylist(), _np(codes.indices)
    else:
        at, first = grouped
        texts = [bytes(data[a:b]).decode() for a, b in zip(starts[first].tolist(), stops[first].tolist())]
    return np.array([_parses(v) for v in texts], bool)[at]


@njit(cache=True, nogil=True)
def _sampled_hashes(u, words, starts, ends):
    """A hash of each piece from its length and three of its 8-byte words (first, middle, last;
    shorter pieces: every byte): values can be long, and a collision only costs a comparison."""
    out = np.empty(starts.shape[0], np.uint64)
    for i in range(starts.shape[0]):
        a, b = starts[i], ends[i]
        h = _FNV_BASIS ^ np.uint64(b - a)
        if b - a >= 8:  # the last word ends inside the piece, before the block's last byte
            h = (h ^ words[a]) * _FNV_PRIME
            h = (h ^ words[(a + b) // 2 - 4]) * _FNV_PRIME
            h = (h ^ words[b - 8]) * _FNV_PRIME
        else:
            for k in range(a, b):
                h = (h ^ u[k]) * _FNV_PRIME
        out[i] = h
    return out


@functools.lru_cache(maxsize=4096)  # bounded: values can be long
def _parses(value: str) -> bool:
    """As parse_ad sees a line: the attribute, and the line after it, made it into the ad."""
    import classad2

    try:
        ad = next(iter(classad2.parseAds(f"A = {value}\nB__ = 1\n")), None)
    except Exception:  # noqa: BLE001 - classad2 raises a few kinds
        return False
    return ad is not None and len(ad) == 2


def _not_utf8(data: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Per ad: its bytes are not UTF-8 (classad2 reads it as decoded with replacement)."""
    try:
        data.decode("utf-8")
        return np.zeros(len(starts), bool)
    except UnicodeDecodeError:
        pass
    out = np.zeros(len(starts), bool)
    for i, (a, b) in enumerate(zip(starts.tolist(), stops.tolist())):
        try:
            data[a:b].decode("utf-8")
        except UnicodeDecodeError:
            out[i] = True
    return out


def _demand(slow, nseg, ad, ks, kind, values, value_at, needed, numbers=()) -> None:
    """Ads that need classad2 for what the row makes of a value: no GlobalJobId string, a
    storage type that is not ASCII (Python's and Arrow's lower() differ), devices as a string; and
    the ads the slow path rejects or splits: a number attribute (``numbers``) holding anything but
    a number (a string, a list, a boolean; undefined included, the rare case), a storage type
    without LastRemoteHost or RemoteHost (the tag would have no node)."""
    gj = (ks == needed.index("GlobalJobId")) & (kind == STRING)
    has = np.zeros(nseg, bool)
    has[ad[gj]] = True  # STRING: not empty
    slow |= ~has
    st = np.flatnonzero((ks == needed.index("MachineAttrTierlensStorageType0")) & (kind == STRING))
    ascii_ = _np(pc.string_is_ascii(pc.take(values, pa.array(value_at[st]))))
    slow[ad[st[~ascii_]]] = True
    slow[ad[(ks == needed.index("MachineAttrTierlensScratchDevices0")) & (kind == STRING)]] = True
    number_at = np.array([needed.index(n) for n in numbers if n in needed], np.int64)
    slow[ad[np.isin(ks, number_at) & (kind != NUMBER)]] = True
    host = np.zeros(nseg, bool)
    host[ad[np.isin(ks, [needed.index(n) for n in ("LastRemoteHost", "RemoteHost")]) & (kind == STRING)]] = True
    tagged = np.zeros(nseg, bool)
    tagged[ad[st]] = True
    slow |= tagged & ~host


def _columns(values, needed, nads, ad, ks, kind, value_at, number):
    """Pivot the needed values of the fast ads: one row per needed attribute, one column per ad."""

    def matrix(of_kind, content, fill, dtype):
        m = np.full((len(needed), nads), fill, dtype)
        sel = kind == of_kind
        m[ks[sel], ad[sel]] = content(sel) if callable(content) else content
        return m

    numbers = matrix(NUMBER, lambda sel: number[sel], np.nan, np.float64)
    text_at = matrix(STRING, lambda sel: value_at[sel], -1, np.int64)
    true = matrix(TRUE, True, False, bool)
    list_at = matrix(LIST, lambda sel: value_at[sel], -1, np.int64)
    lists = {name: _string_lists(values, list_at[i]) for i, name in enumerate(needed) if (list_at[i] >= 0).any()}
    return numbers, text_at, values, dict(zip(needed, true)), lists


def _string_lists(values: pa.Array, at: np.ndarray) -> pa.Array:
    """``{ "a", "b" }`` (checked: no escapes, no quotes inside) -> ["a", "b"]; null where at < 0."""
    kind = np.int64 if pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(values.buffers()[1], kind)[values.offset : values.offset + len(values) + 1]
    text = np.frombuffer(values.buffers()[2], np.uint8)
    lists, strings, chars = _unquote_lists(text, offsets, at)
    items = pa.StringArray.from_buffers(len(strings) - 1, pa.py_buffer(strings), pa.py_buffer(chars))
    return pa.ListArray.from_arrays(pa.array(lists), items, mask=pa.array(at < 0))


@njit(cache=True, nogil=True)
def _unquote_lists(text, offsets, at):
    """The strings between the 1st and 2nd, 3rd and 4th... quote of each value text[offsets[a]:
    offsets[a + 1]] for a in ``at`` (none where a < 0): list offsets, string offsets, characters."""
    room = 0
    for a in at:
        if a >= 0:
            room += offsets[a + 1] - offsets[a]
    lists = np.zeros(at.shape[0] + 1, np.int32)
    strings = np.zeros(room // 2 + 1, np.int32)
    chars = np.empty(room, np.uint8)
    n, size = 0, 0
    for i in range(at.shape[0]):
        a = at[i]
        if a >= 0:
            inside = False
            for k in range(offsets[a], offsets[a + 1]):
                if text[k] == 34:
                    if inside:
                        n += 1
                        strings[n] = size
                    inside = not inside
                elif inside:
                    chars[size] = text[k]
                    size += 1
        lists[i + 1] = n
    return lists, strings[: n + 1], chars[:size]


# ------------------------------------------------------------------------------ columns → rows


def _or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's ``a or b`` on numbers where NaN stands for None: b when a is None or 0."""
    return np.where(np.isnan(a) | (a == 0), b, a)


def _timestamps(seconds: np.ndarray, valid: np.ndarray) -> pa.Array:
    """As datetime.fromtimestamp(s, utc) does it: whole seconds, then the fraction rounded to
    microseconds half to even; null where not valid or not above 0."""
    ok = valid & (seconds > 0)
    s = np.where(ok, seconds, 0.0)
    whole = np.trunc(s)
    micros = whole.astype(np.int64) * 1_000_000 + np.rint((s - whole) * 1e6).astype(np.int64)
    return pa.array(micros, pa.int64(), mask=~ok).cast(pa.timestamp("us", tz="UTC"))


def _ints(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    """int(v) (towards zero) where valid, else null."""
    return pa.array(np.trunc(np.where(valid, values, 0.0)).astype(np.int64), mask=~valid).cast(type_)


def rows(
    block: Block,
    cluster: str,
    job_schema: pa.Schema,
    tag_schema: pa.Schema,
    batch_system: str,
    tagger: str,
    job_states: dict[int, str],
):
    """The job table and job_tag table (with the positions of the tagged ads) of a block's fast
    ads: ``history.ad_rows`` as column expressions. Tests compare the two on every ad."""
    n = len(block)
    num = block.number
    s = _Strings(block)
    gjid = s["GlobalJobId"]
    clusters = pc.coalesce(s["TierlensCluster"], pa.scalar(cluster))
    computed = pc.binary_join_element_wise(batch_system, clusters, gjid, ".")
    identity = _own_identity(s["TierlensJobIdentity"], gjid, computed)
    host = pc.coalesce(s["LastRemoteHost"], s["RemoteHost"])
    node = pc.replace_substring_regex(host, "^.*@", "")  # rsplit("@", 1)[-1]
    start = _or(num("JobCurrentStartDate"), num("JobStartDate"))
    started = ~np.isnan(start) & (start != 0)
    end = num("CompletionDate")
    end = np.where((np.isnan(end) | (end == 0)) & started, num("EnteredCurrentStatus"), end)
    status, code = num("JobStatus"), num("ExitCode")
    done = status == 4
    cores = np.ones(n)
    for name in ("RequestCpus", "CpusProvisioned"):  # the first that is >= 1 wins
        v = num(name)
        cores = np.where(v >= 1, v, cores)
    wall = num("RemoteWallClockTime")
    for name in ("RemoteWallClockTime", "LastRemoteWallClockTime", "CommittedTime"):
        v = num(name)
        wall = np.where(v > 0, v, wall)
    labels = ["UNKNOWN", "COMPLETED", "FAILED", *job_states.values()]
    state = np.zeros(n, np.int8)
    for i, value in enumerate(job_states, 3):
        state[np.trunc(status) == value] = i
    failed = block.true["ExitBySignal"] | ~(np.isnan(code) | (code == 0))
    state[done] = np.where(failed[done], 2, 1)
    kb = {name: num(name) for name in ("BlockReadKbytes", "BlockWriteKbytes")}
    const = pa.repeat(pa.scalar(batch_system, pa.string()), n)
    empty = pa.repeat(pa.scalar("", pa.string()), n)
    job = table_by_name(
        job_schema,
        n,
        {
            "batch_system": const,
            "cluster": clusters,
            "job_id": gjid,
            "step_id": empty,
            "job_identity": identity,
            "user_name": s["Owner"],
            "account": pc.coalesce(s["AccountingGroup"], s["AcctGroup"]),
            "vo": s["x509UserProxyVOName"],
            "node": node,
            "node_list": node,
            "submit_time": _timestamps(num("QDate"), np.ones(n, bool)),
            "start_time": _timestamps(start, np.ones(n, bool)),
            "end_time": _timestamps(end, started),
            "allocated_cores": _ints(cores, np.ones(n, bool), pa.int32()),
            "cpu_user_seconds": pa.array(num("RemoteUserCpu"), from_pandas=True),
            "cpu_system_seconds": pa.array(num("RemoteSysCpu"), from_pandas=True),
            "wall_seconds": pa.array(wall, from_pandas=True),
            "state": pa.array(labels, pa.string()).take(pa.array(state)),
            "exit_code": _ints(code, ~np.isnan(code) & done, pa.int32()),
            "bytes_read": _ints(kb["BlockReadKbytes"] * 1024, ~np.isnan(kb["BlockReadKbytes"]), pa.int64()),
            "bytes_written": _ints(kb["BlockWriteKbytes"] * 1024, ~np.isnan(kb["BlockWriteKbytes"]), pa.int64()),
            # job_class and partition: none in a history ad; sluid: Slurm's alone
        },
    )
    storage = s["MachineAttrTierlensStorageType0"]
    tagged = _np(pc.is_valid(storage))
    devices = block.lists.get("MachineAttrTierlensScratchDevices0", pa.nulls(n, pa.list_(pa.string())))
    tag = table_by_name(
        tag_schema,
        n,
        {
            "batch_system": const,
            "cluster": clusters,
            "job_id": gjid,
            "step_id": empty,
            "node": pc.coalesce(node, ""),
            "storage_type": pc.ascii_lower(pc.utf8_trim(storage, ASCII_SPACE)),
            "device_models": devices,
            "scratch_path": s["MachineAttrTierlensScratchPath0"],
            "ab_arm": pc.coalesce(s["MachineAttrTierlensAbArm0"], s["TierlensAbArm"]),
            "cache_route": s["MachineAttrTierlensCacheRoute0"],
            "tagged_at": _timestamps(start, np.ones(n, bool)),
            "tagger": pa.repeat(pa.scalar(tagger, pa.string()), n),
        },
    ).filter(pa.array(tagged))
    return job, tag, np.flatnonzero(tagged)


def table_by_name(schema: pa.Schema, n: int, columns: dict[str, pa.Array]) -> pa.Table:
    """``n`` rows of ``schema`` from columns by field name; a field not given is null, a name not
    in the schema is an error (positions come from the schema, so a new field is one edit)."""
    unknown = columns.keys() - set(schema.names)
    if unknown:
        raise KeyError(f"not fields of the schema: {sorted(unknown)}")
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema
    )


class _Strings(dict):
    """Block.string(name), each asked once."""

    def __init__(self, block: Block) -> None:
        super().__init__()
        self.block = block

    def __missing__(self, name: str) -> pa.Array:
        self[name] = self.block.string(name)
        return self[name]


def _own_identity(identity: pa.Array, gjid: pa.Array, computed: pa.Array) -> pa.Array:
    """The job's identity when it ends in "." + its GlobalJobId, else the computed one. Nearly
    always it is the computed one; the few others are looked at one by one."""
    same = _np(pc.fill_null(pc.equal(identity, computed), False))
    other = np.flatnonzero(~same & _np(pc.is_valid(identity)))
    keep = same.copy()
    for i, ident, g in zip(
        other, pc.take(identity, pa.array(other)).to_pylist(), pc.take(gjid, pa.array(other)).to_pylist()
    ):
        keep[i] = ident.endswith("." + g)
    return pc.if_else(pa.array(keep), identity, computed)
