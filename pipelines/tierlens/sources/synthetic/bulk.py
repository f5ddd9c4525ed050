"""A large site's records drawn with numpy and Arrow, fast enough to fill years of history.

The discrete-event site (``generate.py``) models how storage slows each job down; it runs a few
thousand jobs a second, so a year of a 10,000-core Tier-2 would take hours. This module draws the
same canonical records (job with steps, job_tag, file_access with XCache g-stream fields and the
origin fills a cache makes, node, site_change) directly from distributions, a day of jobs at a
time, for the scale benchmark and anything else that needs volume rather than a causal model.

Records come out in the order a real site delivers them: a job's accounting row when the job ends
(sacct), a file access when it closes (the collector), a site change when the manager records it.
``arriving(site, t0, t1)`` yields what arrives in [t0, t1), so an hour's ingest or a month's
back-fill see the same rows, and slicing a period into hours gives exactly the period's rows.

Every random draw for the jobs ending on UTC day ``d`` comes from a generator seeded by
(seed, d), so any hour can be produced on its own, always with the same ids and values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...records import FILE_ACCESS, GSTREAM_572, GSTREAM_FIELDS, JOB, JOB_TAG, NODE, SITE_CHANGE, Batch, RecordKind

DAY_US = 86_400 * 1_000_000
HOUR_US = 3_600 * 1_000_000
SOURCE = "synthetic-bulk"
BATCH_SYSTEM = "slurm"
#: XCache block size (pfc.blocksize default): the g-stream's n_blks counts these.
CACHE_BLOCK_BYTES = 1 << 20
#: Job ids of one end day: day * this + index, so ids never collide across days.
JOBS_PER_DAY_ID_SPAN = 1_000_000

STORAGE_DEVICES = {
    "hdd": ["Seagate ST4000NM0035"],
    "ssd": ["Samsung MZ7LH960HAJR"],
    "nvme": ["Samsung MZQL2960HCJR"],
    "raid0": ["Seagate ST4000NM0035", "Seagate ST4000NM0035"],
}


@dataclass(frozen=True)
class BulkSite:
    """A site's size and workload mix; the defaults are a 10,000-core WLCG Tier-2."""

    cluster: str = "t2bulk"
    cores: int = 10_000
    slots_per_node: int = 64
    jobs_per_day: int = 20_000
    #: Mean file accesses of an analysis and of a production job (with 70 % analysis: 10.6 a job, ~300,000 rows a day with the origin fills).
    analysis_accesses: float = 13.0
    production_accesses: float = 5.0
    analysis_share: float = 0.7
    #: Share of jobs whose batch script is accounted as a step ('batch') beside the whole job.
    step_share: float = 0.5
    #: Share of jobs whose client sent no identity (matched to jobs by host and time instead).
    missing_identity_share: float = 0.05
    failed_share: float = 0.03
    #: Longest wall time the site allows; sacct rows arrive up to this long after the job's start.
    max_wall_days: float = 7.0
    storage_types: tuple[str, ...] = ("hdd", "ssd", "nvme", "raid0")
    caches: tuple[str, ...] = ("xcache01", "xcache02")
    origins: tuple[str, ...] = ("se01", "se02", "se03")
    datasets: int = 20_000
    files_per_dataset: int = 40
    #: A site change every this many days, recorded up to ``change_record_lag_days`` later.
    change_every_days: float = 45.0
    change_record_lag_days: float = 4.0
    seed: int = 2026
    start: datetime = datetime(2025, 1, 1, tzinfo=timezone.utc)

    @property
    def nodes(self) -> int:
        return -(-self.cores // self.slots_per_node)

    @property
    def start_us(self) -> int:
        return int(self.start.timestamp()) * 1_000_000

    def node_name(self, i: np.ndarray | int) -> pa.Array:
        return _join("wn", _pad(np.atleast_1d(i), 4), f".{self.cluster}")

    def host(self, name: str) -> str:
        return f"{name}.{self.cluster}"


# ----------------------------------------------------------------------------- string helpers


def _pad(numbers: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(np.asarray(numbers, dtype=np.int64)), pa.string()), width, "0")


