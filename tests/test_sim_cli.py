"""`tierlens simulate cache` and `tierlens export trace` against a real warehouse file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tierlens.cli import app
from tierlens.records import FILE_ACCESS, Batch, RecordKind
from tierlens.simulator import read_oracle
from tierlens.warehouse import Warehouse

runner = CliRunner()


def accesses(n=2_000, seed=1) -> pa.Table:
    rng = np.random.default_rng(seed)
    files = (rng.zipf(1.3, n) - 1) % 150
    size = (files + 1) * 3 * 2**28  # up to ~113 GiB: well over 4 GiB
    start = 1.7e9 + np.sort(rng.uniform(0, 3 * 86400, n))
    cols = {f.name: pa.nulls(n, f.type) for f in FILE_ACCESS}
    cols.update(
        {
            "server_host": pa.array(["xcache01"] * n),
            "unique_id": pa.array([f"u{i}" for i in range(n)]),
            "server_role": pa.array(["cache"] * n),
            "file_lfn": pa.array([f"/atlas/rucio/data/f{f}.root" for f in files]),
            "file_size_bytes": pa.array(size, pa.int64()),
            "start_time": pa.array((start * 1e6).astype(np.int64), pa.timestamp("us", tz="UTC")),
            "end_time": pa.array(((start + 60) * 1e6).astype(np.int64), pa.timestamp("us", tz="UTC")),
            "read_bytes_at_close": pa.array(size // 4, pa.int64()),
            "job_identity": pa.array([f"synthetic.site.{i // 5}" for i in range(n)]),
            "close_seen": pa.array([True] * n),
        }
    )
    return pa.table(cols, schema=FILE_ACCESS)


def test_simulate_cache_writes_runs_idempotently(tmp_path):
    wh = tmp_path / "wh.duckdb"
    with Warehouse(wh) as w:
        w.load(Batch(RecordKind.FILE_ACCESS, accesses(), "test"))
    args = [
        "simulate",
        "cache",
        "-w",
        str(wh),
        "-s",
        "2TB",
        "-s",
        "20TB",
        "-p",
        "lru",
        "-p",
        "slac2",
        "-p",
        "slac3",
        "-p",
        "belady",
        "--min-reads",
        "2",
        "--mrc",
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    with Warehouse(wh, read_only=True) as w:
        runs = w.con.execute(
            "SELECT policy, capacity_bytes, requests, hits, bytes_from_cache, bytes_staged, "
            "hours, ssd_config, days_to_endurance FROM sim_cache_runs ORDER BY ALL"
        ).fetchall()
        hourly = w.con.execute("SELECT count(*), sum(requests) FROM sim_cache_hourly").fetchone()
        per_run = w.con.execute(
            "SELECT r.run_id, r.hits, sum(h.hits), r.bytes_from_cache, sum(h.bytes_from_cache) "
            "FROM sim_cache_runs r JOIN sim_cache_hourly h USING (run_id) "
            "GROUP BY ALL"
        ).fetchall()
        mrc = w.con.execute("SELECT count(*) FROM sim_cache_mrc").fetchone()[0]
    assert len(runs) == 8  # 2 sizes x 4 policies, twice: still 8
    assert all(r[2] == 2_000 for r in runs)
    hours = runs[0][6]
    assert hourly == (8 * hours, 8 * 2_000)
    assert all(r[1] == r[2] and r[3] == r[4] for r in per_run)
    assert 50 <= mrc <= 100
    belady = {r[1]: r[3] for r in runs if r[0] == "belady"}
    lru = {r[1]: r[3] for r in runs if r[0] == "lru"}
    assert all(belady[c] >= lru[c] for c in lru)


def test_export_trace_and_parquet_source(tmp_path):
    wh = tmp_path / "wh.duckdb"
    table = accesses(500, seed=2)
    with Warehouse(wh) as w:
        w.load(Batch(RecordKind.FILE_ACCESS, table, "test"))
    out = tmp_path / "trace.oracleGeneral"
    bad = runner.invoke(app, ["export", "trace", "-w", str(wh), "--out", str(out)])
    assert bad.exit_code == 1 and "size unit" in bad.output  # files over 4 GiB need a unit
    ok = runner.invoke(app, ["export", "trace", "-w", str(wh), "--out", str(out), "--size-unit", "4096"])
    assert ok.exit_code == 0, ok.output
    back = read_oracle(out, size_unit=4096)
    assert len(back) == 500 and back.size.max() >= 2**32
    pq.write_table(table, tmp_path / "fa.parquet")
    res = runner.invoke(
        app,
        [
            "simulate",
            "cache",
            "--parquet",
            str(tmp_path / "fa.parquet"),
            "-s",
            "5TB",
            "-p",
            "s3fifo",
            "-p",
            "lfu",
            "-p",
            "fifo",
            "-p",
            "slac1",
            "--no-write",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.output.count('"policy"') == 4


def _lru_hits(table: pa.Table, capacity: int) -> int:
    """Hits of a whole-object LRU cache of ``capacity`` bytes over the accesses in start order,
    counted here without the simulator."""
    from collections import OrderedDict

    order = np.argsort(table["start_time"].to_numpy(), kind="stable")
    names, sizes = table["file_lfn"].to_pylist(), table["file_size_bytes"].to_pylist()
    cache: OrderedDict[str, int] = OrderedDict()
    used = hits = 0
    for i in order:
        name, size = names[i], sizes[i]
        if name in cache:
            hits += 1
            cache.move_to_end(name)
            continue
        while cache and used + size > capacity:
            used -= cache.popitem(last=False)[1]
        if size <= capacity:
            cache[name] = size
            used += size
    return hits


def test_simulate_cache_prints_the_shared_number_format_and_fits_the_terminal(tmp_path, monkeypatch):
    import csv
    import io

    from tierlens.console import number_text

    wh = tmp_path / "wh.duckdb"
    table = accesses()
    with Warehouse(wh) as w:
        w.load(Batch(RecordKind.FILE_ACCESS, table, "test"))
    args = ["simulate", "cache", "-w", str(wh), "-s", "2TB", "-p", "lru", "--whole-object", "--no-write"]
    as_csv = runner.invoke(app, [*args, "--format", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    (row,) = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    hits = _lru_hits(table, 2 * 10**12)
    assert 0 < hits < table.num_rows
    assert float(row["hit_ratio"]) == pytest.approx(hits / table.num_rows, abs=1e-12)
    assert int(row["capacity"]) == 2 * 10**12  # bytes, unrounded
    from tierlens.cli import common

    for columns in (60, 200):
        # the console is created once per process: its width is set, as a terminal of that width would
        monkeypatch.setattr(common.console, "_width", columns)
        shown = runner.invoke(app, args, env={"COLUMNS": str(columns)}, terminal_width=columns)
        assert shown.exit_code == 0, shown.output
        assert max(len(line) for line in shown.stdout.splitlines()) <= columns and "…" not in shown.stdout
        assert number_text(hits / table.num_rows) in shown.stdout.split()  # one format, no digits cut
        assert "2.0 TB" in shown.stdout and "hit_ratio" in shown.stdout.split()
    # an empty selection says why instead of printing headers only
    none = runner.invoke(app, [*args, "--server", "no-such-host"])
    assert none.exit_code == 1
    assert "no file accesses to replay" in none.output and "server no-such-host" in none.output
