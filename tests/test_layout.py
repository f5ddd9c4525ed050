"""The package's rooms as docs/architecture.md draws them: no import circle between modules, the
storage layer imports no analysis stage, and the modules the settings import while Airflow parses
every DAG file stay light. Read from the source with ``ast`` (no import is run), so an import
inside a function counts as much as one at the top: both are an arrow between two rooms. Imports
under ``if TYPE_CHECKING:`` are left out (annotations only: nothing runs them)."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pipelines" / "tierlens"

#: Circles known and not yet broken, each with why it is left (none now).
KNOWN_CIRCLES: set[frozenset[str]] = set()


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


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Read once a session: every test here walks the same graph and none changes it."""
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


# --- the tests' own rooms: shared code lives in tests/support/, never in another test module ---

REPO = PACKAGE.parents[1]


def imported_test_modules(source: str) -> set[str]:
    """The test modules (``test_*``, ``tests.test_*``, conftest) a Python source imports, at its top
    or inside a function."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            head = name.removeprefix("tests.").split(".")[0]
            if head.startswith("test_") or head == "conftest":
                out.add(head)
    return out


def test_no_test_module_imports_another():
    """A helper two tests share goes to tests/support/ (or a fixture): importing a test module runs
    its collection-time code and ties two tests' set-ups together."""
    found = set()
    for path in sorted([*(REPO / "tests").rglob("*.py"), *(REPO / "bench").rglob("*.py")]):
        rel = path.relative_to(REPO).as_posix()
        found |= {(rel, m) for m in imported_test_modules(path.read_text(encoding="utf-8"))}
    assert sorted(found) == []


def test_the_test_import_finder_finds_one():
    source = "import os\nfrom test_a import x\ndef f():\n    import tests.test_b\nfrom support.dbt import run_dbt\n"
    assert imported_test_modules(source) == {"test_a", "test_b"}


# --- no machine's paths: the tree runs from any checkout, for any user ---------------------------

#: Where a checkout, a person's files or a mount live on one machine. System folders the code uses
#: on purpose (/tmp, /var, /etc, /usr, /opt, /proc, /dev, /run, /srv, /scratch) are not machine
#: paths: every host has them, or a deployment chooses them.
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|root|Users|mnt|media)/[\w.-]+")

#: (file, path prefix) allowed, each with why: text another program printed, kept as it printed it,
#: and made-up job records in the layout a batch system prints (a pilot user's working directory).
ALLOWED_MACHINE_PATHS: dict[tuple[str, str], str] = {
    ("plugins/slurm/tests/data/sacct-22.05-dbv0.0.38.json", "/work/main"): "a sacct capture, verbatim",
    ("tests/data/sacct_24.11_launch_failure.json", "/home/prdatl"): "sacct 24.11 output, a pilot's home",
    ("tests/support/sacct.py", "/home/prdatl"): "the same job layout built in Python",
    ("bench/condor_bench.py", "/home/atlas"): "a made-up pilot's job ad",
    ("bench/LOG.md", "/work/"): "the log of measurements says where each one ran",
}

#: Machine paths not yet removed, each left to the owner of the file.
KNOWN_MACHINE_PATHS: set[tuple[str, str]] = set()


def machine_paths(text: str) -> set[str]:
    return set(MACHINE_PATH.findall(text))


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    out = []
    for rel in filter(None, listed.split("\0")):
        path = REPO / rel
        if path.is_file() and not path.is_symlink() and path != Path(__file__).resolve():
            out.append(path)
    return out


def test_no_file_holds_a_machines_absolute_path():
    found = set()
    for path in _tracked_text_files():
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary: Parquet, pickles, images
        rel = path.relative_to(REPO).as_posix()
        for hit in machine_paths(data.decode("utf-8", errors="replace")):
            allowed = any(f == rel and hit.startswith(p) for f, p in [*ALLOWED_MACHINE_PATHS, *KNOWN_MACHINE_PATHS])
            if not allowed:
                found.add((rel, hit))
    assert sorted(found) == [], "absolute paths of one machine (use a path relative to the checkout, or /tmp)"


def test_the_machine_path_finder_tells_a_home_from_a_system_folder():
    text = 'x = "/work/main/.venv"; y = Path("/root/.cache"); z = "/tmp/a"; v = "/var/lib/x"; u = "~/work/x"'
    assert machine_paths(text) == {"/work/main", "/root/.cache"}