def _num(numbers: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(np.asarray(numbers, dtype=np.int64)), pa.string())


def _join(*parts: str | pa.Array) -> pa.Array:
    """Element-wise concatenation of string arrays and constants, without a Python loop."""
    return pc.binary_join_element_wise(*parts, "")


def _ts(us: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(us, dtype=np.int64), type=pa.int64()).cast(JOB.field("start_time").type)


def _take(values: tuple[str, ...] | list[str], index: np.ndarray) -> pa.Array:
    return pa.array(list(values), pa.string()).take(pa.array(np.asarray(index, dtype=np.int64)))


# ----------------------------------------------------------------------------- the site's fixed parts


@lru_cache(maxsize=4)
def _file_sizes(site: BulkSite) -> np.ndarray:
    """Size of every file of the catalogue (datasets x files_per_dataset), fixed for the site."""
    rng = np.random.default_rng([site.seed, 0xF11E])
    n = site.datasets * site.files_per_dataset
    return np.minimum(rng.lognormal(np.log(2.5e9), 0.6, n), 12e9).astype(np.int64)


def node_storage(site: BulkSite) -> np.ndarray:
    """Index into ``storage_types`` of each node's scratch (blocks of consecutive nodes)."""
    return (np.arange(site.nodes) * len(site.storage_types)) // site.nodes


def node_arm(site: BulkSite) -> np.ndarray:
    """0 for arm A (reads direct from the origins), 1 for B (reads through a cache)."""
    return np.arange(site.nodes) % 2


def node_batch(site: BulkSite) -> Batch:
    storage = node_storage(site)
    types = [site.storage_types[s] for s in storage]
    table = pa.table(
        {
            "cluster": pa.array([site.cluster] * site.nodes),
            "node": site.node_name(np.arange(site.nodes)),
            "storage_type": pa.array(types),
            "device_models": pa.array([STORAGE_DEVICES.get(t, ["unknown"]) for t in types], pa.list_(pa.string())),
            "device_count": pa.array([len(STORAGE_DEVICES.get(t, ["unknown"])) for t in types], pa.int32()),
            "job_slots": pa.array(np.full(site.nodes, site.slots_per_node, dtype=np.int32)),
            "nic_gbps": pa.array(np.full(site.nodes, 25.0)),
            "ab_arm": _take(("A", "B"), node_arm(site)),
        },
        schema=NODE,
    )
    return Batch(RecordKind.NODE, table, SOURCE)


