"""The equivalence fixture: one small generated site, one full refresh, everything else compared to it.

Built once a session (tests/test_incremental_equivalence.py, tests/test_chunk_edges.py and
tests/test_faults.py share it, and make test runs them on one worker). Twelve synthetic days of
the smallest demo site (with a site change, across a month's end) are generated once and loaded
in the order a site would see them: every record at the time it arrives (an accounting record
when its job ends, a file access at its close, a tag when its job starts, a site change when it
is recorded), in daily batches for 11 days and hourly ones for the last day. Between loads plain
`dbt run` / `dbt build` builds the incremental models (dbt/README.md, "Invocation contract"):
five invocations in all, several days of loads caught up by one of them. Among the loads:

* a job whose accounting record arrives 8 hours after its file accesses (twice: once across a
  daily build, once across an hourly one): its accesses are unmatched until it arrives;
* a batch loaded twice (the warehouse's no-op);
* a late cache event: a cache access first loaded without the g-stream's figures, which arrive
  6 hours later and replace the row (twice, as above);
* a site change recorded 3 days after its date;
* two jobs whose first record is replaced 6 hours later (across an hourly build): one first filed
  on another node (the node sharing of both nodes' jobs changes), one whose true record is a
  launch failure (it leaves the marts of jobs that ran);
* faults, at kill points drawn from a seeded generator: an hour's `tierlens load` SIGKILLed and
  run again, and a `tierlens transform` SIGKILLed before the build that follows it.

Then the same raw records are built again, without dbt's tests (the claim is the tables; build 5
runs the tests on the incremental warehouse), each build compared with the incremental one by
tests/support/warehouse_compare.py:

* the reference: `tierlens transform --full-refresh` with the whole history in one chunk (so also
  what `--days 30` gives: the history is 12 days and its margins);
* `--full-refresh --days 7`, SIGKILLed once at a seeded point, then run to the end;
* `--backfill` of three days in the middle of history, `--days 1`, on a copy of the reference,
  SIGKILLed once, then run to the end;
* the publish of the incremental warehouse SIGKILLed, then published again: the snapshot readers
  open;
* retention SIGKILLed, then applied again, against the same retention left alone and the same
  retention applied to a copy of the full refresh: a month's retention, cutting at the month
  boundary inside the history (the newest access moved to December 1st).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from support.faults import TIERLENS, WITHOUT_DBT_TESTS, KillTally, run_step, tierlens_env
from tierlens.pipeline import ingest
from tierlens.records import GSTREAM_BYTES, GSTREAM_V2, Batch, RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.sources.synthetic.generate import SyntheticChange
from tierlens.transform import run_dbt, run_range
from tierlens.warehouse.publish import reader_path

#: twelve days, long enough for every lookback (max_wall_days 7 + lateness 2) to fall inside
#: history and for a site change with days before and after it; not a month, which cost the
#: fixture its time in generation and in every build
DAYS = 12
#: the history runs across a month's end (Oct 24 to Nov 4), so chunks, monthly rows and
#: retention meet a month boundary inside it
START = datetime(2026, 10, 24, tzinfo=timezone.utc)
SEED = 42
#: the smallest demo site with every storage type on both arms (12 nodes), 4 job slots a node:
#: jobs still share nodes and run across every day's edge
NODES_PER_TYPE = 1
SLOTS = 4
CHANGE = SyntheticChange(day=6, read_speedup=1.3, storage_type="hdd", description="hdd read-ahead 4 MB")
CHANGE_RECORDED_AFTER = timedelta(days=3)
SACCT_DELAY = timedelta(hours=8)
GSTREAM_DELAY = timedelta(hours=6)
ACCESS_DELAY = timedelta(hours=5)
JOB_REVISION_DELAY = timedelta(hours=6)
#: how far ahead a faulty node's clock runs
CLOCK_AHEAD = timedelta(hours=3)
#: g-stream fields of a cache access: NULL until the cache's pfc event arrives.
GSTREAM_FIELDS = GSTREAM_BYTES + GSTREAM_V2
SOURCE = "replay"
#: the kill points' generator
KILL_SEED = 37
#: what part of the one-chunk full refresh's time the kill of `--full-refresh --days 7` is drawn in
KILL_WITHIN = 0.5
#: the middle stretch back-filled one day per dbt run: days after the first
MIDDLE_BACKFILL = (5, 8)
#: where the newest raw access is moved before retention (the history holds less than a month,
#: so nothing would be old enough): a month's retention then cuts at the month boundary inside
#: the history, RETENTION_CUTOFF, which is stated here, not computed by the code under test
RETENTION_NEWEST = datetime(2026, 12, 1, 6, tzinfo=timezone.utc)
RETENTION_MONTHS = 1
RETENTION_CUTOFF = datetime(2026, 11, 1, tzinfo=timezone.utc)
#: the day whose job batch is loaded a second time (the warehouse's no-op)
TWICE_DAY = 6
#: the build that catches up on days 8-10 and the last day's first hours
LAST_DAY_FIRST_BUILD = "build 3 (days 8-10, last day hours 0-5)"


def _options() -> SyntheticOptions:
    return SyntheticOptions(
        days=float(DAYS),
        seed=SEED,
        start=START,
        site=demo_site(nodes_per_type=NODES_PER_TYPE, slots=SLOTS),
        changes=(CHANGE,),
    )


def _generated() -> dict[RecordKind, pa.Table]:
    parts: dict[RecordKind, list[pa.Table]] = defaultdict(list)
    for b in generate(_options()):
        parts[b.kind].append(b.table)
    return {k: pa.concat_tables(v) for k, v in parts.items()}


def _arrival(kind: RecordKind, table: pa.Table, first: datetime) -> pa.Array:
    """When each record reaches the warehouse."""
    if kind is RecordKind.JOB:
        return pc.coalesce(table["end_time"], table["start_time"], table["submit_time"])
    if kind is RecordKind.JOB_TAG:
        return table["tagged_at"]
    if kind is RecordKind.FILE_ACCESS:
        return pc.coalesce(table["end_time"], table["start_time"])
    if kind is RecordKind.SITE_CHANGE:
        return table["recorded_at"]
    return pa.array([first] * table.num_rows, pa.timestamp("us", tz="UTC"))


class Replay:
    """The generated records as arrivals, with the late ones the test plants."""

    def __init__(self, tables: dict[RecordKind, pa.Table], start: datetime) -> None:
        self.start = start
        changes = tables[RecordKind.SITE_CHANGE]
        recorded = pc.add(changes["recorded_at"], pa.scalar(CHANGE_RECORDED_AFTER, pa.duration("us")))
        tables[RecordKind.SITE_CHANGE] = changes.set_column(
            changes.schema.get_field_index("recorded_at"),
            "recorded_at",
            recorded.cast(changes.schema.field("recorded_at").type),
        )
        self.tables = tables
        first = start - timedelta(days=30)
        self.arrivals = {k: _arrival(k, t, first).cast(pa.timestamp("us", tz="UTC")) for k, t in tables.items()}
        # (kind, table of rows, arrival) loaded besides the generated rows at their arrival
        self.extra: list[tuple[RecordKind, pa.Table, datetime]] = []
        self.late_jobs: list[str] = []
        self.late_cache_accesses: list[tuple[str, str]] = []
        self.late_accesses: list[tuple[str, str]] = []
        self.revised_jobs: list[str] = []
        # how -> ((batch_system, cluster, job_id), node of the first form, node of the true record)
        self.revised: dict[str, tuple[tuple[str, str, str], str, str]] = {}
        # how -> (batch_system, cluster, job_id) of a job filed by a faulty node
        self.skewed: dict[str, tuple[str, str, str]] = {}

    def _index_where(self, kind: RecordKind, mask: pa.Array) -> int:
        rows = pc.indices_nonzero(mask).to_pylist()
        assert rows, f"no {kind.value} record fits the planted case"
        return rows[0]

    def _withdraw(self, kind: RecordKind, i: int) -> datetime:
        """Record i of ``kind`` taken out of the generated records; returns when it would arrive."""
        table, arrival = self.tables[kind], self.arrivals[kind]
        keep = pc.invert(pc.equal(pa.array(range(table.num_rows)), i))
        self.tables[kind] = table.filter(keep)
        self.arrivals[kind] = arrival.filter(keep)
        return arrival[i].as_py()

    def _deliver_twice(self, kind: RecordKind, i: int, first: pa.Table, second: pa.Table, delay: timedelta) -> None:
        """Record i of ``kind`` arrives as ``first`` when it would have, and as ``second`` ``delay`` later."""
        when = self._withdraw(kind, i)
        self.extra.append((kind, first, when))
        self.extra.append((kind, second, when + delay))

    def delay_job(self, ending_from: datetime, ending_to: datetime) -> None:
        """A job with exactly matched file accesses whose record arrives SACCT_DELAY late."""
        jobs = self.tables[RecordKind.JOB]
        accesses = self.tables[RecordKind.FILE_ACCESS]
        identities = set(pc.unique(accesses["job_identity"].drop_null()).to_pylist())
        end = jobs["end_time"]
        mask = pc.and_(
            pc.and_(pc.greater_equal(end, pa.scalar(ending_from)), pc.less(end, pa.scalar(ending_to))),
            pc.is_in(jobs["job_identity"], pa.array(sorted(identities))),
        )
        i = self._index_where(RecordKind.JOB, mask)
        arrivals = self.arrivals[RecordKind.JOB].to_pylist()
        arrivals[i] = arrivals[i] + SACCT_DELAY
        self.arrivals[RecordKind.JOB] = pa.array(arrivals, pa.timestamp("us", tz="UTC"))
        self.late_jobs.append(jobs["job_identity"][i].as_py())

    def delay_gstream(self, closing_from: datetime, closing_to: datetime) -> None:
        """A cache access first loaded without its g-stream figures; they arrive GSTREAM_DELAY later."""
        accesses = self.tables[RecordKind.FILE_ACCESS]
        arrival = self.arrivals[RecordKind.FILE_ACCESS]
        mask = pc.and_(
            pc.and_(pc.equal(accesses["server_role"], "cache"), pc.is_valid(accesses["cache_hit_bytes"])),
            pc.and_(pc.greater_equal(arrival, pa.scalar(closing_from)), pc.less(arrival, pa.scalar(closing_to))),
        )
        i = self._index_where(RecordKind.FILE_ACCESS, mask)
        full_row = accesses.slice(i, 1)
        early = full_row
        for name in GSTREAM_FIELDS:
            idx = early.schema.get_field_index(name)
            early = early.set_column(idx, early.schema.field(idx), pa.nulls(1, early.schema.field(idx).type))
        self._deliver_twice(RecordKind.FILE_ACCESS, i, early, full_row, GSTREAM_DELAY)
        self.late_cache_accesses.append((full_row["server_host"][0].as_py(), full_row["unique_id"][0].as_py()))

    def delay_access(self, closing_from: datetime, closing_to: datetime) -> None:
        """An access without a job identity (matched by host and time) arriving ACCESS_DELAY after
        its close, so after the record of the job it belongs to."""
        accesses = self.tables[RecordKind.FILE_ACCESS]
        arrival = self.arrivals[RecordKind.FILE_ACCESS]
        mask = pc.and_(
            pc.and_(pc.is_null(accesses["job_identity"]), pc.is_valid(accesses["client_host"])),
            pc.and_(pc.greater_equal(arrival, pa.scalar(closing_from)), pc.less(arrival, pa.scalar(closing_to))),
        )
        # one that a job covers whose record is loaded before the access arrives: the access must
        # find its job when it comes, not stay unmatched for want of one
        jobs = self.tables[RecordKind.JOB]
        job_arrival = self.arrivals[RecordKind.JOB]
        short = lambda host: (host or "").split(".")[0].lower()  # noqa: E731
        covering = {}
        for j, at in zip(jobs.to_pylist(), job_arrival.to_pylist()):
            if j["start_time"] is not None and j["end_time"] is not None:
                covering.setdefault(short(j["node"]), []).append((j["start_time"], j["end_time"], at))
        i = next(
            (
                k
                for k in pc.indices_nonzero(mask).to_pylist()
                if accesses["start_time"][k].as_py() is not None
                and any(
                    s <= accesses["start_time"][k].as_py()
                    and e >= (accesses["end_time"][k].as_py() or accesses["start_time"][k].as_py())
                    and at < arrival[k].as_py() + ACCESS_DELAY
                    for s, e, at in covering.get(short(accesses["client_host"][k].as_py()), [])
                )
            ),
            None,
        )
        assert i is not None, "no access without an identity has a job covering it in the window"
        arrivals = arrival.to_pylist()
        arrivals[i] = arrivals[i] + ACCESS_DELAY
        self.arrivals[RecordKind.FILE_ACCESS] = pa.array(arrivals, pa.timestamp("us", tz="UTC"))
        self.late_accesses.append((accesses["server_host"][i].as_py(), accesses["unique_id"][i].as_py()))

    def _untaken_job(self, ending_from: datetime, ending_to: datetime, reads_nothing: bool) -> int:
        """A whole-job row on a node that ran, arriving in [ending_from, ending_to), that no other
        planted case took (``reads_nothing``: that no file access names either)."""
        jobs = self.tables[RecordKind.JOB]
        arrival = self.arrivals[RecordKind.JOB]
        taken = set(self.late_jobs) | set(self.revised_jobs)
        if reads_nothing:
            taken |= set(pc.unique(self.tables[RecordKind.FILE_ACCESS]["job_identity"].drop_null()).to_pylist())
        mask = pc.and_(
            pc.and_(pc.greater_equal(arrival, pa.scalar(ending_from)), pc.less(arrival, pa.scalar(ending_to))),
            pc.and_(
                pc.and_(pc.equal(jobs["step_id"], ""), pc.is_valid(jobs["node"])),
                pc.and_(
                    pc.greater(jobs["wall_seconds"], 0),
                    pc.invert(pc.is_in(jobs["job_identity"], pa.array(sorted(taken), pa.string()))),
                ),
            ),
        )
        return self._index_where(RecordKind.JOB, mask)

    def skew_job(self, ending_from: datetime, ending_to: datetime, how: str) -> None:
        """A job's record as a faulty node files it, arriving when the true one would have. how
        'clock_ahead': the node's clock runs CLOCK_AHEAD ahead, so its start and end lie in the
        future of everything loaded with it; how 'ends_before_start': its end precedes its start."""
        i = self._untaken_job(ending_from, ending_to, reads_nothing=True)
        row = self.tables[RecordKind.JOB].slice(i, 1)
        start, end = row["start_time"][0].as_py(), row["end_time"][0].as_py()
        if how == "clock_ahead":
            start, end = start + CLOCK_AHEAD, end + CLOCK_AHEAD
        elif how == "ends_before_start":
            end = start - timedelta(hours=1)
        else:
            raise ValueError(how)
        for name, value in (("start_time", start), ("end_time", end)):
            idx = row.schema.get_field_index(name)
            row = row.set_column(idx, row.schema.field(idx), pa.array([value], row.schema.field(idx).type))
        self.extra.append((RecordKind.JOB, row, self._withdraw(RecordKind.JOB, i)))
        self.revised_jobs.append(row["job_identity"][0].as_py())
        self.skewed[how] = tuple(row[name][0].as_py() for name in ("batch_system", "cluster", "job_id"))

    def revise_job(self, ending_from: datetime, ending_to: datetime, how: str) -> None:
        """A job (whole-job row, on a node) first loaded in another form, its true record replacing
        it JOB_REVISION_DELAY later (the loader upserts by job key). how 'node': first filed on
        another node of the site, so the node sharing of both nodes' jobs changes. how 'ran': the
        true record is a launch failure (no start, no wall), so the job leaves the marts of jobs
        that ran, its first form having been built into them."""
        jobs = self.tables[RecordKind.JOB]
        # a launch failure reads no file: take a job no access names
        i = self._untaken_job(ending_from, ending_to, reads_nothing=how == "ran")
        true_row = jobs.slice(i, 1)
        first_form = true_row
        if how == "node":
            node = true_row["node"][0].as_py()
            other = next(n for n in sorted(set(pc.unique(jobs["node"].drop_null()).to_pylist())) if n != node)
            for name in ("node", "node_list"):
                idx = first_form.schema.get_field_index(name)
                first_form = first_form.set_column(idx, first_form.schema.field(idx), pa.array([other], pa.string()))
        elif how == "ran":
            failed = {"start_time": None, "wall_seconds": 0, "cpu_user_seconds": 0, "cpu_system_seconds": 0}
            for name, value in failed.items():
                idx = true_row.schema.get_field_index(name)
                true_row = true_row.set_column(
                    idx, true_row.schema.field(idx), pa.array([value], true_row.schema.field(idx).type)
                )
        else:
            raise ValueError(how)
        self._deliver_twice(RecordKind.JOB, i, first_form, true_row, JOB_REVISION_DELAY)
        self.revised_jobs.append(true_row["job_identity"][0].as_py())
        key = tuple(true_row[name][0].as_py() for name in ("batch_system", "cluster", "job_id"))
        self.revised[how] = (key, first_form["node"][0].as_py(), true_row["node"][0].as_py())

    def batches(self, since: datetime | None, until: datetime | None) -> list[Batch]:
        """One batch per record kind of the records arriving in [since, until) (None: unbounded)."""
        out = []
        for kind in (
            RecordKind.NODE,
            RecordKind.SITE_CHANGE,
            RecordKind.JOB_TAG,
            RecordKind.JOB,
            RecordKind.FILE_ACCESS,
        ):
            if kind not in self.tables:
                continue
            arrival = self.arrivals[kind]
            mask = pa.array([True] * len(arrival))
            if since is not None:
                mask = pc.and_(mask, pc.greater_equal(arrival, pa.scalar(since)))
            if until is not None:
                mask = pc.and_(mask, pc.less(arrival, pa.scalar(until)))
            parts = [self.tables[kind].filter(mask)]
            parts += [
                t
                for k, t, at in self.extra
                if k is kind and (since is None or at >= since) and (until is None or at < until)
            ]
            table = pa.concat_tables(parts)
            if table.num_rows:
                out.append(Batch(kind, table, SOURCE))
        return out


def identity_matches(con: duckdb.DuckDBPyConnection, identity: str) -> tuple[int, int]:
    """(accesses carrying the job's identity, of them matched exactly) in int_file_access_by_job."""
    return con.execute(
        "select count(*), count(*) filter (where match_quality = 'exact') "
        "from intermediate.int_file_access_by_job where job_identity = ? or job_identity like '%,' || ?",
        [identity, identity],
    ).fetchone()


def job_rows(con: duckdb.DuckDBPyConnection, key: tuple[str, str, str]) -> tuple[int, list[str | None]]:
    """(rows of the job in job_efficiency, nodes of its rows in job_io_profile)."""
    where = "where batch_system = ? and cluster = ? and job_id = ?"
    efficiency = con.execute(f"select count(*) from marts.job_efficiency {where}", list(key)).fetchone()[0]
    nodes = [n for (n,) in con.execute(f"select node from marts.job_io_profile {where}", list(key)).fetchall()]
    return efficiency, nodes


def _warehouse(root: Path, build: str) -> Path:
    """A build's warehouse: a folder of its own, the file named as every other build's, so dbt's
    saved parse of one build serves the next (pipelines/tierlens/saved_parse.py)."""
    folder = root / build
    folder.mkdir()
    return folder / "warehouse.duckdb"


def _dbt(warehouse: Path, state: Path, command: str, extra: list[str] | None = None) -> float:
    t = time.monotonic()
    result = run_dbt(warehouse, state, command, extra)
    assert result.success, "\n".join(result.failures)
    return time.monotonic() - t


def working_tables(db: Path | duckdb.DuckDBPyConnection) -> list[str]:
    """Every table of the warehouse whose name holds dbt's working-table marker."""
    con = duckdb.connect(str(db), read_only=True) if isinstance(db, Path) else db
    try:
        return sorted(
            f"{schema}.{name}"
            for schema, name in con.execute(
                "select schema_name, table_name from duckdb_tables() "
                "where database_name = current_database() and table_name like '%\\_\\_dbt\\_%' escape '\\'"
            ).fetchall()
        )
    finally:
        if isinstance(db, Path):
            con.close()


def _load_by_command(
    batches: list[Batch], warehouse: Path, folder: Path, kill: tuple[random.Random, KillTally, float] | None
) -> float:
    """The batches loaded by `tierlens load` (a Parquet file each), as a site's hourly ingest does;
    with ``kill`` (generator, tally, seconds the unkilled load of a file took), each file's load
    is first SIGKILLed at a random point. Returns the seconds of the slowest unkilled load."""
    folder.mkdir(parents=True)
    env = tierlens_env(folder / "home")
    slowest = 0.0
    for i, batch in enumerate(batches):
        path = folder / f"{i}-{batch.kind.value}.parquet"
        pq.write_table(batch.table, path)
        argv = [*TIERLENS, "load", batch.kind.value, str(path), "-w", str(warehouse)]
        if kill:
            rng, kills, horizon = kill
            kills.kill("load", argv, env, rng.uniform(0.0, horizon))
        status, seconds = run_step(argv, env)
        assert status == "ok", f"{' '.join(argv)}: {status}"
        slowest = max(slowest, seconds)
    return slowest


def _replay(root: Path, rng: random.Random, kills: KillTally) -> dict[str, Any]:
    options = _options()
    start = options.start
    t = time.monotonic()
    replay = Replay(_generated(), start)
    day = timedelta(days=1)
    hour = timedelta(hours=1)
    last = start + (DAYS - 1) * day
    replay.delay_job(start + 7 * day + 17 * hour, start + 7 * day + 22 * hour)  # arrives on day 8
    replay.delay_job(last + 1 * hour, last + 2 * hour)
    replay.delay_gstream(start + 7 * day + 20 * hour, start + 8 * day)
    replay.delay_gstream(last + 3 * hour, last + 4 * hour)
    replay.delay_access(last + 2 * hour, last + 4 * hour)
    # built in their first form by build 3 (to hour 5), in their true one by build 4 (hours 6-11)
    replay.revise_job(last + 1 * hour, last + 5 * hour, "node")
    replay.revise_job(last + 1 * hour, last + 5 * hour, "ran")
    # filed by faulty nodes: one in the daily batches, one whose clock puts it in the day after the last
    replay.skew_job(start + 8 * day, start + 9 * day, "ends_before_start")
    replay.skew_job(last + 21 * hour, last + day, "clock_ahead")

    warehouse = _warehouse(root, "incremental")
    state = root / "dbt-incremental"
    timings: dict[str, float] = {"generate and plant": time.monotonic() - t}
    # identity -> (accesses, exact) after build 2; (server_host, unique_id) -> job_id inferred after build 3
    matched_before: dict[Any, Any] = {}
    twice = None

    def load(since: datetime | None, until: datetime | None) -> None:
        nonlocal twice
        t = time.monotonic()
        batches = replay.batches(since, until)
        ingest(iter(batches), warehouse)
        timings["loads (in process)"] = timings.get("loads (in process)", 0.0) + time.monotonic() - t
        if since is not None and since == start + TWICE_DAY * day:
            twice = [b for b in batches if b.kind is RecordKind.JOB]

    # Daily batches; the first build (full: nothing is built yet) after day 4, then two
    # incremental builds that each catch up on several days of loads (the second on three days
    # and the last day's first six hourly batches).
    load(None, start + day)
    for d in range(1, 5):
        load(start + d * day, start + (d + 1) * day)
    t = time.monotonic()
    _dbt(warehouse, state, "seed")
    timings["seed"] = time.monotonic() - t
    timings["build 1 (first, days 0-4)"] = _dbt(warehouse, state, "run")
    for d in range(5, 8):
        load(start + d * day, start + (d + 1) * day)
    timings["build 2 (days 5-7)"] = _dbt(warehouse, state, "run")
    con = duckdb.connect(str(warehouse), read_only=True)
    for identity in replay.late_jobs[:1]:
        matched_before[identity] = identity_matches(con, identity)
    con.close()
    for d in range(8, DAYS - 1):
        load(start + d * day, start + (d + 1) * day)
    assert twice, f"the day-{TWICE_DAY} job batch to load twice"
    again = ingest(iter(twice), warehouse)
    assert again.already_loaded == len(twice)
    # The last day in hourly batches, built three times.
    for h in range(0, 6):
        load(last + h * hour, last + (h + 1) * hour)
    timings[LAST_DAY_FIRST_BUILD] = _dbt(warehouse, state, "run")
    con = duckdb.connect(str(warehouse), read_only=True)
    revised_before = {how: job_rows(con, key) for how, (key, _, _) in replay.revised.items()}
    matched_before.update(
        {
            (host, uid): job
            for host, uid, job in con.execute(
                "select server_host, unique_id, job_id from intermediate.int_file_access_by_job "
                "where match_quality = 'inferred'"
            ).fetchall()
        }
    )
    con.close()
    # faults among build 4's loads: hour 7 loaded by command times a load, hour 8's loads are
    # SIGKILLed at random points, then run again
    load_seconds = 0.0
    for h in range(6, 12):
        if h in (7, 8):
            batches = replay.batches(last + h * hour, last + (h + 1) * hour)
            kill = (rng, kills, load_seconds) if h == 8 else None
            t = time.monotonic()
            load_seconds = _load_by_command(batches, warehouse, root / f"hour-{h}", kill)
            timings[f"hour {h} by command"] = time.monotonic() - t
        else:
            load(last + h * hour, last + (h + 1) * hour)
    # a plain `tierlens transform` SIGKILLed before build 4, somewhere in a build's time (its
    # build and publish, or its lock)
    argv = [*TIERLENS, "transform", "-w", str(warehouse)]
    kills.kill(
        "transform",
        argv,
        tierlens_env(root / "home-hourly"),
        rng.uniform(0.0, timings[LAST_DAY_FIRST_BUILD]),
    )
    timings["build 4 (hours 6-11)"] = _dbt(warehouse, state, "run")
    # A job_io_profile row no later record can reach (its job ended 8 days before the newest day,
    # more than max_wall_days before any job still to come could start), in build 5's window: a
    # rebuild by job keeps it as it is, a rebuild of the window's days would compute it again. Its
    # concurrent_jobs is planted off by 1,000 (still within its range test) and put back after.
    con = duckdb.connect(str(warehouse))
    untouched = con.execute(
        "select batch_system, cluster, job_id, step_id, concurrent_jobs from marts.job_io_profile "
        "where day = (select max(day) - 8 from marts.job_io_profile) and concurrent_jobs is not null "
        "order by job_id, step_id limit 1"
    ).fetchone()
    assert untouched, "no job_io_profile row 8 days before the newest day"
    keyed = "batch_system = ? and cluster = ? and job_id = ? and step_id = ?"
    con.execute(
        f"update marts.job_io_profile set concurrent_jobs = concurrent_jobs + 1000 where {keyed}", list(untouched[:4])
    )
    leftovers_before = working_tables(con)
    # what a run that stopped midway (or an older tierlens) leaves, and a table of the site's own
    con.execute("create table main.change_effects__dbt_tmp20250101000000000000 as select 1 as x")
    con.execute("create table marts.job_efficiency__dbt_backup as select 1 as x")
    con.execute("create table main.site_notes__dbt_tmp_kept as select 1 as x")
    con.close()
    for h in range(12, 24):
        load(last + h * hour, last + (h + 1) * hour)
    load(last + day, None)
    timings["build 5 (hours 12-23, dbt build)"] = _dbt(warehouse, state, "build")
    con = duckdb.connect(str(warehouse))
    planted_after = con.execute(
        f"select concurrent_jobs from marts.job_io_profile where {keyed}", list(untouched[:4])
    ).fetchall()
    con.execute(f"update marts.job_io_profile set concurrent_jobs = ? where {keyed}", [untouched[4], *untouched[:4]])
    con.close()

    return {
        "incremental": warehouse,
        "replay": replay,
        "matched_before": matched_before,
        "revised_before": revised_before,
        "io_profile_planted": (untouched[4] + 1000, planted_after),
        "working_tables": (leftovers_before, working_tables(warehouse)),
        "timings": timings,
    }


@contextmanager
def _dbt_tests_left_out() -> Iterator[None]:
    """dbt, started by this process meanwhile, builds without the project's tests: the builds
    compared with the incremental one are claimed equal table for table, which dbt's tests only
    read (build 5 runs them on the incremental warehouse, tests/test_dbt_project.py on its own)."""
    before = {k: os.environ.get(k) for k in WITHOUT_DBT_TESTS}
    os.environ.update(WITHOUT_DBT_TESTS)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _full_refresh(root: Path, source: Path, timings: dict[str, float]) -> Path:
    """The reference: the raw records of ``source`` rebuilt with all history in one chunk."""
    full = _warehouse(root, "full-refresh")
    shutil.copyfile(source, full)
    t = time.monotonic()
    with _dbt_tests_left_out():
        record = run_range(full, root / "dbt-full", None, None, days=DAYS + 10, full_refresh=True)
    assert record.success, record.failures
    timings["full refresh, one chunk"] = time.monotonic() - t
    return full


def _transform_killed_then_run(
    root: Path, source: Path, name: str, args: list[str], rng: random.Random, horizon: float, kills: KillTally
) -> tuple[Path, float]:
    """A copy of ``source`` transformed by `tierlens transform ARGS` (without dbt's tests),
    SIGKILLed once at a random point within ``horizon`` seconds, then run to the end. Returns the
    copy and the last run's seconds."""
    warehouse = _warehouse(root, name)
    shutil.copyfile(source, warehouse)
    env = tierlens_env(root / f"home-{name}", dbt_tests=False)
    argv = [*TIERLENS, "transform", "-w", str(warehouse), *args]
    kills.kill(f"transform {args[0]}", argv, env, rng.uniform(0.0, horizon))
    status, seconds = run_step(argv, env)
    assert status == "ok", f"{' '.join(argv)}: {status}"
    return warehouse, seconds


def _python_step(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _publish_killed_then_run(root: Path, warehouse: Path, rng: random.Random, kills: KillTally) -> Path:
    """The warehouse's publish SIGKILLed once at a random point within the time an unkilled
    publish of a copy takes, then published again: the snapshot a reader opens."""
    env = tierlens_env(root / "home-publish")
    timing = root / "publish-timing.duckdb"
    shutil.copyfile(warehouse, timing)

    def publish(w: Path) -> list[str]:
        return _python_step(f"from tierlens.warehouse.publish import publish; publish({str(w)!r})")

    status, seconds = run_step(publish(timing), env)
    assert status == "ok", status
    kills.kill("publish", publish(warehouse), env, rng.uniform(0.0, seconds))
    status, _ = run_step(publish(warehouse), env)
    assert status == "ok", status
    return reader_path(warehouse)


def _retention_killed_then_run(
    root: Path, warehouse: Path, full: Path, rng: random.Random, kills: KillTally
) -> dict[str, Path]:
    """Copies of the incremental warehouse (reference, faulted) and of the full refresh (full),
    the newest access of each moved to RETENTION_NEWEST, so a month's retention cuts at the month
    boundary inside the history: retention applied to the reference and the full refresh
    unkilled, to the faulted copy SIGKILLed once at a random point within the unkilled one's
    time, then applied again."""
    copies = {name: root / f"retention-{name}.duckdb" for name in ("reference", "faulted", "full")}
    for name, copy in copies.items():
        shutil.copyfile(full if name == "full" else warehouse, copy)
        con = duckdb.connect(str(copy))
        con.execute(
            "update raw_file_access set end_time = ? where end_time = (select max(end_time) from raw_file_access)",
            [RETENTION_NEWEST],
        )
        con.close()
    env = tierlens_env(root / "home-retention")

    def retention(w: Path) -> list[str]:
        return _python_step(
            f"from tierlens.warehouse.history import apply_retention; apply_retention({str(w)!r}, {RETENTION_MONTHS})"
        )

    status, seconds = run_step(retention(copies["reference"]), env)
    assert status == "ok", status
    status, _ = run_step(retention(copies["full"]), env)
    assert status == "ok", status
    kills.kill("retention", retention(copies["faulted"]), env, rng.uniform(0.0, seconds))
    status, _ = run_step(retention(copies["faulted"]), env)
    assert status == "ok", status
    return copies


@pytest.fixture(scope="session")
def equivalence(tmp_path_factory) -> dict[str, Any]:
    began = time.monotonic()
    root = tmp_path_factory.mktemp("equivalence")
    rng = random.Random(KILL_SEED)
    kills = KillTally()
    out = _replay(root, rng, kills)
    timings = out["timings"]
    incremental = out["incremental"]
    out["full"] = _full_refresh(root, incremental, timings)
    horizon = timings["full refresh, one chunk"]
    # killed within the first half of the one-chunk build's time: a point in its first chunk's dbt
    # run (which takes longer than the whole one-chunk build's half), not one near its end that
    # wastes most of a build for the same claim, a full refresh killed mid-build
    out["days7"], timings["full refresh --days 7 (after a kill)"] = _transform_killed_then_run(
        root, incremental, "days7", ["--full-refresh", "--days", "7"], rng, horizon * KILL_WITHIN, kills
    )
    first = _options().start.date()
    out["middle"] = tuple(first + timedelta(days=d) for d in MIDDLE_BACKFILL)
    span = [d.isoformat() for d in out["middle"]]
    out["days1"], timings["back-fill --days 1 (after a kill)"] = _transform_killed_then_run(
        root, out["full"], "days1", ["--backfill", *span, "--days", "1"], rng, horizon / 2, kills
    )
    t = time.monotonic()
    out["published"] = _publish_killed_then_run(root, incremental, rng, kills)
    out["retention"] = _retention_killed_then_run(root, incremental, out["full"], rng, kills)
    timings["publish and retention faults"] = time.monotonic() - t
    out["kills"] = kills
    timings.update({f"killed {name} (included above)": s for name, s in kills.seconds.items()})
    timings["whole fixture"] = time.monotonic() - began
    print("\n".join(f"{k}: {v:.1f} s" for k, v in timings.items()))
    print(f"kill points: {kills}")
    return out
