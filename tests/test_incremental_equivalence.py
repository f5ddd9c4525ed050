"""Incremental dbt builds, fed the demo month as it would arrive, equal a full refresh.

The synthetic demo month (with a site change) is generated once, then loaded into a warehouse in
the order a site would see it: every record at the time it arrives (an accounting record when its
job ends, a file access at its close, a tag when its job starts, a site change when it is
recorded), in daily batches for 29 days and hourly ones for the last day. Between loads plain
`dbt run` / `dbt build` builds the incremental models (dbt/README.md, "Invocation contract"):
six invocations in all, several days of loads caught up by one of them. Among the loads:

* a job whose accounting record arrives 8 hours after its file accesses (twice: once across a
  daily build, once across an hourly one): its accesses are unmatched until it arrives;
* a batch loaded twice (the warehouse's no-op);
* a late cache event: a cache access first loaded without the g-stream's figures, which arrive
  6 hours later and replace the row (twice, as above);
* a site change recorded 8 days after its date;
* two jobs whose first record is replaced 6 hours later (across an hourly build): one first filed
  on another node (the node sharing of both nodes' jobs changes), one whose true record is a
  launch failure (it leaves the marts of jobs that ran).

The warehouse is then copied and the copy rebuilt with `dbt build --full-refresh`. Every table of
the intermediate and marts schemas must be equal (EXCEPT ALL both ways). Floats: both builds
are DuckDB, but DuckDB sums in parallel and in an order that depends on how the rows are laid
out, so a sum of doubles can differ in its last bits between any two builds, incremental or not;
rows that differ are paired on their other columns and their floats must agree within 1e-9
relative (a re-associated sum of up to 1e6 terms is off by at most ~1e6 x 1.1e-16 of its
magnitude). The run log int_incremental_window is compared by its last row instead.
"""

from __future__ import annotations

import math
import shutil
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tierlens.pipeline import ingest
from tierlens.records import Batch, RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.sources.synthetic.generate import SyntheticChange
from tierlens.transform import run_dbt

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DAYS = 30
SEED = 42
NODES_PER_TYPE = 2
CHANGE = SyntheticChange(day=14, read_speedup=1.3, storage_type="hdd", description="hdd read-ahead 4 MB")
CHANGE_RECORDED_AFTER = timedelta(days=8)
SACCT_DELAY = timedelta(hours=8)
GSTREAM_DELAY = timedelta(hours=6)
ACCESS_DELAY = timedelta(hours=5)
JOB_REVISION_DELAY = timedelta(hours=6)
FLOAT_TOLERANCE = 1e-9
#: g-stream fields of a cache access: NULL until the cache's pfc event arrives.
GSTREAM_FIELDS = (
    "cache_hit_bytes",
    "cache_miss_bytes",
    "cache_bypass_bytes",
    "cache_attach_time",
    "cache_detach_time",
    "cache_access_count",
    "cache_remotes",
    "cache_blocks",
    "cache_blocks_done",
)
SOURCE = "replay"


