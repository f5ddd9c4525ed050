"""Turn the site model into canonical record batches: a month of a synthetic Tier-2.

The workload (who submits what, which files they read) is drawn from a seeded generator, run
through :class:`SiteModel`, and emitted as job, job_tag, file_access and node batches in bounded
chunks, so memory stays flat however long the simulated period.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

from ...records import FILE_ACCESS, JOB, JOB_TAG, NODE, SITE_CHANGE, Batch, RecordKind, job_identity
from .model import READ_CHUNKS_PER_FILE, STAGE_PIECE_BYTES, Access, FinishedJob, Job, SiteModel
from .site import GB, MB, SiteSpec, demo_site

DAY = 86400.0
BATCH_SYSTEM = "synthetic"
SOURCE = "synthetic"
DEFAULT_START = datetime(2026, 10, 1, tzinfo=timezone.utc)

ANALYSIS_ACCOUNTS = (("atlas", "atlas-analysis"), ("cms", "cms-analysis"))
PRODUCTION_ACCOUNTS = (("atlas", "atlas-prod"), ("cms", "cms-prod"))


@dataclass(frozen=True)
class SyntheticChange:
    """A setting changed mid-period on some nodes (all when no scope): from ``day`` on, their scratch
    reads take 1/``read_speedup`` of the device time (1.0: a change with no effect at all).

    The generator applies it in the model and emits it as a site_change record, so the true effect
    is known: run the same seed without it for the counterfactual.
    """

    day: float
    read_speedup: float = 1.0
    storage_type: str | None = None
    nodes: tuple[str, ...] | None = None
    description: str = "scratch read-ahead tuned"
    category: str = "storage"

    @classmethod
    def parse(cls, text: str) -> SyntheticChange:
        """'day=14,storage_type=raid1,read_speedup=1.3' (nodes separated by '+')."""
        values: dict[str, object] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"--change {text!r}: {part!r} is not key=value")
            key = key.strip()
            if key in ("day", "read_speedup"):
                values[key] = float(value)
            elif key == "nodes":
                values[key] = tuple(v for v in value.split("+") if v)
            elif key in ("storage_type", "description", "category"):
                values[key] = value.strip()
            else:
                raise ValueError(
                    f"--change {text!r}: unknown key {key!r} (day, read_speedup, storage_type, "
                    "nodes, description, category)"
                )
        if "day" not in values:
            raise ValueError(f"--change {text!r}: day= is required")
        return cls(**values)  # type: ignore[arg-type]

    def in_scope(self, node: str, storage_type: str) -> bool:
        if self.nodes is not None and node not in self.nodes:
            return False
        return self.storage_type is None or storage_type == self.storage_type


@dataclass(frozen=True)
class MixShift:
    """A change in the job mix with no setting changed: from ``day`` on, ``share_after`` of the
    analysis jobs (``share_before`` until then) are I/O-heavy skims, IFCA's skimming jobs: they read
    a run of ``skim_files`` whole files and spend ``cpu_factor`` of an analysis job's CPU per GB.
    """

    day: float
    share_after: float = 0.3
    share_before: float = 0.0
    skim_files: tuple[int, int] = (20, 36)
    cpu_factor: float = 0.35


@dataclass(frozen=True)
class SyntheticOptions:
    days: float = 30.0
    seed: int = 42
    #: Simulated before ``start`` and not emitted (but for jobs that end after it), so the period
    #: opens on a busy site with a warm cache, as a real month of accounting does.
    warmup_days: float = 3.0
    start: datetime = DEFAULT_START
    batch_rows: int = 50_000
    site: SiteSpec = field(default_factory=demo_site)
    #: Site changes applied mid-period (each also emitted as a site_change record).
    changes: tuple[SyntheticChange, ...] = ()
    mix_shift: MixShift | None = None


@dataclass
class FileCatalogue:
    lfns: list[str]
    sizes: np.ndarray
    dataset_first: np.ndarray  # index of each dataset's first file
    dataset_files: np.ndarray  # files per dataset
    dataset_weight: np.ndarray  # Zipf weight by popularity rank
    dataset_birth: np.ndarray  # seconds from the start when the dataset becomes interesting


def build_catalogue(site: SiteSpec, days: float, rng: np.random.Generator) -> FileCatalogue:
    cat = site.catalogue
    n = cat.datasets
    files = rng.integers(cat.files_per_dataset[0], cat.files_per_dataset[1] + 1, size=n)
    first = np.concatenate([[0], np.cumsum(files)[:-1]])
    total = int(files.sum())
    sizes = np.minimum(
        rng.lognormal(math.log(cat.file_size_median_bytes), cat.file_size_sigma, total), cat.file_size_max_bytes
    ).astype(np.int64)
    weight = 1.0 / np.arange(1, n + 1) ** cat.zipf_exponent
    birth = rng.uniform(-cat.activity_days * DAY * 2, days * DAY, size=n)
    lfns = []
    for d in range(n):
        vo = "atlas" if d % 3 else "cms"
        for k in range(int(files[d])):
            lfns.append(f"/{vo}/rucio/data26_13p6TeV/DAOD_PHYS.{40000000 + d:08d}._{k + 1:06d}.pool.root.1")
    return FileCatalogue(lfns, sizes, first, files, weight, birth)


def _pick_dataset(cat: FileCatalogue, t: float, activity: float, rng: np.random.Generator) -> int:
    age = t - cat.dataset_birth
    alive = np.where(age >= 0, np.exp(-np.maximum(age, 0) / activity), 0.0)
    w = cat.dataset_weight * alive
    s = w.sum()
    if s <= 0:
        return int(rng.integers(len(cat.dataset_weight)))
    return int(rng.choice(len(w), p=w / s))


def _analysis_plan(
    site: SiteSpec, cat: FileCatalogue, t: float, rng: np.random.Generator, skim: MixShift | None = None
) -> list[tuple]:
    wl = site.workload
    ds = _pick_dataset(cat, t, site.catalogue.activity_days * DAY, rng)
    if skim is None:
        nfiles = int(min(cat.dataset_files[ds], rng.integers(3, 13)))
        offset = int(rng.integers(0, cat.dataset_files[ds] - nfiles + 1))
    else:  # a skim runs over a long run of files, across dataset boundaries
        nfiles = int(rng.integers(skim.skim_files[0], skim.skim_files[1] + 1))
        offset = 0
    direct = rng.random() < wl.analysis_direct_share
    plan: list[tuple] = []
    for slot in range(nfiles):
        fidx = int(cat.dataset_first[ds] + offset + slot) % len(cat.sizes)
        size = float(cat.sizes[fidx])
        fraction = float(np.clip(rng.beta(2.2, 1.6), 0.05, 1.0)) if skim is None else 1.0
        read = size * fraction
        chunk = read / READ_CHUNKS_PER_FILE
        cpu = chunk / GB * wl.analysis_cpu_seconds_per_gb * rng.uniform(0.8, 1.2) * (skim.cpu_factor if skim else 1.0)
        seeks = chunk / MB * wl.analysis_seeks_per_mb
        if direct:
            for c in range(READ_CHUNKS_PER_FILE):
                plan.append(("D", slot, fidx, fraction, chunk, seeks, cpu, c == 0, c == READ_CHUNKS_PER_FILE - 1))
            continue
        pieces = max(1, math.ceil(size / STAGE_PIECE_BYTES))
        for p in range(pieces):
            nbytes = min(STAGE_PIECE_BYTES, size - p * STAGE_PIECE_BYTES)
            plan.append(("S", slot, fidx, nbytes, p == 0, p == pieces - 1))
        for _ in range(READ_CHUNKS_PER_FILE):
            plan.append(("R", chunk, seeks, cpu))
    plan.append(("W", float(rng.uniform(50, 400)) * MB))
    return plan


def _production_plan(site: SiteSpec, cat: FileCatalogue, cores: int, rng: np.random.Generator) -> list[tuple]:
    lo, hi = site.workload.production_cpu_hours
    cpu_total = rng.uniform(lo, hi) * 3600 * cores
    # Software comes from the CVMFS cache on local scratch (many small reads before any CPU);
    # the input is one file staged in through the job's route (rarely popular, so rarely
    # cached); the output is staged out to the site's storage at the end.
    fidx = int(rng.integers(len(cat.sizes)))
    size = float(cat.sizes[fidx])
    plan: list[tuple] = [("R", 800 * MB, 24000.0, 0.0)]
    pieces = max(1, math.ceil(size / STAGE_PIECE_BYTES))
    for p in range(pieces):
        plan.append(("S", 0, fidx, min(STAGE_PIECE_BYTES, size - p * STAGE_PIECE_BYTES), p == 0, p == pieces - 1))
    slices = 6
    for _ in range(slices):
        plan.append(("R", size / slices, size / slices / MB * 0.2, cpu_total / slices))
        plan.append(("W", 80 * MB))
    out = float(rng.uniform(0.5, 2.0)) * GB * cores
    plan.append(("W", out))
    plan.append(("O", fidx, out))
    return plan


def _mean_core_seconds(site: SiteSpec) -> float:
    """Rough core-seconds of a job, to turn a target load into an arrival rate."""
    wl = site.workload
    analysis = 7.5 * site.catalogue.file_size_median_bytes * 1.2 * 0.58 / GB * wl.analysis_cpu_seconds_per_gb / 0.75
    mean_cores = (1 - wl.production_multicore_share) + wl.production_multicore_share * wl.production_multicore_cores
    production = sum(wl.production_cpu_hours) / 2 * 3600 * mean_cores / 0.97
    return wl.analysis_share * analysis + (1 - wl.analysis_share) * production


def _arrivals(site: SiteSpec, days: float, rng: np.random.Generator) -> np.ndarray:
    rate = site.workload.load * site.slots / _mean_core_seconds(site)  # jobs per second
    # A daily cycle (users submit in the daytime) gives the queue quiet periods and partly
    # empty nodes, which the occupancy analysis needs to see.
    n = rng.poisson(rate * days * DAY * 1.3)
    t = np.sort(rng.uniform(0, days * DAY, size=n))
    keep = rng.random(n) < (1 + 0.3 * np.sin(2 * np.pi * (t / DAY - 0.3))) / 1.3
    return t[keep]


def _make_job(
    i: int,
    t: float,
    site: SiteSpec,
    cat: FileCatalogue,
    rng: np.random.Generator,
    mix: MixShift | None = None,
    warmup: float = 0.0,
) -> Job:
    wl = site.workload
    if rng.random() < wl.analysis_share:
        vo, account = ANALYSIS_ACCOUNTS[int(rng.random() < 0.35)]
        user = f"{vo}u{int(rng.zipf(1.6)) % 40:02d}"
        skim = None
        if mix is not None:  # drawn only with a mix shift, so the default stream stays the same
            share = mix.share_after if t >= warmup + mix.day * DAY else mix.share_before
            skim = mix if rng.random() < share else None
        plan = _analysis_plan(site, cat, t, rng, skim)
        return Job(
            i,
            "analysis",
            account,
            vo,
            user,
            1,
            t,
            plan,
            fails=rng.random() < wl.failed_share,
            has_identity=rng.random() >= wl.missing_identity_share,
        )
    vo, account = PRODUCTION_ACCOUNTS[int(rng.random() < 0.35)]
    cores = wl.production_multicore_cores if rng.random() < wl.production_multicore_share else 1
    scale = 1.0 + rng.uniform(0.15, 0.4) if rng.random() < wl.oversubscribed_share else 1.0
    return Job(
        i,
        "production",
        account,
        vo,
        f"{vo}prd",
        cores,
        t,
        _production_plan(site, cat, cores, rng),
        cpu_scale=scale,
        fails=rng.random() < wl.failed_share / 2,
    )


class _Emitter:
    """Collects finished jobs as canonical rows and cuts them into bounded batches."""

    def __init__(
        self,
        site: SiteSpec,
        start: datetime,
        warmup_seconds: float,
        cat: FileCatalogue,
        rng: np.random.Generator,
        batch_rows: int,
    ) -> None:
        self.site, self.start, self.cat, self.rng, self.batch_rows = site, start, cat, rng, batch_rows
        self.warmup = warmup_seconds
        self.t0_us = int(start.timestamp() * 1_000_000) - int(warmup_seconds * 1_000_000)
        self.jobs: dict[str, list] = {f.name: [] for f in JOB}
        self.tags: dict[str, list] = {f.name: [] for f in JOB_TAG}
        self.access: dict[str, list] = {f.name: [] for f in FILE_ACCESS}

    def _ts(self, seconds: float) -> int:
        return self.t0_us + int(round(seconds * 1_000_000))

    def finish(self, fj: FinishedJob) -> None:
        job, node, end = fj.job, fj.job.node, fj.end
        if end < self.warmup:
            return
        cl = self.site.cluster
        job_id = str(100000 + job.index)
        ident = job_identity(BATCH_SYSTEM, cl, job_id)
        io_gb = (job.bytes_local_read + job.bytes_remote_read + job.bytes_written) / GB
        # Kernel time is spent while the job moves data, so it comes out of the I/O wait,
        # never on top of the wall clock.
        cpu_sys = min(0.6 * io_gb + 0.004 * job.cpu_user, 0.5 * job.io_seconds * job.cores)
        wall = end - job.start
        row = {
            "batch_system": BATCH_SYSTEM,
            "cluster": cl,
            "job_id": job_id,
            "step_id": "",
            "job_identity": ident,
            "user_name": job.user,
            "account": job.account,
            "vo": job.vo,
            "job_class": job.job_class,
            "partition": "grid",
            "node": node.name,
            "node_list": node.name,
            "submit_time": self._ts(job.submit),
            "start_time": self._ts(job.start),
            "end_time": self._ts(end),
            "allocated_cores": job.cores,
            "cpu_user_seconds": round(job.cpu_user, 3),
            "cpu_system_seconds": round(cpu_sys, 3),
            "wall_seconds": round(wall, 3),
            "state": "FAILED" if job.fails else "COMPLETED",
            "exit_code": int(self.rng.choice([1, 8, 65])) if job.fails else 0,
            "bytes_read": int(job.bytes_local_read + job.bytes_remote_read),
            "bytes_written": int(job.bytes_written),
            "sluid": None,
        }
        for k, v in row.items():
            self.jobs[k].append(v)
        tag = {
            "batch_system": BATCH_SYSTEM,
            "cluster": cl,
            "job_id": job_id,
            "step_id": "",
            "node": node.name,
            "storage_type": node.scratch.storage_type,
            "device_models": node.scratch.device_models,
            "scratch_path": "/scratch" if node.scratch.storage_type != "nfs" else "/nfs/scratch",
            "ab_arm": node.ab_arm,
            "cache_route": f"cache:{self.site.cache.host}:1094" if node.ab_arm == "B" else "direct",
            "tagged_at": self._ts(job.start),
            "tagger": "synthetic",
        }
        for k, v in tag.items():
            self.tags[k].append(v)
        pid = int(self.rng.integers(1000, 4_000_000))
        for slot, acc in job.accesses.items():
            self._access(job, ident if job.has_identity else None, node.name, pid + slot, slot, acc)

    def _access(self, job: Job, ident: str | None, client: str, pid: int, slot: int, acc) -> None:
        size = int(self.cat.sizes[acc.file_index])
        lfn = self.cat.lfns[acc.file_index]
        app = "xrdcp" if acc.mode == "stage" else ("athena" if job.vo == "atlas" else "cmsRun")
        uid = f"{job.index}.{slot}"
        end = acc.end if acc.end > acc.start else acc.start
        read_total = acc.read_bytes + acc.readv_bytes
        self._access_row(
            acc.server,
            f"xrd-{uid}",
            acc.role,
            lfn,
            size,
            acc.start,
            end,
            acc,
            client,
            pid,
            app,
            ident,
            acc.hit_bytes,
            acc.miss_bytes,
        )
        if acc.role == "cache" and acc.miss_bytes and acc.miss_bytes > 0:
            # The cache fetched its misses from the origin: a second record, from the cache host,
            # carrying no job identity; this is how stage-in volume shows at the origin.
            origin = self.site.origins[acc.file_index % len(self.site.origins)].host
            share = acc.miss_bytes / read_total if read_total else 0.0
            pfc = Access(
                acc.file_index,
                origin,
                "origin",
                acc.mode,
                acc.start,
                end,
                read_bytes=acc.read_bytes * share,
                readv_bytes=acc.readv_bytes * share,
                read_ops=max(1, int(acc.read_ops * share)),
                readv_ops=int(acc.readv_ops * share),
            )
            self._access_row(
                origin,
                f"pfc-{uid}",
                "origin",
                lfn,
                size,
                acc.start,
                end,
                pfc,
                self.site.cache.host,
                0,
                "XrdPfc",
                None,
                None,
                None,
            )

    def _access_row(
        self,
        server: str,
        uid: str,
        role: str,
        lfn: str,
        size: int,
        start: float,
        end: float,
        acc,
        client: str,
        pid: int,
        app: str,
        ident: str | None,
        hit: float | None,
        miss: float | None,
    ) -> None:
        rb, rvb = int(acc.read_bytes), int(acc.readv_bytes)
        row = {
            "server_host": server,
            "unique_id": uid,
            "server_role": role,
            "file_lfn": lfn,
            "file_size_bytes": size,
            "start_time": self._ts(start),
            "end_time": self._ts(end),
            "read_single_average_bytes": rb / acc.read_ops if acc.read_ops else 0.0,
            "read_vector_average_bytes": rvb / acc.readv_ops if acc.readv_ops else 0.0,
            "write_average_bytes": 0.0,
            "read_bytes_at_close": rb + rvb,
            "write_bytes_at_close": 0,
            "read_bytes": rb,
            "readv_bytes": rvb,
            "write_bytes": 0,
            "read_ops": acc.read_ops,
            "readv_ops": acc.readv_ops,
            "write_ops": 0,
            "client_host": client,
            "client_pid": pid or None,
            "app_name": app,
            "job_identity": ident,
            "cache_hit_bytes": None if hit is None else int(round(hit)),
            "cache_miss_bytes": None if miss is None else int(round(miss)),
            "cache_bypass_bytes": None if hit is None else 0,
            "close_seen": True,
            "end_reason": "close",
        }
        for k, col in self.access.items():  # fields the generator does not make are null
            col.append(row.get(k))

    def drain(self, force: bool = False) -> Iterator[Batch]:
        for kind, cols, schema in (
            (RecordKind.JOB, self.jobs, JOB),
            (RecordKind.JOB_TAG, self.tags, JOB_TAG),
            (RecordKind.FILE_ACCESS, self.access, FILE_ACCESS),
        ):
            n = len(next(iter(cols.values())))
            if n and (force or n >= self.batch_rows):
                table = pa.table({k: pa.array(v, type=schema.field(k).type) for k, v in cols.items()}, schema=schema)
                for v in cols.values():
                    v.clear()
                yield Batch(kind, table, SOURCE)


def node_batch(site: SiteSpec) -> Batch:
    rows = {
        "cluster": [site.cluster] * len(site.nodes),
        "node": [n.name for n in site.nodes],
        "storage_type": [n.scratch.storage_type for n in site.nodes],
        "device_models": [n.scratch.device_models for n in site.nodes],
        "device_count": [n.scratch.members if not n.scratch.shared else 0 for n in site.nodes],
        "job_slots": [n.slots for n in site.nodes],
        "nic_gbps": [n.nic_gbps for n in site.nodes],
        "ab_arm": [n.ab_arm for n in site.nodes],
    }
    return Batch(RecordKind.NODE, pa.table(rows, schema=NODE), SOURCE)


def _apply_changes(model: SiteModel, options: SyntheticOptions) -> None:
    for change in options.changes:
        since = (options.warmup_days + change.day) * DAY
        for node in options.site.nodes:
            if change.in_scope(node.name, node.scratch.storage_type):
                model.scratch[node.name].read_speedups.append((since, change.read_speedup))


def change_batch(options: SyntheticOptions) -> Batch:
    """The site_change records of the options' changes, as a site manager would have logged them."""
    rows = []
    for k, c in enumerate(options.changes):
        at = options.start + timedelta(days=c.day)
        rows.append(
            {
                "change_id": f"synthetic-{options.site.cluster}-{k + 1}",
                "changed_at": at,
                "description": f"{c.description} (true read speed-up x{c.read_speedup:g})",
                "category": c.category,
                "cluster": options.site.cluster,
                "scope_nodes": list(c.nodes) if c.nodes else None,
                "scope_storage_type": c.storage_type,
                "scope_ab_arm": None,
                "changed_by": "synthetic",
                "recorded_at": at,
            }
        )
    return Batch(RecordKind.SITE_CHANGE, pa.Table.from_pylist(rows, schema=SITE_CHANGE), SOURCE)


