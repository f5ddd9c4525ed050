"""Is the demo's output the same at two revisions? Marts row for row, the report byte for byte.

    python bench/compare_demo.py REV_A REV_B [--days 3 --seed 42 --nodes-per-type 1] [--workdir DIR]

Each revision is checked out into a detached ``git worktree`` of its own and runs
``tierlens demo`` from there (its own code, its own dbt project) into a home of its own. Then:

* every table and view of the ``marts`` schema in the two warehouses is compared as a multiset of
  rows on every column: ``EXCEPT ALL`` both ways, and the rows of each side counted. Where rows
  differ and the table has columns that say when a build ran (``MASKED_COLUMNS``), it is compared
  again without them, and the verdict says so (the simulator's run ids are hashes of the run's
  inputs, so they are compared, not masked);
* every file the report wrote (its HTML and CSVs) is compared as text after masking what only
  says when or where it was made: clock times, run ids, the demo's home folder.

One verdict line per table and file: ``same`` (equal as stored), ``same~`` (equal but for float
values within a relative 1e-9 of each other: DuckDB's parallel float sums add in an order that
varies between runs, so two builds of one commit differ in the last bits too), or ``DIFFERS``;
the exit status is 1 when anything differs. A refactor that claims "no change of behaviour"
should show no ``DIFFERS``. Give one revision twice for the control: what two builds of one
commit differ by.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]

#: Columns that say when a build ran or which run made a row. The simulator's run ids hash the
#: run's inputs, floats included, so they differ wherever those floats' last bits do; the inputs
#: are compared themselves.
MASKED_COLUMNS = re.compile(
    r"^(loaded_at|built_at|refreshed_at|generated_at|ingested_at|run_created_at|batch_id|run_id)$"
)

#: Verdicts: equal as stored; equal but for floats within TOLERANCE of each other (DuckDB sums
#: floats in parallel, in an order that varies from run to run, so two builds of one commit can
#: differ in the last bits: bench/LOG.md has the control); different.
SAME, CLOSE, DIFFERS = "same", "same~", "DIFFERS"
TOLERANCE = 1e-9  # relative
_FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL")
_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][+-]?\d+)?(?![\w.])")
_IMAGE = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")

#: What a report file may say of when and where it was made.
_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?(UTC|Z|[+-]\d{2}:?\d{2}))?")
_RUN_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{32}\b")


@dataclass(frozen=True)
class Build:
    rev: str
    commit: str
    src: Path
    home: Path

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse.duckdb"

    @property
    def reports(self) -> Path:
        return self.home / "reports"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def build(rev: str, label: str, workdir: Path, demo_args: list[str]) -> Build:
    """Check ``rev`` out into its own worktree and run the demo from it into its own home."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    src, home = workdir / label / "src", workdir / label / "home"
    done = workdir / label / "built"
    if done.is_file() and done.read_text() == commit:
        print(f"{label}: {rev} ({commit[:10]}): the build in {home} (kept with --keep)", flush=True)
        return Build(rev, commit, src, home)
    if src.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(src)], check=False)
        shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    _git("worktree", "add", "--detach", str(src), commit)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERLENS_")}
    env.update(PYTHONPATH=str(src / "pipelines"), TIERLENS_HOME=str(home))
    run = "import sys; from tierlens.cli import app; sys.argv[0] = 'tierlens'; app()"
    cmd = [sys.executable, "-c", run, "demo", "--home", str(home), *demo_args]
    print(f"{label}: {rev} ({commit[:10]}): {' '.join(cmd[3:])}", flush=True)
    log = workdir / f"{label}.log"
    with log.open("w") as out:
        rc = subprocess.run(cmd, cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"{label}: the demo at {rev} exited {rc}; see {log}")
    done.write_text(commit)
    return Build(rev, commit, src, home)


def _columns(con: duckdb.DuckDBPyConnection, db: str, table: str) -> list[tuple[str, str]]:
    """(name, type) of each column, in order."""
    return con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_catalog = ? and table_schema = 'marts' and table_name = ? order by ordinal_position",
        [db, table],
    ).fetchall()