def _options() -> SyntheticOptions:
    return SyntheticOptions(
        days=float(DAYS), seed=SEED, site=demo_site(nodes_per_type=NODES_PER_TYPE), changes=(CHANGE,)
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

    def _index_where(self, kind: RecordKind, mask: pa.Array) -> int:
        rows = pc.indices_nonzero(mask).to_pylist()
        assert rows, f"no {kind.value} record fits the planted case"
        return rows[0]

    def _deliver_twice(self, kind: RecordKind, i: int, first: pa.Table, second: pa.Table, delay: timedelta) -> None:
        """Record i of ``kind`` arrives as ``first`` when it would have, and as ``second`` ``delay`` later."""
        table, arrival = self.tables[kind], self.arrivals[kind]
        keep = pc.invert(pc.equal(pa.array(range(table.num_rows)), i))
        self.tables[kind] = table.filter(keep)
        self.arrivals[kind] = arrival.filter(keep)
        when = arrival[i].as_py()
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

    def revise_job(self, ending_from: datetime, ending_to: datetime, how: str) -> None:
        """A job (whole-job row, on a node) first loaded in another form, its true record replacing
        it JOB_REVISION_DELAY later (the loader upserts by job key). how 'node': first filed on
        another node of the site, so the node sharing of both nodes' jobs changes. how 'ran': the
        true record is a launch failure (no start, no wall), so the job leaves the marts of jobs
        that ran, its first form having been built into them."""
        jobs = self.tables[RecordKind.JOB]
        arrival = self.arrivals[RecordKind.JOB]
        taken = set(self.late_jobs) | set(self.revised_jobs)
        if how == "ran":
            # a launch failure reads no file: take a job no access names
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
        i = self._index_where(RecordKind.JOB, mask)
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


def _identity_matches(con: duckdb.DuckDBPyConnection, identity: str) -> tuple[int, int]:
    """(accesses carrying the job's identity, of them matched exactly) in int_file_access_by_job."""
    return con.execute(
        "select count(*), count(*) filter (where match_quality = 'exact') "
        "from intermediate.int_file_access_by_job where job_identity = ? or job_identity like '%,' || ?",
        [identity, identity],
    ).fetchone()


def _job_rows(con: duckdb.DuckDBPyConnection, key: tuple[str, str, str]) -> tuple[int, list[str | None]]:
    """(rows of the job in job_efficiency, nodes of its rows in job_io_profile)."""
    where = "where batch_system = ? and cluster = ? and job_id = ?"
    efficiency = con.execute(f"select count(*) from marts.job_efficiency {where}", list(key)).fetchone()[0]
    nodes = [n for (n,) in con.execute(f"select node from marts.job_io_profile {where}", list(key)).fetchall()]
    return efficiency, nodes


def _dbt(warehouse: Path, state: Path, command: str, extra: list[str] | None = None) -> float:
    t = time.monotonic()
    result = run_dbt(warehouse, state, command, extra)
    assert result.success, "\n".join(result.failures)
    return time.monotonic() - t


def _tables(db: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(
            con.execute(
                "select schema_name, table_name from duckdb_tables() "
                "where schema_name in ('intermediate', 'marts') and database_name = current_database()"
            ).fetchall()
        )
    finally:
        con.close()


def _working_tables(db: Path | duckdb.DuckDBPyConnection) -> list[str]:
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


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("incremental")
    options = _options()
    start = options.start
    replay = Replay(_generated(), start)
    day = timedelta(days=1)
    hour = timedelta(hours=1)
    last = start + (DAYS - 1) * day
    replay.delay_job(start + 19 * day + 17 * hour, start + 19 * day + 22 * hour)  # arrives on day 20
    replay.delay_job(last + 1 * hour, last + 2 * hour)
    replay.delay_gstream(start + 19 * day + 20 * hour, start + 20 * day)
    replay.delay_gstream(last + 3 * hour, last + 4 * hour)
    replay.delay_access(last + 2 * hour, last + 4 * hour)
    # built in their first form by build 4 (hours 0-5), in their true one by build 5 (hours 6-11)
    replay.revise_job(last + 1 * hour, last + 5 * hour, "node")
    replay.revise_job(last + 1 * hour, last + 5 * hour, "ran")

    warehouse = root / "incremental.duckdb"
    state = root / "dbt-incremental"
    timings: dict[str, float] = {}
    # identity -> (accesses, exact) after build 2; (server_host, unique_id) -> job_id inferred after build 4
    matched_before: dict[Any, Any] = {}
    twice = None

    def load(since: datetime | None, until: datetime | None) -> None:
        nonlocal twice
        batches = replay.batches(since, until)
        ingest(iter(batches), warehouse)
        if since is not None and since == start + 15 * day:
            twice = [b for b in batches if b.kind is RecordKind.JOB]

    # Daily batches; the first build (full: nothing is built yet) after day 10, then two
    # incremental builds that each catch up on several days of loads.
    load(None, start + day)
    for d in range(1, 10):
        load(start + d * day, start + (d + 1) * day)
    _dbt(warehouse, state, "seed")
    timings["build 1 (first, days 0-9)"] = _dbt(warehouse, state, "run")
    for d in range(10, 20):
        load(start + d * day, start + (d + 1) * day)
    timings["build 2 (days 10-19)"] = _dbt(warehouse, state, "run")
    con = duckdb.connect(str(warehouse), read_only=True)
    for identity in replay.late_jobs[:1]:
        matched_before[identity] = _identity_matches(con, identity)
    con.close()
    for d in range(20, DAYS - 1):
        load(start + d * day, start + (d + 1) * day)
    assert twice, "the day-15 job batch to load twice"
    again = ingest(iter(twice), warehouse)
    assert again.already_loaded == len(twice)
    timings["build 3 (days 20-28)"] = _dbt(warehouse, state, "run")
    # The last day in hourly batches, built three times.
    for h in range(0, 6):
        load(last + h * hour, last + (h + 1) * hour)
    timings["build 4 (last day, hours 0-5)"] = _dbt(warehouse, state, "run")
    con = duckdb.connect(str(warehouse), read_only=True)
    revised_before = {how: _job_rows(con, key) for how, (key, _, _) in replay.revised.items()}
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
    for h in range(6, 12):
        load(last + h * hour, last + (h + 1) * hour)
    timings["build 5 (hours 6-11)"] = _dbt(warehouse, state, "run")
    # A job_io_profile row no later record can reach (its job ended 8 days before the newest day,
    # more than max_wall_days before any job still to come could start), in build 6's window: a
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
    leftovers_before = _working_tables(con)
    # what a run that stopped midway (or an older tierlens) leaves, and a table of the site's own
    con.execute("create table main.change_effects__dbt_tmp20250101000000000000 as select 1 as x")
    con.execute("create table marts.job_efficiency__dbt_backup as select 1 as x")
    con.execute("create table main.site_notes__dbt_tmp_kept as select 1 as x")
    con.close()
    for h in range(12, 24):
        load(last + h * hour, last + (h + 1) * hour)
    load(last + day, None)
    timings["build 6 (hours 12-23, dbt build)"] = _dbt(warehouse, state, "build")
    con = duckdb.connect(str(warehouse))
    planted_after = con.execute(
        f"select concurrent_jobs from marts.job_io_profile where {keyed}", list(untouched[:4])
    ).fetchall()
    con.execute(f"update marts.job_io_profile set concurrent_jobs = ? where {keyed}", [untouched[4], *untouched[:4]])
    con.close()

    full = root / "full-refresh.duckdb"
    shutil.copyfile(warehouse, full)
    timings["full refresh (dbt build --full-refresh)"] = _dbt(full, root / "dbt-full", "build", ["--full-refresh"])
    print("\n".join(f"{k}: {v:.1f} s" for k, v in timings.items()))
    return {
        "incremental": warehouse,
        "full": full,
        "replay": replay,
        "matched_before": matched_before,
        "revised_before": revised_before,
        "io_profile_planted": (untouched[4] + 1000, planted_after),
        "working_tables": (leftovers_before, _working_tables(warehouse)),
        "timings": timings,
    }


def _floats(con: duckdb.DuckDBPyConnection, relation: str) -> set[str]:
    return {
        name
        for name, kind in con.execute(f"select column_name, column_type from (describe {relation})").fetchall()
        if kind in ("DOUBLE", "FLOAT") or kind.startswith("DECIMAL")
    }


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]]:
    cur = con.execute(sql)
    return [d[0] for d in cur.description], cur.fetchall()


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= FLOAT_TOLERANCE * max(1.0, abs(a), abs(b))


