"""What `tierlens sql` reads from a query's header: its parameters, and the bundled name meant by a typo.

A query declares a parameter in its leading comments, one line each:

    -- Parameter: target = 0.75  the efficiency to reach

and reads it with DuckDB's ``coalesce(getvariable('target'), 0.75)``: `tierlens sql` sets every
declared variable (``--param name=value``, else the default) before it runs the query, and the
plain DuckDB CLI, which sets none, still gets the default from the SQL.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_DECLARATION = re.compile(r"^--\s*parameter:\s*([A-Za-z_]\w*)\s*=\s*(\S+)\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Parameter:
    name: str
    default: int | float | str
    help: str

    def __str__(self) -> str:
        return f"{self.name}={self.default}"


def value_of(text: str) -> int | float | str:
    """A parameter's value as DuckDB should see it: a number when it reads as one (so a comparison
    with a number column is numeric), else the text without its quotes."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parameters_of(query: str) -> list[Parameter]:
    """The parameters a query's leading comment lines declare, in their order."""
    found: list[Parameter] = []
    for line in query.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("--"):
            break  # the header ends at the first line of SQL
        m = _DECLARATION.match(stripped)
        if m:
            found.append(Parameter(m.group(1), value_of(m.group(2)), m.group(3).strip()))
    return found


def known_text(declared: list[Parameter]) -> str:
    return ", ".join(map(str, declared)) if declared else "none"


def bind(declared: list[Parameter], given: list[str]) -> dict[str, int | float | str]:
    """Each declared parameter's value: the ``name=value`` given, else its default.

    Raises ValueError with one line naming the known parameters for a malformed, unknown or
    repeated one: a typo must not run the query on the default as if it were the answer asked for."""
    values = {p.name: p.default for p in declared}
    seen: set[str] = set()
    for item in given:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ValueError(f"--param {item!r}: give NAME=VALUE; this query takes: {known_text(declared)}")
        if name not in values:
            near = difflib.get_close_matches(name, list(values), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(f"unknown parameter {name!r}{hint}; this query takes: {known_text(declared)}")
        if name in seen:
            raise ValueError(f"--param {name} given twice; give it once")
        seen.add(name)
        values[name] = value_of(text.strip())
    return values


def closest(name: str, names: list[str]) -> list[str]:
    """The bundled names a mistyped ``name`` most likely meant, best first (none when nothing is close)."""
    stem = name[:-4] if name.endswith(".sql") else name
    return difflib.get_close_matches(stem, names, n=3, cutoff=0.6)
