"""The scale benchmark's vectorised site (tierlens.sources.synthetic.bulk) at a tiny size.

Its records must pass the real loader with no rejects, arrive exactly once whether a period is
read as one interval or hour by hour, and add up to what its own numeric draws say.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from tierlens.pipeline import ingest
from tierlens.records import SPECS, RecordKind
from tierlens.sources.synthetic.bulk import BulkSite, arriving, job_day
from tierlens.warehouse import Warehouse

SITE = BulkSite(
    cluster="t2tiny",
    cores=640,
    jobs_per_day=150,
    datasets=200,
    change_every_days=0.5,
    change_record_lag_days=0.3,
    max_wall_days=2.0,
)
T0 = SITE.start + timedelta(days=3)
T1 = T0 + timedelta(days=1)


def _keys(batches) -> dict[str, set]:
    keys: dict[str, set] = {}
    for b in batches:
        spec = SPECS[b.kind]
        assert b.table.schema.equals(spec.schema, check_metadata=False)
        cols = [b.table[k].to_pylist() for k in spec.natural_key]
        keys.setdefault(b.kind.value, set()).update(zip(*cols))
    return keys


def test_hourly_slices_give_the_days_records_once() -> None:
    whole = _keys(arriving(SITE, T0, T1))
    counts: Counter = Counter()
    hourly: dict[str, set] = {}
    for h in range(24):
        for kind, keys in _keys(arriving(SITE, T0 + timedelta(hours=h), T0 + timedelta(hours=h + 1))).items():
            counts[kind] += len(keys)
            hourly.setdefault(kind, set()).update(keys)
    assert hourly == whole
    assert counts == Counter({k: len(v) for k, v in whole.items()})  # no record in two hours
    assert {"job", "job_tag", "file_access", "site_change"} <= set(whole)


def _expected(lo: int, hi: int) -> dict[str, float]:
    """What the day's interval must hold, from the generator's numeric draws alone."""
    first, last = (lo - SITE.start_us) // 86_400_000_000, (hi - 1 - SITE.start_us) // 86_400_000_000
    e = Counter()
    for day in range(first, last + int(np.ceil(SITE.max_wall_days)) + 1):
        d = job_day(SITE, day)
        ended = (d.end >= lo) & (d.end < hi)
        e["jobs"] += int(ended.sum())
        e["steps"] += int((ended & d.has_step).sum())
        closed = (d.a_end >= lo) & (d.a_end < hi)
        total = d.a_read + d.a_readv
        cache = closed & (d.a_cache >= 0)
        e["user_accesses"] += int(closed.sum())
        e["fills"] += int((cache & (d.a_hit < total)).sum())
        e["miss_bytes"] += int((total - d.a_hit)[cache].sum())
        e["hit_bytes"] += int(d.a_hit[cache].sum())
        e["cpu_seconds"] += float((d.cpu_user + d.cpu_system)[ended].sum())
    return e


def test_records_load_without_rejects_and_add_up(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    summary = ingest(arriving(SITE, T0, T1, with_nodes=True), wh)
    assert summary.total_rejected == 0
    e = _expected(int(T0.timestamp() * 1e6), int(T1.timestamp() * 1e6))
    with Warehouse(wh, read_only=True) as w:
        q = lambda sql: w.con.execute(sql).fetchone()  # noqa: E731
        assert q("select count(*) from raw_rejects") == (0,)
        assert q(
            "select count(*) filter (where step_id = ''), count(*) filter (where step_id = 'batch') from raw_job"
        ) == (e["jobs"], e["steps"])
        assert q("select count(*) from raw_job_tag") == (e["jobs"],)
        assert q("select count(*) from raw_node") == (SITE.nodes,)
        users, fills = q(
            "select count(*) filter (where app_name <> 'xrootd'), "
            "count(*) filter (where app_name = 'xrootd') from raw_file_access"
        )
        assert (users, fills) == (e["user_accesses"], e["fills"])
        hit, miss, filled = q("""select sum(cache_hit_bytes) filter (where server_role = 'cache'),
                                        sum(cache_miss_bytes) filter (where server_role = 'cache'),
                                        sum(read_bytes_at_close) filter (where app_name = 'xrootd')
                                 from raw_file_access""")
        assert (hit, miss, filled) == (e["hit_bytes"], e["miss_bytes"], e["miss_bytes"])
        # a cache access's bytes are all hit, miss or bypass
        assert q("""select count(*) from raw_file_access where server_role = 'cache'
                    and cache_hit_bytes + cache_miss_bytes + cache_bypass_bytes <> read_bytes_at_close""") == (0,)
        cpu = q("select sum(cpu_user_seconds + cpu_system_seconds) from raw_job where step_id = ''")[0]
        assert cpu == pytest.approx(e["cpu_seconds"], rel=1e-9)
        # every access a job's client sent its identity for names a job of this site
        assert q("""select count(*) from raw_file_access where job_identity is not null
                    and not starts_with(job_identity, 'slurm.t2tiny.')""") == (0,)


def test_same_interval_twice_gives_the_same_records() -> None:
    def rows(kind: RecordKind) -> list:
        return [r for b in arriving(SITE, T0, T0 + timedelta(hours=3)) if b.kind == kind for r in b.table.to_pylist()]

    first = rows(RecordKind.FILE_ACCESS)
    job_day.cache_clear()
    assert rows(RecordKind.FILE_ACCESS) == first and first