def assert_equal_tables(con: duckdb.DuckDBPyConnection, left: str, right: str, name: str) -> int:
    """EXCEPT ALL both ways; rows left over must pair up on their exact columns with close floats."""
    floats = _floats(con, left)
    columns, only_left = _rows(con, f"select * from {left} except all select * from {right}")
    _, only_right = _rows(con, f"select * from {right} except all select * from {left}")
    assert len(only_left) == len(only_right), (
        f"{name}: {len(only_left)} rows only in the incremental build, {len(only_right)} only in the full "
        f"refresh; first: {only_left[:2]} / {only_right[:2]}"
    )
    exact = [i for i, c in enumerate(columns) if c not in floats]
    key = lambda r: tuple((r[i] is None, str(r[i])) for i in exact)  # noqa: E731
    for a, b in zip(sorted(only_left, key=key), sorted(only_right, key=key)):
        for i, column in enumerate(columns):
            if i in exact:
                assert a[i] == b[i], f"{name}.{column}: incremental {a[i]!r} != full refresh {b[i]!r}\n {a}\n {b}"
            else:
                assert _close(a[i], b[i]), f"{name}.{column}: incremental {a[i]!r} vs full refresh {b[i]!r}"
    return con.execute(f"select count(*) from {left}").fetchone()[0]


