"""An upgrade in the middle of a warehouse's history: what the previous release built and ran hourly,
carried on hourly by this release, must equal a full refresh of the same raw records by this release.

The previous release is a fixed commit (:data:`PREVIOUS`), taken from the clone's own history with
``git archive`` (its ``pipelines`` and ``dbt`` folders only) and run with this virtualenv's
interpreter and its own package first on PYTHONPATH; its pinned dependencies are this release's.
A small generated site is loaded in the order a site sees its records (each at its arrival: an
accounting record when its job ends, a tag when its job starts, a file access at its close):

* the previous release loads the first day (but its last two hours) and builds; then one hourly
  load and build;
* this release's ``tierlens load`` and ``tierlens transform`` (migrations on the first writing open)
  take the next two hours, across a UTC midnight, into the same warehouse with the same home;
* a copy of that warehouse rebuilt by ``tierlens transform --full-refresh`` is the reference, every
  intermediate table and mart compared row for row (tests/support/warehouse_compare.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from support.faults import TIERLENS, run_step, tierlens_env
from support.warehouse_compare import FLOAT_TOLERANCE, differences
from tierlens.records import RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.warehouse import migrations

REPO = Path(__file__).resolve().parents[1]
#: The previous release: the last commit of the project's first session (2026-11-22), the release a
#: site that installed tierlens a week ago runs. Its warehouse predates schema versions (migrations
#: adopt it) and incremental models (every intermediate table and mart rebuilt whole by each
#: ``dbt build``), so the upgrade crosses every change to the warehouse's layout and to how the
#: dbt project builds on what an earlier run left.
PREVIOUS = "c6d60e2690d37dabf090ce4a3f223cd09f3e0dcb"
DAYS = 2
SEED = 11
HOUR = timedelta(hours=1)
#: (first, last) hour of the day after the first, relative to its midnight, each release loads
#: hour by hour: the previous release's last hour ends one hour before midnight, this release's
#: runs cross it, so its incremental build goes on into a day the previous release never saw
PREVIOUS_HOURS = (-2, -1)
THIS_HOURS = (-1, 1)


def _options() -> SyntheticOptions:
    # one node per storage type and a day's warm-up keep the file's time in budget; the hours
    # compared still hold jobs of every storage type, running across each load's edges
    return SyntheticOptions(days=float(DAYS), seed=SEED, warmup_days=1.0, site=demo_site(nodes_per_type=1))


def _arrival(kind: RecordKind, table: pa.Table) -> pa.Array | None:
    """When each record reaches the warehouse (None: with the first load)."""
    if kind is RecordKind.JOB:
        times = pc.coalesce(table["end_time"], table["start_time"], table["submit_time"])
    elif kind is RecordKind.JOB_TAG:
        times = table["tagged_at"]
    elif kind is RecordKind.FILE_ACCESS:
        times = pc.coalesce(table["end_time"], table["start_time"])
    else:
        return None
    return times.cast(pa.timestamp("us", tz="UTC"))


class Arrivals:
    """The generated records, cut into what arrives in an interval, one Parquet file per kind."""

    def __init__(self, options: SyntheticOptions) -> None:
        parts: dict[RecordKind, list[pa.Table]] = defaultdict(list)
        for batch in generate(options):
            parts[batch.kind].append(batch.table)
        self.tables = {k: pa.concat_tables(v) for k, v in parts.items()}
        self.arrivals = {k: _arrival(k, t) for k, t in self.tables.items()}

    def arrived(self, kind: RecordKind, since: datetime | None, until: datetime) -> pa.Table:
        table, arrival = self.tables[kind], self.arrivals[kind]
        if arrival is None:
            return table if since is None else table.slice(0, 0)
        mask = pc.less(arrival, pa.scalar(until))
        if since is not None:
            mask = pc.and_(mask, pc.greater_equal(arrival, pa.scalar(since)))
        return table.filter(mask)

    def files(self, since: datetime | None, until: datetime, folder: Path) -> list[tuple[RecordKind, Path]]:
        folder.mkdir(parents=True)
        out = []
        for kind in (RecordKind.NODE, RecordKind.JOB_TAG, RecordKind.JOB, RecordKind.FILE_ACCESS):
            if kind not in self.tables:
                continue
            table = self.arrived(kind, since, until)
            if table.num_rows:
                path = folder / f"{kind.value}.parquet"
                pq.write_table(table, path)
                out.append((kind, path))
        return out


def _previous_release(root: Path) -> Path:
    """The previous release's package and dbt project, from the clone's history."""
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        # not a skip: a clone without the history cannot check upgrades, and must say so
        pytest.fail(
            f"commit {PREVIOUS} (the previous release) is not in this clone: the upgrade test needs the "
            "project's history (a full clone, or `git fetch --unshallow`)"
        )
    archive = root / "previous.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", PREVIOUS, "pipelines", "dbt"], stdout=out, check=True)
    folder = root / "previous"
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    archive.unlink()
    return folder


def _run(argv: list[str], env: dict[str, str]) -> float:
    status, seconds = run_step(argv, env)
    assert status == "ok", f"{' '.join(argv[:4])} …: {status}"
    return seconds


#: The previous release's own functions, as its `tierlens load` and `tierlens transform` call them.
#: Its build leaves out dbt's tests: they read the tables and change none, and the budget of this
#: file is better spent on this release's tests of the upgraded warehouse.
_PREVIOUS_LOAD = """
import sys
from pathlib import Path
from tierlens.pipeline import ingest, parquet_batches
from tierlens.records import RecordKind
warehouse, files = Path(sys.argv[1]), sys.argv[2:]
for kind, path in zip(files[::2], files[1::2]):
    summary = ingest(parquet_batches(RecordKind(kind), [Path(path)]), warehouse)
    assert not summary.total_rejected, (path, summary)
