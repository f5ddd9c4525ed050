"""The synthetic site: deterministic, schema-true, and with the seeds' effects coming out of the
queueing model rather than being written in."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tierlens.records import SPECS, RecordKind
from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
from tierlens.sources.synthetic.hammercloud import run_node_test
from tierlens.sources.synthetic.model import Queues, WholeFileLRU


def _collect(days: float = 2.0, seed: int = 5) -> dict[RecordKind, pa.Table]:
    parts: dict[RecordKind, list[pa.Table]] = {}
    for b in generate(SyntheticOptions(days=days, seed=seed, site=demo_site(nodes_per_type=1))):
        parts.setdefault(b.kind, []).append(b.table)
    return {k: pa.concat_tables(v) for k, v in parts.items()}


@pytest.fixture(scope="module")
def site_data() -> dict[RecordKind, pa.Table]:
    return _collect()


def test_batches_match_the_canonical_schemas(site_data):
    for kind, table in site_data.items():
        assert table.schema.equals(SPECS[kind].schema, check_metadata=False), kind
    assert set(site_data) == {RecordKind.NODE, RecordKind.JOB, RecordKind.JOB_TAG, RecordKind.FILE_ACCESS}


def test_same_seed_same_data_other_seed_other_data(site_data):
    again = _collect()
    for kind in site_data:
        assert again[kind].equals(site_data[kind]), kind
    other = _collect(seed=6)
    assert not other[RecordKind.JOB].equals(site_data[RecordKind.JOB])


def test_natural_keys_are_unique(site_data):
    for kind, table in site_data.items():
        key = SPECS[kind].natural_key
        joined = pc.binary_join_element_wise(*[pc.cast(table[c], pa.string()) for c in key], "\x1f")
        assert pc.count_distinct(joined).as_py() == table.num_rows, kind


def test_job_accounting_is_physical(site_data):
    jobs = site_data[RecordKind.JOB].to_pydict()
    wall = np.array(jobs["wall_seconds"])
    start = np.array([t.timestamp() for t in jobs["start_time"]])
    end = np.array([t.timestamp() for t in jobs["end_time"]])
    assert np.allclose(end - start, wall, atol=1e-3)
    # System time comes out of I/O wait, so only jobs that run extra threads exceed their cores.
    cpu = np.array(jobs["cpu_user_seconds"]) + np.array(jobs["cpu_system_seconds"])
    eff = cpu / (wall * np.array(jobs["allocated_cores"]))
    assert (eff > 0).all()
    assert (eff[np.array(jobs["job_class"]) == "analysis"] <= 1.0 + 1e-9).all()


def test_every_job_has_a_tag_with_its_nodes_storage(site_data):
    jobs, tags, nodes = (site_data[k].to_pydict() for k in (RecordKind.JOB, RecordKind.JOB_TAG, RecordKind.NODE))
    node_storage = dict(zip(nodes["node"], nodes["storage_type"]))
    node_arm = dict(zip(nodes["node"], nodes["ab_arm"]))
    tag_by_job = {
        j: (n, s, a) for j, n, s, a in zip(tags["job_id"], tags["node"], tags["storage_type"], tags["ab_arm"])
    }
    assert set(tag_by_job) == set(jobs["job_id"])
    for node, storage, arm in tag_by_job.values():
        assert node_storage[node] == storage and node_arm[node] == arm


def test_file_accesses_join_to_jobs_and_reads_are_partial(site_data):
    jobs = site_data[RecordKind.JOB]
    acc = site_data[RecordKind.FILE_ACCESS]
    identities = set(jobs["job_identity"].to_pylist())
    sent = [i for i in acc["job_identity"].to_pylist() if i is not None]
    assert sent and set(sent) <= identities
    # Some clients bypass the plugin (no identity), and the cache's own origin reads carry none.
    assert acc["job_identity"].null_count > 0
    direct = acc.filter(pc.equal(acc["app_name"], "athena"))
    frac = pc.divide(
        pc.cast(direct["read_bytes_at_close"], pa.float64()), pc.cast(direct["file_size_bytes"], pa.float64())
    ).to_numpy()
    assert (frac < 0.999).mean() > 0.5  # partial reads
    assert (frac <= 1.0 + 1e-9).all()


def test_cache_accesses_account_every_byte(site_data):
    acc = site_data[RecordKind.FILE_ACCESS]
    cache = acc.filter(pc.equal(acc["server_role"], "cache"))
    hit = cache["cache_hit_bytes"].to_numpy()
    miss = cache["cache_miss_bytes"].to_numpy()
    read = cache["read_bytes_at_close"].to_numpy()
    assert np.all(np.abs(hit + miss - read) <= 2)  # rounding of two halves
    assert hit.sum() > 0 and miss.sum() > 0
    origin = acc.filter(pc.equal(acc["server_role"], "origin"))
    assert origin["cache_hit_bytes"].null_count == origin.num_rows


def test_popular_files_are_read_again_within_days(site_data):
    acc = site_data[RecordKind.FILE_ACCESS]
    counts = pc.value_counts(acc["file_lfn"]).field("counts").to_numpy()
    assert counts.max() >= 5
    top = np.sort(counts)[::-1]
    # Zipf-like: the most read tenth of the files draws far more than a tenth of the reads.
    assert top[: max(1, len(top) // 10)].sum() > 0.25 * top.sum()


def test_fcfs_queue_waits_for_the_busy_server():
    q = Queues(1, 0.0, 1.0, 1.0)
    assert q.serve(0, 0.0, 10.0) == 10.0
    assert q.serve(0, 2.0, 1.0) == 11.0  # arrived at 2, waited until 10
    assert q.serve(0, 20.0, 1.0) == 21.0  # idle server starts at once


def test_lru_cache_hits_partial_and_evicts_oldest():
    lru = WholeFileLRU(capacity_bytes=100)
    assert lru.access(1, 60, 0.5) == (0, 30)
    assert lru.access(1, 60, 1.0) == (30, 30)  # the half read before is a hit
    assert lru.access(2, 50, 1.0) == (0, 50)  # 110 > 100: file 1 goes
    assert 1 not in lru.held and lru.used == 50


def test_eight_jobs_on_one_hdd_are_less_efficient_than_on_raid0():
    hdd = run_node_test("hdd", jobs=8)
    raid0 = run_node_test("raid0", jobs=8)
    single = run_node_test("hdd", jobs=1)
    assert hdd.mean_job_efficiency < raid0.mean_job_efficiency
    assert hdd.mean_job_efficiency < single.mean_job_efficiency  # contention, not the device alone