def generate(options: SyntheticOptions, progress=None) -> Iterator[Batch]:
    """Yield the synthetic site's batches: nodes first, then jobs, tags and accesses by day.

    ``progress`` (optional) is called with the simulated day reached, for a progress bar.
    Jobs still running at the end of the period are not emitted, as sacct would not show them
    as finished either.
    """
    site = options.site
    span = options.warmup_days + options.days
    rng = np.random.default_rng(options.seed)
    cat = build_catalogue(site, span, rng)
    emitter = _Emitter(
        site, options.start, options.warmup_days * DAY, cat, np.random.default_rng(options.seed + 1), options.batch_rows
    )
    model = SiteModel(site, np.random.default_rng(options.seed + 2), emitter.finish)
    model.file_sizes = cat.sizes.astype(float)
    yield node_batch(site)
    if options.changes:
        _apply_changes(model, options)
        yield change_batch(options)
    arrivals = _arrivals(site, span, rng)
    next_arrival = 0
    day = 0
    while day < math.ceil(span):
        horizon = min((day + 1) * DAY, span * DAY)
        while next_arrival < len(arrivals) and arrivals[next_arrival] < horizon:
            t = float(arrivals[next_arrival])
            model.submit(_make_job(next_arrival, t, site, cat, rng, options.mix_shift, options.warmup_days * DAY))
            next_arrival += 1
        model.run(horizon)
        day += 1
        yield from emitter.drain()
        if progress:
            progress(max(0.0, min(day - options.warmup_days, options.days)))
    yield from emitter.drain(force=True)
