"""Chunk and history edges: a back-fill's chunk size never changes a table.

One small generated site (a few days, one node per storage type, so jobs run across every day's
edge and the first day opens on jobs already running) is loaded once and transformed four ways:
`tierlens transform --full-refresh` one day per dbt run, two days per run, all days in one run,
and the plain incremental build after each day's records arrive (the hourly path). Every
intermediate table and mart must hold the same rows in all four (floats within 1e-9 relative).

Marts built from jobs that overlap in time (a job's concurrency, node occupancy per hour, and
everything filtered on full occupancy) read the jobs overlapping their window's edges as context
and write only inside it (dbt/README.md, "Chunk and history edges").
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.warehouse_compare import built_tables, differences
from tierlens.pipeline import ingest
from tierlens.records import Batch, RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.transform import run_incremental, run_range

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DAYS = 3


def _arrival(kind: RecordKind, table: pa.Table) -> pa.Array | None:
    """When each record reaches the warehouse; None: with the first load."""
    if kind is RecordKind.JOB:
        return pc.coalesce(table["end_time"], table["start_time"], table["submit_time"])
    if kind is RecordKind.JOB_TAG:
        return table["tagged_at"]
    if kind is RecordKind.FILE_ACCESS:
        return pc.coalesce(table["end_time"], table["start_time"])
    return None


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("chunks")
    options = SyntheticOptions(days=float(DAYS), seed=7, site=demo_site(nodes_per_type=1), warmup_days=1.0)
    parts: dict[RecordKind, list[pa.Table]] = defaultdict(list)
    for b in generate(options):
        parts[b.kind].append(b.table)
    tables = {k: pa.concat_tables(v) for k, v in parts.items()}

    raw = root / "raw.duckdb"
    ingest([Batch(k, t, "synthetic") for k, t in tables.items()], raw)
    out: dict[str, Path] = {}
    for name, days in (("days1", 1), ("days2", 2), ("one_shot", DAYS + 10)):
        wh = root / f"{name}.duckdb"
        shutil.copy(raw, wh)
        run_range(wh, root / f"state-{name}", None, None, days=days, full_refresh=True)
        out[name] = wh

    # the hourly path: each day's records at their arrival, a plain build after each day
    hourly = root / "hourly.duckdb"
    first = options.start
    for i in range(DAYS + 2):
        since = None if i == 0 else first + timedelta(days=i)
        until = first + timedelta(days=i + 1) if i < DAYS + 1 else None
        batches = []
        for kind, table in tables.items():
            arrival = _arrival(kind, table)
            if arrival is None:
                if i == 0:
                    batches.append(Batch(kind, table, "synthetic"))
                continue
            arrival = arrival.cast(pa.timestamp("us", tz="UTC"))
            mask = pc.is_valid(arrival) if since is None else pc.greater_equal(arrival, pa.scalar(since))
            if until is not None:
                mask = pc.and_(mask, pc.less(arrival, pa.scalar(until)))
            chosen = table.filter(pc.fill_null(mask, False))
            if chosen.num_rows:
                batches.append(Batch(kind, chosen, "synthetic"))
        if batches:
            ingest(batches, hourly)
        if i >= 1:
            run_incremental(hourly, root / "state-hourly")
    out["hourly"] = hourly
    return out


@pytest.mark.parametrize("other", ["days1", "days2", "hourly"])
def test_every_table_equals_the_one_shot_build(builds, other):
    tables = built_tables(builds["one_shot"])
    assert ("marts", "job_io_profile") in tables and ("marts", "node_occupancy_hourly") in tables
    assert differences(builds[other], builds["one_shot"]) == {}