def changes(site: BulkSite, days: float) -> pa.Table:
    """The site changes of the first ``days`` days: one every ``change_every_days``, each on one
    storage type, recorded (and so arriving) some days after it took effect."""
    n = int(days // site.change_every_days)
    rng = np.random.default_rng([site.seed, 0xC4A9])
    k = np.arange(1, n + 1)
    at = site.start_us + (k * site.change_every_days * DAY_US).astype(np.int64)
    lag = (rng.uniform(0, site.change_record_lag_days, n) * DAY_US).astype(np.int64)
    kinds = np.arange(n) % len(site.storage_types)
    return pa.table(
        {
            "change_id": _join(f"bulk-{site.cluster}-", _num(k)),
            "changed_at": _ts(at),
            "description": _join("scratch read-ahead retuned on ", _take(site.storage_types, kinds), " nodes"),
            "category": pa.array(["storage"] * n, pa.string()),
            "cluster": pa.array([site.cluster] * n, pa.string()),
            "scope_nodes": pa.nulls(n, pa.list_(pa.string())),
            "scope_storage_type": _take(site.storage_types, kinds),
            "scope_ab_arm": pa.nulls(n, pa.string()),
            "changed_by": pa.array(["site-admin"] * n, pa.string()),
            "recorded_at": _ts(at + lag),
        },
        schema=SITE_CHANGE,
    )


# ----------------------------------------------------------------------------- one day of jobs


@dataclass(frozen=True)
class JobDay:
    """The jobs that end on one UTC day and all their file accesses, as numbers (strings are
    made only for the rows an interval selects). Access arrays hold the users' accesses; the
    origin fills of cache misses are derived from them."""

    day: int
    # per job
    job_id: np.ndarray
    production: np.ndarray  # bool
    vo: np.ndarray  # 0 atlas, 1 cms
    user: np.ndarray
    node: np.ndarray
    cores: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cpu_user: np.ndarray
    cpu_system: np.ndarray
    failed: np.ndarray
    has_step: np.ndarray
    bytes_read: np.ndarray
    bytes_written: np.ndarray
    # per access
    a_job: np.ndarray  # index into the job arrays
    a_file: np.ndarray
    a_start: np.ndarray
    a_end: np.ndarray
    a_read: np.ndarray
    a_readv: np.ndarray
    a_read_ops: np.ndarray
    a_readv_ops: np.ndarray
    a_cache: np.ndarray  # -1: read from an origin directly, else the cache's index
    a_hit: np.ndarray
    a_access_count: np.ndarray
    a_pid: np.ndarray
    a_identity: np.ndarray  # bool: the client sent the job identity


@lru_cache(maxsize=9)
def job_day(site: BulkSite, day: int) -> JobDay:
    """The jobs ending on ``day`` (days since ``site.start``) and their accesses."""
    rng = np.random.default_rng([site.seed, day])
    n = int(rng.poisson(site.jobs_per_day))
    day0 = site.start_us + day * DAY_US
    end = day0 + np.sort(rng.integers(0, DAY_US, n))
    production = rng.random(n) >= site.analysis_share
    vo = (rng.random(n) < 0.35).astype(np.int8)
    user = np.where(production, 0, 1 + rng.zipf(1.6, n) % 40).astype(np.int16)
    cores = np.where(production & (rng.random(n) < 0.5), 8, 1).astype(np.int32)
    median = np.where(production, 10 * 3600.0, 2 * 3600.0)
    wall_s = np.clip(rng.lognormal(np.log(median), 0.7), 60.0, site.max_wall_days * 86400.0)
    long_tail = rng.random(n) < 0.01  # a few jobs run for days, up to the site's limit
    wall_s = np.where(long_tail, rng.uniform(2, site.max_wall_days, n) * 86400.0, wall_s)
    wall_us = (wall_s * 1e6).astype(np.int64)
    start = end - wall_us
    submit = start - (rng.exponential(1800.0, n) * 1e6).astype(np.int64)
    node = rng.integers(0, site.nodes, n).astype(np.int32)
    storage = node_storage(site)[node]
    # hdd scratch slows analysis jobs; production is CPU bound; a few production jobs run more
    # threads than cores (efficiency above 1, kept and flagged downstream)
    eff = np.where(production, rng.uniform(0.85, 0.98, n), rng.beta(6, 3, n) * (1.0 - 0.12 * (storage == 0)))
    eff = np.where(production & (rng.random(n) < 0.03), eff * rng.uniform(1.1, 1.4, n), eff)
    cpu = np.round(eff * wall_s * cores, 3)
    cpu_system = np.round(cpu * 0.03, 3)
    failed = rng.random(n) < site.failed_share

    per_job = rng.poisson(np.where(production, site.production_accesses, site.analysis_accesses))
    m = int(per_job.sum())
    a_job = np.repeat(np.arange(n), per_job)
    # an access opens somewhere in the job's run and closes before the job ends
    a_start = start[a_job] + (rng.random(m) * 0.9 * wall_us[a_job]).astype(np.int64)
    dur = np.minimum((rng.lognormal(np.log(240.0), 1.0, m) * 1e6).astype(np.int64), end[a_job] - a_start)
    a_end = a_start + np.maximum(dur, 0)
    # popularity drifts: the hot datasets of a day are a window moving through the catalogue
    rank = np.minimum(rng.zipf(1.25, m), site.datasets) - 1
    dataset = (rank + day * 40) % site.datasets
    a_file = (dataset * site.files_per_dataset + rng.integers(0, site.files_per_dataset, m)).astype(np.int64)
    size = _file_sizes(site)[a_file]
    fraction = np.where(production[a_job], 1.0, np.clip(rng.beta(2.2, 1.6, m), 0.05, 1.0))
    total = (size * fraction).astype(np.int64)
    vector = np.where(production[a_job], 0.0, rng.uniform(0.3, 0.8, m))
    a_readv = (total * vector).astype(np.int64)
    a_read = total - a_readv
    a_read_ops = np.maximum(1, a_read // (4 << 20)).astype(np.int64)
    a_readv_ops = np.where(a_readv > 0, np.maximum(1, a_readv // (16 << 20)), 0).astype(np.int64)
    via_cache = (node_arm(site)[node[a_job]] == 1) & ~production[a_job]
    a_cache = np.where(via_cache, a_file % len(site.caches), -1).astype(np.int8)
    # popular files are re-read from the cache; the first access of a file cannot be a hit
    a_access_count = np.where(
        rng.random(m) < np.clip(rank / 50.0, 0.1, 0.95), 1, 2 + rng.poisson(np.maximum(1.0, 30.0 / (1 + rank)))
    ).astype(np.int64)
    hit_share = np.where(a_access_count > 1, rng.beta(8, 2, m), 0.0)
    a_hit = np.where(via_cache, (total * hit_share).astype(np.int64), 0)
    a_pid = rng.integers(1000, 4_000_000, n)[a_job].astype(np.int32) + (np.arange(m) % 7).astype(np.int32)
    a_identity = rng.random(n)[a_job] >= site.missing_identity_share

    written = (rng.uniform(50e6, 400e6, n) * np.where(production, cores * 4, 1)).astype(np.int64)
    return JobDay(
        day,
        day * JOBS_PER_DAY_ID_SPAN + np.arange(n, dtype=np.int64),
        production,
        vo,
        user,
        node,
        cores,
        submit,
        start,
        end,
        cpu - cpu_system,
        cpu_system,
        failed,
        rng.random(n) < site.step_share,
        np.bincount(a_job, weights=total, minlength=n).astype(np.int64),
        written,
        a_job,
        a_file,
        a_start,
        a_end,
        a_read,
        a_readv,
        a_read_ops,
        a_readv_ops,
        a_cache,
        a_hit,
        a_access_count,
        a_pid,
        a_identity,
    )


# ----------------------------------------------------------------------------- rows of an interval


def _identity(site: BulkSite, job_id: np.ndarray) -> pa.Array:
    return _join(f"{BATCH_SYSTEM}.{site.cluster}.", _num(job_id))


def job_rows(site: BulkSite, d: JobDay, sel: np.ndarray) -> pa.Table:
    """Whole-job rows of the selected jobs, then a 'batch' step row for those with a step."""
    whole = _job_table(site, d, sel, "")
    step = sel[d.has_step[sel]]
    return pa.concat_tables([whole, _job_table(site, d, step, "batch")])


def _job_table(site: BulkSite, d: JobDay, sel: np.ndarray, step_id: str) -> pa.Table:
    n = len(sel)
    production, vo = d.production[sel], d.vo[sel]
    account = _take(("atlas-analysis", "cms-analysis", "atlas-prod", "cms-prod"), vo + 2 * production)
    user = pc.if_else(
        pa.array(production),
        _join(_take(("atlas", "cms"), vo), "prd"),
        _join(_take(("atlas", "cms"), vo), "u", _pad(d.user[sel], 2)),
    )
    node = site.node_name(d.node[sel])
    wall = (d.end[sel] - d.start[sel]) / 1e6
    failed = d.failed[sel]
    return pa.table(
        {
            "batch_system": pa.array([BATCH_SYSTEM] * n, pa.string()),
            "cluster": pa.array([site.cluster] * n, pa.string()),
            "job_id": _num(d.job_id[sel]),
            "step_id": pa.array([step_id] * n, pa.string()),
            "job_identity": _identity(site, d.job_id[sel]),
            "user_name": user,
            "account": account,
            "vo": _take(("atlas", "cms"), vo),
            "job_class": _take(("analysis", "production"), production.astype(np.int8)),
            "partition": pa.array(["grid"] * n, pa.string()),
            "node": node,
            "node_list": node,
            "submit_time": _ts(d.submit[sel]),
            "start_time": _ts(d.start[sel]),
            "end_time": _ts(d.end[sel]),
            "allocated_cores": pa.array(d.cores[sel], pa.int32()),
            "cpu_user_seconds": pa.array(d.cpu_user[sel]),
            "cpu_system_seconds": pa.array(d.cpu_system[sel]),
            "wall_seconds": pa.array(np.round(wall, 3)),
            "state": _take(("COMPLETED", "FAILED"), failed.astype(np.int8)),
            "exit_code": pa.array(np.where(failed, 1, 0).astype(np.int32)),
            "bytes_read": pa.array(d.bytes_read[sel]),
            "bytes_written": pa.array(d.bytes_written[sel]),
            "sluid": pa.nulls(n, pa.string()),  # the bench site runs a Slurm before 26.05
        },
        schema=JOB,
    )


def tag_rows(site: BulkSite, d: JobDay, sel: np.ndarray) -> pa.Table:
    """The SPANK plugin's tag of each selected job, recorded when it started."""
    n = len(sel)
    node = d.node[sel]
    storage = node_storage(site)[node]
    arm = node_arm(site)[node]
    models = pa.array([STORAGE_DEVICES.get(t, ["unknown"]) for t in site.storage_types], pa.list_(pa.string()))
    cache = (d.job_id[sel] % len(site.caches)).astype(np.int64)
    routes = _join("cache:", _take([site.host(c) for c in site.caches], cache), ":1094")
    direct = pa.array(arm == 0) if n else pa.array([], pa.bool_())
    return pa.table(
        {
            "batch_system": pa.array([BATCH_SYSTEM] * n, pa.string()),
            "cluster": pa.array([site.cluster] * n, pa.string()),
            "job_id": _num(d.job_id[sel]),
            "step_id": pa.array([""] * n, pa.string()),
            "node": site.node_name(node),
            "storage_type": _take(site.storage_types, storage),
            "device_models": models.take(pa.array(storage.astype(np.int64))),
            "scratch_path": pa.array(["/scratch"] * n, pa.string()),
            "ab_arm": _take(("A", "B"), arm),
            "cache_route": pc.if_else(direct, pa.scalar("direct"), routes),
            "tagged_at": _ts(d.start[sel]),
            "tagger": pa.array(["slurm-spank"] * n, pa.string()),
        },
        schema=JOB_TAG,
    )


def _server_pid(server: np.ndarray) -> np.ndarray:
    return (4100 + server).astype(np.int32)


def access_rows(site: BulkSite, d: JobDay, sel: np.ndarray) -> pa.Table:
    """The selected user accesses, then the origin fill of each selected cache access that missed.

    A cache stages its misses from the origin under its own login: at the origin that is an
    access from the cache host, by the cache server's pid, app 'xrootd', with no job identity.
    """
    users = _user_access_table(site, d, sel)
    fills = sel[(d.a_cache[sel] >= 0) & (d.a_hit[sel] < d.a_read[sel] + d.a_readv[sel])]
    return pa.concat_tables([users, _fill_table(site, d, fills)])


def _lfn(site: BulkSite, file: np.ndarray) -> pa.Array:
    dataset, k = file // site.files_per_dataset, file % site.files_per_dataset
    vo = _take(("cms", "atlas", "atlas"), dataset % 3)
    return _join(
        "/", vo, "/rucio/data25_13p6TeV/DAOD_PHYS.", _pad(40_000_000 + dataset, 8), "._", _pad(k + 1, 6), ".pool.root.1"
    )


def _common_access(
    site: BulkSite,
    d: JobDay,
    sel: np.ndarray,
    read: np.ndarray,
    readv: np.ndarray,
    read_ops: np.ndarray,
    readv_ops: np.ndarray,
) -> dict[str, pa.Array]:
    n = len(sel)
    size = _file_sizes(site)[d.a_file[sel]]
    return {
        "file_lfn": _lfn(site, d.a_file[sel]),
        "file_size_bytes": pa.array(size),
        "start_time": _ts(d.a_start[sel]),
        "end_time": _ts(d.a_end[sel]),
        "read_single_average_bytes": pa.array(read / np.maximum(read_ops, 1)),
        "read_vector_average_bytes": pa.array(np.where(readv_ops > 0, readv / np.maximum(readv_ops, 1), 0.0)),
        "write_average_bytes": pa.array(np.zeros(n)),
        "read_bytes_at_close": pa.array(read + readv),
        "write_bytes_at_close": pa.array(np.zeros(n, np.int64)),
        "read_bytes": pa.array(read),
        "readv_bytes": pa.array(readv),
        "write_bytes": pa.array(np.zeros(n, np.int64)),
        "read_ops": pa.array(read_ops),
        "readv_ops": pa.array(readv_ops),
        "write_ops": pa.array(np.zeros(n, np.int64)),
        "close_seen": pa.array(np.ones(n, bool)),
        "end_reason": pa.array(["close"] * n, pa.string()),
    }


def _user_access_table(site: BulkSite, d: JobDay, sel: np.ndarray) -> pa.Table:
    n = len(sel)
    job = d.a_job[sel]
    cache = d.a_cache[sel].astype(np.int64)
    on_cache = cache >= 0
    origin = d.a_file[sel] % len(site.origins)
    hosts = [site.host(c) for c in site.caches] + [site.host(o) for o in site.origins]
    server = np.where(on_cache, cache, len(site.caches) + origin)
    read, readv = d.a_read[sel], d.a_readv[sel]
    total = read + readv
    hit = d.a_hit[sel]
    cache_mask = pa.array(~on_cache)  # true where the field does not apply (not a cache)
    blocks = -(-_file_sizes(site)[d.a_file[sel]] // CACHE_BLOCK_BYTES)
    production = d.production[job]
    cols = _common_access(site, d, sel, read, readv, d.a_read_ops[sel], d.a_readv_ops[sel])
    identity = _identity(site, d.job_id[job])
    cols |= {
        "server_host": _take(hosts, server),
        "unique_id": _join(f"u{d.day}.", _num(sel)),
        "server_role": _take(("origin", "cache"), on_cache.astype(np.int8)),
        "client_host": site.node_name(d.node[job]),
        "client_pid": pa.array(d.a_pid[sel]),
        "app_name": pc.if_else(pa.array(production), pa.scalar("xrdcp"), _take(("athena", "cmsRun"), d.vo[job])),
        "job_identity": pc.if_else(pa.array(d.a_identity[sel]), identity, pa.scalar(None, pa.string())),
        "cache_hit_bytes": _unless(cache_mask, hit),
        "cache_miss_bytes": _unless(cache_mask, total - hit),
        "cache_bypass_bytes": _unless(cache_mask, np.zeros(n, np.int64)),
        "server_pid": pa.array(_server_pid(server)),
        "server_addr": _join("10.1.0.", _num(10 + server)),
        "cache_attach_time": _unless(cache_mask, d.a_start[sel], JOB.field("start_time").type),
        "cache_detach_time": _unless(cache_mask, d.a_end[sel], JOB.field("start_time").type),
        "cache_access_count": _unless(cache_mask, d.a_access_count[sel]),
        "cache_remotes": pc.if_else(
            cache_mask,
            pa.scalar(None, pa.string()),
            pc.if_else(pa.array(hit < total), _take(hosts, len(site.caches) + origin), pa.scalar("")),
        ),
        "cache_blocks": _unless(cache_mask, blocks),
        "cache_blocks_done": _unless(cache_mask, np.minimum(blocks, -(-total // CACHE_BLOCK_BYTES))),
        # the bench site's caches run an XRootD before 5.7.2, whose g-stream has no todisk/prefetch
        **{name: pa.nulls(n, FILE_ACCESS.field(name).type) for name in GSTREAM_572},
    }
    return pa.table({f.name: cols[f.name] for f in FILE_ACCESS}, schema=FILE_ACCESS)


def _fill_table(site: BulkSite, d: JobDay, sel: np.ndarray) -> pa.Table:
    n = len(sel)
    total = d.a_read[sel] + d.a_readv[sel]
    miss = total - d.a_hit[sel]
    ops = np.maximum(1, miss // (4 << 20)).astype(np.int64)
    cache = d.a_cache[sel].astype(np.int64)
    origin = d.a_file[sel] % len(site.origins)
    nulls = {name: pa.nulls(n, FILE_ACCESS.field(name).type) for name in ("job_identity", *GSTREAM_FIELDS)}
    cols = _common_access(site, d, sel, miss, np.zeros(n, np.int64), ops, np.zeros(n, np.int64))
    cols |= nulls | {
        "server_host": _take([site.host(o) for o in site.origins], origin),
        "unique_id": _join(f"f{d.day}.", _num(sel)),
        "server_role": pa.array(["origin"] * n, pa.string()),
        "client_host": _take([site.host(c) for c in site.caches], cache),
        "client_pid": pa.array(_server_pid(cache)),
        "app_name": pa.array(["xrootd"] * n, pa.string()),
        "server_pid": pa.array(_server_pid(len(site.caches) + origin)),
        "server_addr": _join("10.1.0.", _num(10 + len(site.caches) + origin)),
    }
    return pa.table({f.name: cols[f.name] for f in FILE_ACCESS}, schema=FILE_ACCESS)


def _unless(mask: pa.Array, values: np.ndarray, type_: pa.DataType | None = None) -> pa.Array:
    """``values`` where ``mask`` is false, null where it is true."""
    arr = pa.array(np.asarray(values, dtype=np.int64))
    if type_ is not None:
        arr = arr.cast(type_)
    return pc.if_else(mask, pa.scalar(None, arr.type), arr)


# ----------------------------------------------------------------------------- what arrives when


def arriving(
    site: BulkSite, t0: datetime, t1: datetime, batch_rows: int = 500_000, with_nodes: bool = False
) -> Iterator[Batch]:
    """Every record that arrives in [t0, t1): jobs (with their steps and tags) that ended, file
    accesses that closed (with the origin fills of cache misses), site changes recorded.

    Accesses close before their job ends, so the accesses arriving in an interval come from the
    jobs ending in it and in the ``max_wall_days`` after it.
    """
    lo, hi = _us(t0), _us(t1)
    if with_nodes:
        yield node_batch(site)
    horizon = (hi - site.start_us) / DAY_US + site.change_every_days + site.change_record_lag_days
    ch = changes(site, max(horizon, 0.0))
    recorded = pc.cast(ch["recorded_at"], pa.int64()).to_numpy()
    keep = (recorded >= lo) & (recorded < hi)
    if keep.any():
        yield Batch(RecordKind.SITE_CHANGE, ch.filter(pa.array(keep)), SOURCE)
    first, last = (lo - site.start_us) // DAY_US, (hi - 1 - site.start_us) // DAY_US
    late = int(np.ceil(site.max_wall_days))
    for day in range(max(first, 0), last + late + 1):
        d = job_day(site, day)
        if day <= last:
            sel = np.flatnonzero((d.end >= lo) & (d.end < hi))
            yield from _cut(RecordKind.JOB, job_rows(site, d, sel), batch_rows)
            yield from _cut(RecordKind.JOB_TAG, tag_rows(site, d, sel), batch_rows)
        sel = np.flatnonzero((d.a_end >= lo) & (d.a_end < hi))
        if len(sel):
            yield from _cut(RecordKind.FILE_ACCESS, access_rows(site, d, sel), batch_rows)


def _cut(kind: RecordKind, table: pa.Table, rows: int) -> Iterator[Batch]:
    for first in range(0, table.num_rows, rows):
        yield Batch(kind, table.slice(first, rows), SOURCE, row_offset=first)


def _us(t: datetime) -> int:
    if t.tzinfo is None:
        raise ValueError(f"{t} has no time zone: give UTC times")
    return int(t.timestamp() * 1_000_000)


def day_start(site: BulkSite, day: float) -> datetime:
    return site.start + timedelta(days=day)
