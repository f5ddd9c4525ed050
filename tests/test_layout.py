"""The package's rooms as docs/architecture.md draws them: no import circle between modules, the
storage layer imports no analysis stage, and the modules the settings import while Airflow parses
every DAG file stay light. Read from the source with ``ast`` (no import is run), so an import
inside a function counts as much as one at the top: both are an arrow between two rooms. Imports
under ``if TYPE_CHECKING:`` are left out (annotations only: nothing runs them)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pipelines" / "tierlens"

#: Circles known and not yet broken, each with why it is left: the writer lock and the landing
#: folder import each other (landing.drain takes the lock; the lock's error subclasses landing's
#: WarehouseBusy).
KNOWN_CIRCLES: set[frozenset[str]] = {frozenset({"tierlens.warehouse.landing", "tierlens.warehouse.lock"})}


#: Arrows up known and not yet turned (none now).
KNOWN_ARROWS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of the tree but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> set[str]:
    """The package's modules an import statement names (a name imported from a package that is
    one of its modules counts as that module)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")[: None if is_package else -1]
            base = base[: len(base) - node.level + 1]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("tierlens") and name != module:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        graph[module] = set().union(*(_targets(module, is_package, n, known) for n in _imports(tree)))
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_no_module_imports_itself_round_a_circle():
    found = [sorted(c) for c in circles(import_graph()) if c not in KNOWN_CIRCLES]
    assert found == [], f"import circles (break each with a module both sides import): {found}"


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]


def test_the_warehouse_imports_no_stage_above_it():
    """The simulator's result tables are records like any other (records.py): the storage layer
    below every stage imports none of them."""
    above = ("tierlens.simulator", "tierlens.report", "tierlens.analysis", "tierlens.orchestration", "tierlens.cli")
    graph = import_graph()
    wrong = sorted(
        (m, t) for m, ts in graph.items() if m.startswith("tierlens.warehouse") for t in ts if t.startswith(above)
    )
    assert [w for w in wrong if w not in KNOWN_ARROWS] == []


def test_the_probe_imports_no_source():
    """Sources build on the probe (the synthetic site probes its devices), never the reverse."""
    graph = import_graph()
    wrong = sorted((m, t) for m, ts in graph.items() if m.startswith("tierlens.probe") for t in ts if ".sources" in t)
    assert wrong == []


def test_the_options_of_each_built_in_source_import_only_dataclasses():
    """Every DAG file imports the settings, which read each source's options while Airflow parses
    the file, in every task process: the modules that hold them import nothing but dataclasses
    (and typing) at their top."""
    for name in ("synthetic", "slurm", "condor", "xrootd"):
        tree = ast.parse((PACKAGE / "ingest" / f"{name}.py").read_text(encoding="utf-8"))
        top = {
            a.name if isinstance(n, ast.Import) else n.module
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        assert top <= {"__future__", "dataclasses", "typing"}, (name, top)
    code = (
        "import sys, tierlens.orchestration.settings as s; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'duckdb', 'numpy')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