def test_every_intermediate_table_and_mart_equals_a_full_refresh(replayed):
    incremental, full = replayed["incremental"], replayed["full"]
    tables = _tables(incremental)
    assert tables == _tables(full)
    assert ("marts", "job_efficiency") in tables and ("intermediate", "int_file_access_by_job") in tables
    con = duckdb.connect(str(incremental), read_only=True)
    con.execute(f"attach '{full}' as full_refresh (read_only)")
    counts = {}
    for schema, table in tables:
        if table == "int_incremental_window":
            continue
        counts[table] = assert_equal_tables(con, f'"{schema}"."{table}"', f'full_refresh."{schema}"."{table}"', table)
    con.close()
    for name in (
        "job_efficiency",
        "int_file_access_by_job",
        "cache_hourly",
        "node_occupancy_hourly",
        "change_effects",
        "efficiency_by_group",
        "int_efficiency_day_partials",
        "int_completed_efficiency_day_partials",
        "int_occupancy_day_partials",
        "int_input_size_day_partials",
        "int_node_jobs_day_partials",
        "int_file_reads_day_partials",
        "file_reads",
        "client_fairness",
        "file_popularity",
    ):
        assert counts[name] > 0, f"{name} is empty: nothing compared"


def test_the_builds_were_incremental(replayed):
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    modes = [
        r[0]
        for r in con.execute("select run_mode from intermediate.int_incremental_window order by built_at").fetchall()
    ]
    con.close()
    assert modes == ["full"] + ["incremental"] * 5


def test_incremental_builds_leave_no_working_tables_and_clear_old_ones(replayed):
    """Five incremental builds of the Python models (ab_uncertainty, int_ab_totals,
    change_effects) left none of their working tables, and the sixth dropped the leftovers planted
    before it, but not a table of the site's whose name only resembles one."""
    before, after = replayed["working_tables"]
    assert before == []
    assert after == ["main.site_notes__dbt_tmp_kept"]


def test_a_late_accounting_record_reaches_its_earlier_accesses(replayed):
    """The planted late job: its accesses, loaded and built before its record arrived, matched no
    job then, and are matched exactly (by identity) once it did."""
    identity = replayed["replay"].late_jobs[0]
    accesses, exact = replayed["matched_before"][identity]
    assert accesses > 0 and exact == 0
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    assert _identity_matches(con, identity) == (accesses, accesses)
    con.close()


def test_a_late_cache_event_replaces_the_access_figures(replayed):
    replay = replayed["replay"]
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    for server, uid in replay.late_cache_accesses:
        raw_hit, evidence = con.execute(
            "select r.cache_hit_bytes, a.cache_evidence from main.raw_file_access r "
            "join intermediate.int_file_access_reconciled a using (server_host, unique_id) "
            "where r.server_host = ? and r.unique_id = ?",
            [server, uid],
        ).fetchone()
        assert raw_hit is not None and evidence is not None
    con.close()


def test_replay_has_a_job_taking_accesses_from_an_older_one_and_a_late_access(replayed):
    """The cases a rebuild by key must find: accesses inferred to one job at build 4 and to another
    (a job whose record came later) at the end; an access that arrived after its job's record."""
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    now = {
        (host, uid): job
        for host, uid, job in con.execute(
            "select server_host, unique_id, job_id from intermediate.int_file_access_by_job "
            "where match_quality = 'inferred'"
        ).fetchall()
    }
    late = [
        con.execute(
            "select match_quality from intermediate.int_file_access_by_job where server_host = ? and unique_id = ?",
            list(key),
        ).fetchone()
        for key in replayed["replay"].late_accesses
    ]
    con.close()
    before = {k: v for k, v in replayed["matched_before"].items() if isinstance(k, tuple)}
    taken = [k for k, job in before.items() if k in now and now[k] != job]
    assert taken, "no access changed its inferred job between build 4 and the end"
    assert late == [("inferred",)]


def test_replay_has_a_job_that_changed_node_and_one_that_stopped_having_run(replayed):
    """The revised jobs of the last day: built by build 4 in their first form (one on another
    node, one that ran) and replaced by their true records before build 5: the first on its true
    node, the second a launch failure, in neither job_efficiency nor job_io_profile."""
    revised = replayed["replay"].revised
    before = replayed["revised_before"]
    con = duckdb.connect(str(replayed["incremental"]), read_only=True)
    key, first_node, true_node = revised["node"]
    assert first_node != true_node
    assert before["node"] == (1, [first_node])
    assert _job_rows(con, key) == (1, [true_node])
    key, _, node = revised["ran"]
    assert before["ran"] == (1, [node])
    assert _job_rows(con, key) == (0, [])
    con.close()


def test_job_io_profile_was_rebuilt_by_job(replayed):
    """Build 6 rebuilt job_io_profile by job, not its window's days: the row planted off by 1,000
    after build 5, of a job no record of build 6 can touch, came through it unchanged."""
    planted, after = replayed["io_profile_planted"]
    assert after == [(planted,)]
