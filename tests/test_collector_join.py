"""int_file_access_by_job: exact joins on job_identity and the inferred join (client host + time
overlap, + pid), on rows from the collector's real capture plus a hand-made set of cases."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from support.dbt import build_with_upstream, table_rows
from support.rows import job_row
from tierlens.collector.decoder import COLUMNS
from tierlens.collector.service import Options, replay
from tierlens.collector.writer import rows_to_table
from tierlens.records import FILE_ACCESS, JOB, Batch, RecordKind, job_identity
from tierlens.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

CAPTURE = Path(__file__).parent / "data" / "xrootd-origin-xcache.pcap"
UTC = timezone.utc


def T(h: int, m: int = 0) -> datetime:
    return datetime(2024, 5, 6, h, m, tzinfo=UTC)


def _job(job_id, node, start, end, identity=True, batch="slurm", cluster="c"):
    wall = (end - start).total_seconds() if end else None
    no_plugin = {} if identity else {"job_identity": None}
    return job_row(
        batch,
        cluster,
        job_id,
        start,
        wall,
        user_name="u",
        account="a",
        partition="p",
        node=node,
        node_list=node,
        allocated_cores=1,
        cpu_user_seconds=1.0,
        cpu_system_seconds=0.0,
        **no_plugin,
    )


def _access(uid, client, pid, start, end, identity=None):
    row = dict.fromkeys(COLUMNS)
    row.update(
        server_host="xrd01:1094",
        unique_id=uid,
        server_role="origin",
        file_lfn=f"/f/{uid}",
        file_size_bytes=10,
        start_time=start.timestamp(),
        end_time=end.timestamp(),
        read_bytes_at_close=10,
        write_bytes_at_close=0,
        read_bytes=10,
        readv_bytes=0,
        write_bytes=0,
        client_host=client,
        client_pid=pid,
        job_identity=identity,
        close_seen=True,
    )
    return [row[c] for c in COLUMNS]


JOBS = [
    _job("1", "wn01", T(10), T(11)),
    _job("2", "wn01", T(10, 30), T(12)),
    _job("3", "wn02", T(10), None),  # still running
    _job("4", "wn04", T(10), T(11), identity=False),  # a job without a tierlens plugin
]
ACCESSES = [
    _access("x1", "wn01.example.org", 100, T(10, 5), T(10, 20), "slurm.c.1"),  # exact
    _access("x2", "wn01.example.org", 100, T(10, 15), T(10, 50)),  # same pid as x1 -> job 1
    _access("x3", "wn01.example.org", 200, T(10, 40), T(10, 50)),  # jobs 1 and 2 -> later start: 2
    _access("x4", "WN02.example.org", None, T(13), T(13, 10)),  # running job 3
    _access("x5", "wn03.example.org", 300, T(10, 40), T(10, 50)),  # no job on wn03
    _access("x6", "wn01.example.org", 100, T(10, 40), T(10, 50), "slurm.c.999"),  # unknown identity
    _access("x7", "wn01", 400, T(11, 30), T(11, 40)),  # only job 2 left on wn01
    _access("x8", "wn04.example.org", 1, T(10, 1), T(10, 59)),  # job without identity: host_time
    _access("x9", "wn01.example.org", 200, T(10, 45), T(11, 20)),  # overlap: job 1 15 min, job 2 35 min
]
EXPECTED = {  # unique_id: (job_id, match_quality, match_method, match_candidates)
    "x1": ("1", "exact", "identity", 1),
    "x2": ("1", "inferred", "host_pid", 2),
    "x3": ("2", "inferred", "host_time", 2),
    "x4": ("3", "inferred", "host_time", 1),
    "x5": (None, "unmatched", None, 0),
    "x6": (None, "unmatched", None, 0),
    "x7": ("2", "inferred", "host_time", 1),
    "x8": ("4", "inferred", "host_time", 1),
    "x9": ("2", "inferred", "host_time", 2),
}


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    root = tmp_path_factory.mktemp("join")
    wh = root / "warehouse.duckdb"
    replay(CAPTURE, Options(root / "capture"))
    capture_jobs = [
        _job(j, "vm", T(0), None, batch=b, cluster=c)
        for b, c, j in (
            ("slurm", "t2test", "101"),
            ("slurm", "t2test", "102"),
            ("slurm", "t2test", "103"),
            ("htcondor", "pool1", "7.0"),
            ("htcondor", "pool1", "8.0"),
        )
    ]
    with Warehouse(wh) as w:
        w.load(Batch(RecordKind.JOB, pa.Table.from_pylist(JOBS + capture_jobs, schema=JOB), "test-jobs"))
        w.load(Batch(RecordKind.FILE_ACCESS, rows_to_table(ACCESSES), "test-accesses"))
        for p in sorted((root / "capture").glob("file_access-*.parquet")):
            import pyarrow.parquet as pq

            w.load(Batch(RecordKind.FILE_ACCESS, pq.read_table(p), f"capture:{p.name}"))
    build_with_upstream(wh, root / "dbt", "int_file_access_by_job")
    return table_rows(wh, "intermediate.int_file_access_by_job")


def test_inferred_and_exact_matches(joined):
    got = {
        r["unique_id"]: (r["job_id"], r["match_quality"], r["match_method"], r["match_candidates"])
        for r in joined
        if r["unique_id"].startswith("x")
    }
    assert got == EXPECTED


def test_captured_accesses_join_exactly_on_the_identity_the_client_sent(joined):
    captured = [r for r in joined if not r["unique_id"].startswith("x")]
    assert len(captured) == 6
    by_job = sorted((r["batch_system"], r["cluster"], r["job_id"]) for r in captured if r["match_quality"] == "exact")
    assert by_job == [
        ("htcondor", "pool1", "7.0"),
        ("htcondor", "pool1", "8.0"),
        ("slurm", "t2test", "101"),
        ("slurm", "t2test", "102"),
        ("slurm", "t2test", "103"),
    ]
    # The cache's own fetch from the origin carries no identity and its client (127.0.0.1) is
    # no batch node: unmatched.
    fetch = [r for r in captured if r["app_name"] == "xrootd"]
    assert [(r["match_quality"], r["job_id"]) for r in fetch] == [("unmatched", None)]


def _load_and_reconcile(wh, tmp_path, rows: list[dict], source: str) -> None:
    """Load file_access rows, then build int_file_access_reconciled and what it reads."""
    with Warehouse(wh) as w:
        w.load(Batch(RecordKind.FILE_ACCESS, pa.Table.from_pylist(rows, schema=FILE_ACCESS), source))
    build_with_upstream(wh, tmp_path / "dbt", "int_file_access_reconciled")


def test_cache_bytes_rest_on_the_origin_record_of_the_cache_own_read(joined):
    """The capture's g-stream calls the first read through the cache all hits (b_miss 0, xrootd
    #2366); the origin recorded the cache fetching the file, so the first access is a miss of the
    file's size and the second, for which the cache contacted no origin, is all hits."""
    captured = {r["job_identity"]: r for r in joined if not r["unique_id"].startswith("x")}
    fill = next(r for r in joined if r["app_name"] == "xrootd")
    first, second = captured["slurm.t2test.102"], captured["slurm.t2test.103"]
    assert (first["gstream_hit_bytes"], first["gstream_miss_bytes"]) == (first["read_bytes_at_close"], 0)
    size = first["file_size_bytes"]
    assert fill["client_pid"] == first["server_pid"] and fill["read_bytes_at_close"] >= size
    assert first["origin_fill_bytes"] == fill["read_bytes_at_close"]
    assert (first["cache_miss_bytes"], first["cache_evidence"]) == (size, "both")
    assert first["cache_hit_bytes"] == first["read_bytes_at_close"] - size
    assert first["cache_access_count"] == 1 and first["cache_remotes"] != ""
    assert (second["cache_hit_bytes"], second["cache_miss_bytes"], second["cache_evidence"]) == (size, 0, "both")
    assert second["origin_fill_bytes"] is None and second["cache_remotes"] == ""
    origin_rows = [r for r in joined if r["server_role"] == "origin"]
    assert all(r["cache_evidence"] is None and r["cache_hit_bytes"] is None for r in origin_rows)