def _tables(con: duckdb.DuckDBPyConnection, db: str) -> set[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_catalog = ? and table_schema = 'marts'", [db]
    ).fetchall()
    return {r[0] for r in rows}


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return con.execute(f"select count(*) from ({sql})").fetchone()[0]


def _differences(con: duckdb.DuckDBPyConnection, table: str, columns: list[str]) -> tuple[int, int, int, int]:
    """Rows in A, rows in B, rows only in A, rows only in B (as multisets, on ``columns``)."""
    cols = ", ".join(f'"{c}"' for c in columns) or "1"
    qa, qb = f"select {cols} from a.marts.{table}", f"select {cols} from b.marts.{table}"
    return (
        _count(con, qa),
        _count(con, qb),
        _count(con, f"{qa} except all {qb}"),
        _count(con, f"{qb} except all {qa}"),
    )


def _float_gap(con: duckdb.DuckDBPyConnection, table: str, column: str) -> float:
    """The largest relative difference between A's and B's values of one float column, each side
    sorted (rows need no key to pair)."""
    side = '(select "{c}" v, row_number() over (order by "{c}" nulls first) r from {db}.marts.{t})'
    a, b = (side.format(c=column, db=db, t=table) for db in ("a", "b"))
    gap = con.execute(
        f"select max(case when x.v is null and y.v is null then 0 when x.v is null or y.v is null then 1 "
        f"when x.v = y.v then 0 else abs(x.v - y.v) / greatest(abs(x.v), abs(y.v)) end) "
        f"from {a} x join {b} y using (r)"
    ).fetchone()[0]
    return gap or 0.0


def _compare_table(con: duckdb.DuckDBPyConnection, t: str) -> tuple[str, str]:
    ca, cb = _columns(con, "a", t), _columns(con, "b", t)
    if ca != cb:
        return DIFFERS, f"columns differ: A {ca} / B {cb}"
    kept = [c for c in ca if not MASKED_COLUMNS.match(c[0])]
    masked = f" (without {', '.join(c[0] for c in ca if c not in kept)})" if len(kept) < len(ca) else ""
    na, nb, only_a, only_b = _differences(con, t, [c for c, _ in kept])
    what = f"{na} rows / {nb} rows, {only_a} only in A, {only_b} only in B{masked}"
    if na == nb and only_a == only_b == 0:
        return SAME, what
    floats = [c for c, kind in kept if kind in _FLOAT_TYPES]
    _, _, rest_a, rest_b = _differences(con, t, [c for c, kind in kept if kind not in _FLOAT_TYPES])
    gaps = {c: _float_gap(con, t, c) for c in floats} if na == nb else {}
    worst = max(gaps, key=gaps.get) if gaps else None
    what += f"; other than floats: {rest_a} only in A, {rest_b} only in B"
    if worst is not None:
        what += f"; floats, each column sorted: largest relative difference {gaps[worst]:.1e} ({worst})"
    close = na == nb and rest_a == rest_b == 0 and all(g <= TOLERANCE for g in gaps.values())
    return (CLOSE if close else DIFFERS), what


def compare_marts(a: Build, b: Build) -> list[tuple[str, str, str]]:
    """(table, verdict, what) per mart: rows of each side, rows only in A, rows only in B."""
    con = duckdb.connect()
    con.execute(f"attach '{a.warehouse}' as a (read_only)")
    con.execute(f"attach '{b.warehouse}' as b (read_only)")
    ta, tb = _tables(con, "a"), _tables(con, "b")
    verdicts = []
    for t in sorted(ta | tb):
        if t not in ta or t not in tb:
            verdicts.append((f"marts.{t}", DIFFERS, f"only in {'A' if t in ta else 'B'}"))
        else:
            verdicts.append((f"marts.{t}", *_compare_table(con, t)))
    con.close()
    return verdicts


