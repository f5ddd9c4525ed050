"""Sizes as people write them (11TB, 500GiB, 1e12) and as tierlens prints them, and signed figures
as tierlens prints them.

Sizes are used wherever a capacity or a file size is given as text: cache configurations (the
simulator, the Airflow settings) and the device probe. Errors are ValueError; the command line
turns them into a usage error, orchestration lets them fail the task.
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1,
    "B": 1,
    "K": 10**3,
    "KB": 10**3,
    "M": 10**6,
    "MB": 10**6,
    "G": 10**9,
    "GB": 10**9,
    "T": 10**12,
    "TB": 10**12,
    "P": 10**15,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_bytes(text: str) -> int:
    """'11TB' (decimal), '10TiB' (binary) or a plain number of bytes."""
    m = _SIZE.fullmatch(text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 11TB, 500GiB, 1e12)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_bytes(n: float) -> str:
    """Decimal units, as the site's storage is sold: 1,234.5 GB."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{n:,.0f} B"
        n /= 1000.0
    return str(n)


def unsigned_zero(shown: str) -> str:
    """``shown`` without its sign when every digit it shows is 0: a bound of -0.0004 reads '0.0 pt',
    not '-0.0 pt' (a sign on a zero claims a direction the rounded figure does not have). The
    report's and the terminal's tables print signed figures through it."""
    digits = [c for c in shown if c.isdigit()]
    if shown[:1] in "+-" and digits and set(digits) == {"0"}:
        return shown[1:]
    return shown