def test_without_origin_evidence_the_gstream_is_corrected(tmp_path):
    """Origins elsewhere (no fills seen): access_cnt 1 makes the g-stream's hit a miss; remotes ''
    makes it a hit; the blocks that reached the disk since the cache's previous report on the file
    were fetched for this access; otherwise its split stands."""
    wh = tmp_path / "wh.duckdb"
    rows = []
    for uid, count, remotes, hit, miss, lfn, blocks_done, minute in (
        ("g1", 1, "origin.example:1094", 900, 100, "/g1", None, 0),
        ("g2", 3, "", 0, 1000, "/g2", None, 0),
        ("g3", 2, "origin.example:1094", 600, 400, "/g3", None, 0),
        ("g4", None, None, 700, 300, "/g4", None, 0),
        # /g5: 10 blocks of 100 bytes; 2 on disk after access 1, 5 after access 2: 300 bytes fetched
        ("g5a", 1, "origin.example:1094", 1000, 0, "/g5", 2, 0),
        ("g5b", 2, "origin.example:1094", 950, 50, "/g5", 5, 10),
    ):
        r = dict(zip(COLUMNS, _access(uid, "wn09", 5, T(9), T(9, 5))))
        r.update(
            server_role="cache",
            server_host="xc:1094",
            read_bytes_at_close=1000,
            cache_hit_bytes=hit,
            cache_miss_bytes=miss,
            cache_bypass_bytes=0,
            cache_access_count=count,
            cache_remotes=remotes,
            server_pid=77,
            server_addr="10.1.1.1",
            start_time=T(9, minute),
            end_time=T(9, minute + 5),
            file_lfn=lfn,
            file_size_bytes=1000,
            cache_blocks=10 if blocks_done is not None else None,
            cache_blocks_done=blocks_done,
        )
        rows.append(r)
    _load_and_reconcile(wh, tmp_path, rows, "gstream-only")
    con = duckdb.connect(str(wh), read_only=True)
    try:
        got = {
            u: (h, m, e)
            for u, h, m, e in con.execute(
                "select unique_id, cache_hit_bytes, cache_miss_bytes, cache_evidence "
                "from intermediate.int_file_access_reconciled"
            ).fetchall()
        }
    finally:
        con.close()
    assert got == {
        "g1": (0, 1000, "gstream"),
        "g2": (1000, 0, "gstream"),
        "g3": (600, 400, "gstream"),
        "g4": (700, 300, "gstream"),
        "g5a": (0, 1000, "gstream"),
        "g5b": (700, 300, "gstream"),
    }