def masked_text(path: Path, home: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    text = text.replace(str(home.resolve()), "<HOME>").replace(str(home), "<HOME>")
    text = _CLOCK.sub("<TIME>", text)
    return _RUN_ID.sub("<RUN>", text)


def _close_text(ta: str, tb: str) -> tuple[bool, str]:
    """Equal but for decimal numbers within TOLERANCE (and embedded images, counted)?"""
    images_a, images_b = _IMAGE.findall(ta), _IMAGE.findall(tb)
    ta, tb = _IMAGE.sub("<IMAGE>", ta), _IMAGE.sub("<IMAGE>", tb)
    na, nb = _DECIMAL.findall(ta), _DECIMAL.findall(tb)
    if _DECIMAL.sub("<N>", ta) != _DECIMAL.sub("<N>", tb) or len(na) != len(nb):
        la, lb = _DECIMAL.sub("<N>", ta).splitlines(), _DECIMAL.sub("<N>", tb).splitlines()
        first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        return False, f"text other than numbers differs from line {first + 1}"
    worst = max(
        (abs(float(x) - float(y)) / max(abs(float(x)), abs(float(y)), 1e-300) for x, y in zip(na, nb)), default=0
    )
    images = sum(x != y for x, y in zip(images_a, images_b)) + abs(len(images_a) - len(images_b))
    what = f"numbers: largest relative difference {worst:.1e}"
    if images_a or images_b:
        what += f"; {images} of {max(len(images_a), len(images_b))} embedded images differ"
    return worst <= TOLERANCE and images == 0, what


def compare_report(a: Build, b: Build) -> list[tuple[str, str, str]]:
    """(file, verdict, what) for every file either report folder holds, compared after masking."""
    fa = {p.relative_to(a.reports) for p in a.reports.rglob("*") if p.is_file()}
    fb = {p.relative_to(b.reports) for p in b.reports.rglob("*") if p.is_file()}
    verdicts = []
    for rel in sorted(fa | fb):
        name = f"report/{rel}"
        if rel not in fa or rel not in fb:
            verdicts.append((name, DIFFERS, f"only in {'A' if rel in fa else 'B'}"))
            continue
        if rel.suffix not in (".html", ".csv", ".txt", ".json", ".md", ".svg"):
            same = (a.reports / rel).read_bytes() == (b.reports / rel).read_bytes()
            verdicts.append((name, SAME if same else DIFFERS, "bytes equal" if same else "bytes differ"))
            continue
        ta, tb = masked_text(a.reports / rel, a.home), masked_text(b.reports / rel, b.home)
        if ta == tb:
            verdicts.append((name, SAME, f"{len(ta)} characters, equal after masking"))
            continue
        close, what = _close_text(ta, tb)
        verdicts.append((name, CLOSE if close else DIFFERS, what))
    return verdicts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rev_a")
    ap.add_argument("rev_b")
    ap.add_argument("--days", default="3")
    ap.add_argument("--seed", default="42")
    ap.add_argument("--nodes-per-type", default="1")
    ap.add_argument("--workdir", type=Path, default=None, help="where the worktrees and homes go [a temporary folder]")
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the worktrees and homes (a later run with the same --workdir reuses them)",
    )
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="compare_demo."))
    workdir.mkdir(parents=True, exist_ok=True)
    demo_args = ["--days", args.days, "--seed", args.seed, "--nodes-per-type", args.nodes_per_type]
    builds = [build(args.rev_a, "A", workdir, demo_args), build(args.rev_b, "B", workdir, demo_args)]
    a, b = builds
    verdicts = compare_marts(a, b) + compare_report(a, b)
    print(f"\nA = {a.rev} ({a.commit[:10]}), B = {b.rev} ({b.commit[:10]}); demo {' '.join(demo_args)}")
    width = max(len(v[0]) for v in verdicts)
    for name, verdict, what in verdicts:
        print(f"{verdict:8} {name:{width}}  {what}")
    counts = {v: sum(x[1] == v for x in verdicts) for v in (SAME, CLOSE, DIFFERS)}
    print(
        f"\n{len(verdicts)} compared: {counts[SAME]} the same, {counts[CLOSE]} the same but for floats within "
        f"{TOLERANCE:g} (float summation order), {counts[DIFFERS]} differ"
    )
    differ = counts[DIFFERS]
    if not args.keep:
        for x in builds:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(x.src)], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
