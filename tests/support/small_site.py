"""A small warehouse of the synthetic site, transformed and published, with hours still to run.

For tests that damage what a warehouse keeps between runs and then run the next step: the
records of a few days are loaded in two parts, those that arrived before a cut (transformed by a
plain `tierlens transform`, its first, and published, as the hourly cycle leaves a warehouse) and
those after it (loaded, not yet transformed: the next hourly run's work). The reference is
`tierlens transform --full-refresh` of all the records in one chunk, which any recovered
warehouse must equal (tests/support/warehouse_compare.py).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from support.faults import TIERLENS, tierlens_env

#: when each kind of record reaches the warehouse (a node's inventory: at once)
ARRIVAL = {"job": "end_time", "job_tag": "tagged_at", "file_access": "end_time"}
KINDS = ("node", "job_tag", "job", "file_access")


@dataclass(frozen=True)
class SmallSite:
    """``transformed``: loaded up to the cut, transformed and published; ``pending``: that, with the
    records after the cut loaded and not transformed; ``reference``: a full refresh of them all."""

    transformed: Path
    pending: Path
    reference: Path


def tierlens(*args: str, home: Path, timeout: float = 900, dbt_tests: bool = False) -> subprocess.CompletedProcess:
    """``tierlens args…`` with its home (dbt state, history) at ``home``; not checked. Its
    transforms build without the dbt project's tests unless ``dbt_tests``: what is claimed of these
    warehouses is their tables (equal to the reference's), which dbt's tests do not change."""
    env = tierlens_env(home, dbt_tests=dbt_tests)
    return subprocess.run([*TIERLENS, *args], env=env, capture_output=True, text=True, timeout=timeout)


def checked(*args: str, home: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    r = tierlens(*args, home=home, timeout=timeout)
    assert r.returncode == 0, f"tierlens {' '.join(args)}: {r.stdout[-3000:]}{r.stderr[-3000:]}"
    return r


def _split(folder: Path, kind: str, cut: datetime, out: Path) -> tuple[Path, Path | None]:
    """The records of ``kind`` that arrived before ``cut`` and those after (None: none after)."""
    table = pq.read_table(folder / f"{kind}.parquet")
    if kind not in ARRIVAL:
        return folder / f"{kind}.parquet", None
    arrived = pc.fill_null(pc.less(table[ARRIVAL[kind]], pa.scalar(cut, table.schema.field(ARRIVAL[kind]).type)), False)
    before, after = out / f"{kind}.before.parquet", out / f"{kind}.after.parquet"
    pq.write_table(table.filter(arrived), before)
    pq.write_table(table.filter(pc.invert(arrived)), after)
    return before, after


def copy_warehouse(source: Path, home: Path) -> Path:
    """A copy of the warehouse ``source`` (its file, history and dbt state) under a new ``home``;
    not its published snapshot (a copy would break the hard link between its name and its slot)."""
    shutil.copytree(source.parent, home, symlinks=True, ignore=shutil.ignore_patterns("*.lock", "logs", "published"))
    return home / source.name


def build_small_site(root: Path, days: float = 1.5, nodes_per_type: int = 1, hours_pending: int = 6) -> SmallSite:
    """The three warehouses of :class:`SmallSite` under ``root``, from ``days`` days of the site."""
    from tierlens.orchestration import synthetic_options, synthetic_site_files

    folder = synthetic_site_files(
        synthetic_options("2026-10-01", days=days, nodes_per_type=nodes_per_type), root / "syn"
    )
    parts = root / "parts"
    parts.mkdir()
    jobs = pq.read_table(folder / "job.parquet", columns=["end_time"])
    cut = pc.max(jobs["end_time"]).as_py() - timedelta(hours=hours_pending)
    split = {kind: _split(folder, kind, cut, parts) for kind in KINDS}
    home = root / "transformed"
    wh = home / "warehouse.duckdb"
    for kind, (before, _) in split.items():
        checked("load", kind, str(before), "-w", str(wh), home=home)
    checked("transform", "-w", str(wh), home=home)
    pending = copy_warehouse(wh, root / "pending")
    for kind, (_, after) in split.items():
        if after is not None:
            checked("load", kind, str(after), "-w", str(pending), home=pending.parent)
    reference = copy_warehouse(pending, root / "reference")
    checked("transform", "-w", str(reference), "--full-refresh", "--days", "30", home=reference.parent)
    return SmallSite(wh, pending, reference)