def test_todisk_comes_after_the_origin_and_before_the_gstream(tmp_path):
    """XRootD 5.7.2+ caches report b_todisk: without origin evidence it gives the miss (capped by
    what the access was served: prefetched blocks are in it too), where the g-stream's b_miss is 0
    on a first read (#2366); with a fill at a monitored origin, the origin's record stands."""
    wh = tmp_path / "wh.duckdb"
    mb = 1_048_576
    rows = []
    for uid, lfn, hit, miss, todisk, served in (
        ("t1", "/t1", mb, 0, mb, mb),  # first read: the g-stream calls it all hits
        ("t2", "/t2", 1000, 0, 0, 1000),  # read again, nothing fetched
        ("t3", "/t3", 1000, 0, 5000, 1000),  # a short read that set off a prefetch
        ("t4", "/t4", 1000, 0, 1000, 1000),
    ):  # the origin saw the cache read 300 bytes of it
        r = dict(zip(COLUMNS, _access(uid, "wn09", 5, T(9), T(9, 5))))
        r.update(
            server_role="cache",
            server_host="xc:1094",
            read_bytes_at_close=served,
            cache_hit_bytes=hit,
            cache_miss_bytes=miss,
            cache_bypass_bytes=0,
            cache_access_count=1,
            cache_remotes="origin.example:1094",
            server_pid=77,
            server_addr="10.1.1.1",
            file_lfn=lfn,
            file_size_bytes=10 * mb,
            cache_todisk_bytes=todisk,
            cache_prefetch_bytes=0,
        )
        rows.append(r)
    fill = dict(zip(COLUMNS, _access("o4", "10.1.1.1", 77, T(9, 1), T(9, 2))))
    fill.update(
        server_host="origin:1094", file_lfn="/t4", read_bytes_at_close=300, read_bytes=300, file_size_bytes=10 * mb
    )
    rows.append(fill)
    _load_and_reconcile(wh, tmp_path, rows, "todisk")
    con = duckdb.connect(str(wh), read_only=True)
    try:
        got = {
            u: (h, m, e, td)
            for u, h, m, e, td in con.execute(
                "select unique_id, cache_hit_bytes, cache_miss_bytes, cache_evidence, cache_todisk_bytes "
                "from intermediate.int_file_access_reconciled where server_role = 'cache'"
            ).fetchall()
        }
    finally:
        con.close()
    assert got == {
        "t1": (0, mb, "todisk", mb),
        "t2": (1000, 0, "todisk", 0),
        "t3": (0, 1000, "todisk", 5000),
        "t4": (700, 300, "both", 1000),
    }