"""
_PREVIOUS_BUILD = """
import sys
from pathlib import Path
from tierlens.config import paths
from tierlens.transform import run_dbt
result = run_dbt(Path(sys.argv[1]), paths().dbt_state, "build", ["--exclude-resource-type", "test"])
assert result.success, result.failures
"""


def _built(warehouse: Path) -> set[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {
            f"{s}.{t}"
            for s, t in con.execute(
                "select schema_name, table_name from duckdb_tables() where schema_name in ('intermediate', 'marts')"
            ).fetchall()
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("upgrade")
    timings: dict[str, float] = {}
    t = time.monotonic()
    previous = _previous_release(root)
    timings["previous release from git"] = time.monotonic() - t
    t = time.monotonic()
    options = _options()
    site = Arrivals(options)
    timings["site generated"] = time.monotonic() - t

    warehouse = root / "warehouse.duckdb"
    home = root / "home"  # one tierlens home across the upgrade, as a site keeps it
    env_previous = dict(tierlens_env(home), PYTHONPATH=str(previous / "pipelines"))
    # this release builds without the dbt project's tests too: the claim is the tables (equal to
    # the full refresh, the records counted), which dbt's tests only read; a failing model still
    # fails the build, and tests/test_dbt_project.py runs the tests on this release's builds
    env_this = tierlens_env(home, dbt_tests=False)
    env_this.pop("PYTHONPATH", None)
    midnight = options.start + timedelta(days=1)

    def previous_load(since: datetime | None, until: datetime, name: str) -> None:
        files = site.files(since, until, root / name)
        args = [str(a) for kind, path in files for a in (kind.value, path)]
        timings[f"previous release: load {name}"] = _run(
            [sys.executable, "-c", _PREVIOUS_LOAD, str(warehouse), *args], env_previous
        )

    def previous_build(name: str) -> None:
        timings[f"previous release: build {name}"] = _run(
            [sys.executable, "-c", _PREVIOUS_BUILD, str(warehouse)], env_previous
        )

    edge = midnight + PREVIOUS_HOURS[0] * HOUR
    previous_load(None, edge, "history")
    previous_build("history")
    for h in range(*PREVIOUS_HOURS):
        previous_load(midnight + h * HOUR, midnight + (h + 1) * HOUR, f"hour {h}")
        previous_build(f"hour {h}")
    built_by_previous = _built(warehouse)

    for h in range(*THIS_HOURS):
        since, until = midnight + h * HOUR, midnight + (h + 1) * HOUR
        t = time.monotonic()
        for kind, path in site.files(since, until, root / f"this hour {h}"):
            _run([*TIERLENS, "load", kind.value, str(path), "-w", str(warehouse)], env_this)
        timings[f"this release: load hour {h}"] = time.monotonic() - t
        timings[f"this release: transform hour {h}"] = _run([*TIERLENS, "transform", "-w", str(warehouse)], env_this)
    until = midnight + THIS_HOURS[1] * HOUR

    full = root / "full-refresh.duckdb"
    shutil.copyfile(warehouse, full)
    env_full = tierlens_env(root / "home-full", dbt_tests=False)
    env_full.pop("PYTHONPATH", None)
    timings["this release: full refresh"] = _run(
        [*TIERLENS, "transform", "-w", str(full), "--full-refresh", "--days", "30"], env_full
    )
    return {
        "warehouse": warehouse,
        "full": full,
        "site": site,
        "until": until,
        "built_by_previous": built_by_previous,
        "timings": timings,
    }


def test_the_previous_release_built_its_tables_whole(upgrade) -> None:
    """The scenario is the one the upgrade has to handle: the previous release built marts and
    intermediate tables (no incremental window among them), and this release went on from them."""
    before = upgrade["built_by_previous"]
    assert {"marts.job_efficiency", "intermediate.int_job_tagged", "marts.node_occupancy_hourly"} <= before
    assert "intermediate.int_incremental_window" not in before
    con = duckdb.connect(str(upgrade["warehouse"]), read_only=True)
    try:
        assert migrations.current_version(con) == migrations.LATEST
        # the batches the previous release wrote predate raw_batches.tierlens_version; this
        # release's carry its version
        old, new = con.execute(
            "select count(*) filter (where tierlens_version is null), count(*) filter (where tierlens_version "
            "is not null) from raw_batches"
        ).fetchone()
    finally:
        con.close()
    assert old > 0 and new > 0
    assert "intermediate.int_incremental_window" in _built(upgrade["warehouse"])


def test_every_record_of_both_releases_is_held_once_and_counted_in_the_marts(upgrade) -> None:
    """Figures computed from the generated records that arrived: raw rows per kind, and the jobs'
    count, CPU seconds and core-wall seconds in marts.job_efficiency (one row per job)."""
    site: Arrivals = upgrade["site"]
    until = upgrade["until"]
    jobs = site.arrived(RecordKind.JOB, None, until)
    expected_rows = {k: site.arrived(k, None, until).num_rows for k in site.tables}
    cpu = pc.sum(pc.add(jobs["cpu_user_seconds"], jobs["cpu_system_seconds"])).as_py()
    core_wall = pc.sum(pc.multiply(jobs["wall_seconds"], jobs["allocated_cores"].cast(pa.float64()))).as_py()
    con = duckdb.connect(str(upgrade["warehouse"]), read_only=True)
    try:
        held = {k: con.execute(f"select count(*) from {k.table}").fetchone()[0] for k in site.tables}
        n, got_cpu, got_core_wall = con.execute(
            "select count(*), sum(cpu_user_seconds + cpu_system_seconds), sum(wall_seconds * allocated_cores) "
            "from marts.job_efficiency"
        ).fetchone()
    finally:
        con.close()
    assert held == expected_rows
    assert n == jobs.num_rows
    assert got_cpu == pytest.approx(cpu, rel=FLOAT_TOLERANCE)
    assert got_core_wall == pytest.approx(core_wall, rel=FLOAT_TOLERANCE)


def test_upgraded_warehouse_equals_a_full_refresh_by_this_release(upgrade) -> None:
    """Every intermediate table and mart the upgraded warehouse's hourly runs built equals this
    release's full refresh of the same raw records."""
    diff = differences(upgrade["warehouse"], upgrade["full"])
    timings = ", ".join(f"{k} {v:.1f} s" for k, v in upgrade["timings"].items())
    assert diff == {}, f"differing rows per table: {diff} ({timings})"
    print(f"\nupgrade mid-history: {timings}; load average {os.getloadavg()[0]:.1f}")
