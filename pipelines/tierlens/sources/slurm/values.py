"""What both sacct decoders share: Slurm's no-value markers, the first host of a host list, and
JOB rows as tuples whose positions come from records.JOB's field names.

json_job.py (the generic path) and sacct_typed.py (the typed fast path) both import this module and
not each other's helpers, so neither needs the other loaded first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ...records import JOB

#: Slurm's "no value" and "infinite" markers (slurm.h NO_VAL, INFINITE, NO_VAL64, INFINITE64).
#: They are not quantities: a job that never started has time.start = NO_VAL.
SENTINELS = frozenset((0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF))

_FIRST_HOST = re.compile(r"([^,\[]+)(?:\[([^\],]+?)(?:-[^\],]*)?(?:,[^\]]*)?\])?")


def first_node(nodelist: str | None) -> str | None:
    """First host of a Slurm host list: 'wn[03-05,09],gpu1' -> 'wn03'."""
    if not nodelist or nodelist in ("None assigned", "(null)"):
        return None
    m = _FIRST_HOST.match(nodelist)
    if not m:
        return nodelist
    return m.group(1) + (m.group(2) or "")


#: Position of each JOB field in a row tuple.
JOB_INDEX: dict[str, int] = {name: i for i, name in enumerate(JOB.names)}


def to_job_order(built: tuple[str, ...], names: Sequence[str] = tuple(JOB.names)) -> Callable[[tuple], tuple] | None:
    """How to turn a tuple of the fields ``built`` (in that order) into a row in JOB's order
    (``names``):
    None when it already is one (no cost per row), else a function that moves every value to its
    field's position and leaves the JOB fields not built null. A name that is not a JOB field is
    an error here, at import."""
    unknown = [n for n in built if n not in names]
    if unknown or len(set(built)) != len(built):
        raise ValueError(f"row fields not in records.JOB (or repeated): {unknown or built}")
    if tuple(built) == tuple(names):
        return None
    at = {name: i for i, name in enumerate(built)}
    take = [at.get(name, -1) for name in names]

    def reorder(row: tuple) -> tuple:
        return tuple(row[i] if i >= 0 else None for i in take)

    return reorder
