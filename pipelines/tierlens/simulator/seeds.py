"""The seed studies' published figures, predicted by tierlens' own model from what each study says
about its hardware and workload, never fitted to the outcome being predicted.

Every device figure and workload figure below is a dataclass field with its source in a comment:
``seed`` (the study's own text, /work/shared/seeds), ``datasheet`` (the maker's published figure,
not in the seed), or ``assumed`` (neither: a stated judgement, varied in the sensitivity rows).
The predictions run through the same code a site's run does: the device layer
(:mod:`.devices`: RAID composition, the write cache and its steady state, the mapping to seconds
per GB) and the queueing core (:func:`.efficiency.predict_wall`, mean value analysis of a node's
jobs sharing its scratch device).

What is taken from a measured outcome, and why that is not fitting: Glasgow's single-job HDD
efficiency (Table 1, "8:1 HDD 90 %") fixes the workload's random accesses per GB read, the one
workload figure the paper does not state. It is a measurement of one job alone, which no row of
the scoreboard predicts; every multi-job figure follows from it and the device figures.

What the model cannot represent is listed in :data:`NOT_REPRESENTED` and printed with the table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from . import efficiency as ef
from .devices import GB, WRITE_FACTOR_PRIOR_SD, DeviceFigures, WriteCache, service_times

MB = 1e6
MIB = 1024 * 1024
#: ROOT's default basket buffer (TTree::Branch bufsize 32000 bytes): a random read by an analysis
#: job is one basket (or a few adjacent ones) of a branch.
ROOT_BASKET_BYTES = 32_000
#: The stage-in copy's write request (xrdcp's and lcg-cp's block size; probe/jobs.py's stagein_write).
STAGE_BLOCK = 8 * MIB


# ----------------------------------------------------------------------------- seed hardware


@dataclass(frozen=True)
class SeedDevice:
    """One device as a study describes it; ``source`` names where each figure comes from."""

    name: str
    access_seconds: float
    read_bytes_per_second: float
    write_bytes_per_second: float
    source: str
    write_cache: WriteCache | None = None

    def figures(self, raid_level: str | None = None, members: int = 1) -> DeviceFigures:
        member = DeviceFigures(
            self.name,
            self.access_seconds,
            self.read_bytes_per_second,
            self.write_bytes_per_second,
            evidence="datasheet",
            label=self.name,
            write_cache=self.write_cache,
        )
        # random reads are ROOT basket reads: within one md chunk, on one member
        return member.composed(raid_level, members, read_request_bytes=ROOT_BASKET_BYTES)


# Glasgow's worker-node disk: "a single 7200RPM hard disk" (seed 000 §2.3), 500 GB (Table 4).
# access: BNL's "typical HD ~10ms" (seed 002); rate: assumed, typical of 2010 7200 rpm 500 GB SATA
# drives (outer-to-inner ~110-60 MB/s).
HDD_7200 = SeedDevice(
    "7200 rpm 500 GB HDD",
    0.010,
    90 * MB,
    90 * MB,
    "access: seed 002 (BNL, typical HD ~10 ms); rates: assumed (2010 7200 rpm SATA)",
)

# Intel X25-M G2 160 GB (seed 000 §2): datasheet 250 MB/s read, 100 MB/s write, 65 µs read latency.
# Fast region: the ~7 % spare area of an untrimmed drive (SL5's kernel 2.6.18 sends no TRIM);
# steady state: assumed 70 % of the datasheet write (reviews of "used" G2 drives), not fitted.
INTEL_X25M = SeedDevice(
    "Intel X25-M G2 160GB",
    65e-6,
    250 * MB,
    100 * MB,
    "rates, latency: Intel datasheet; fast region 7 % of 160 GB, steady 70 %: assumed",
    WriteCache(0.07 * 160 * GB, 70 * MB, "datasheet"),
)

# Kingston SSDNow V-series 128 GB (seed 000 §2: "low-end consumer-grade ... bottom of the budget"):
# datasheet 200 MB/s read, 110 MB/s write (JMicron-class controller, MLC); read access 0.2 ms.
# Fast region: 7 % spare of 128 GB, never trimmed under SL5; steady state assumed 30 % of the
# datasheet write, what reviews of untrimmed JMicron-class drives reported; not fitted to Table 1.
KINGSTON_V = SeedDevice(
    "Kingston SSDNow V 128GB",
    0.0002,
    200 * MB,
    110 * MB,
    "rates: Kingston datasheet; access, fast region 7 % of 128 GB, steady 30 %: assumed",
    WriteCache(0.07 * 128 * GB, 33 * MB, "datasheet"),
)

# BNL's Mtron MSP-SATA7035064 (seed 002): ~0.1 ms access, ~120 MB/s sustained read, ~80 MB/s
# sustained write (SLC: "sustained" is the steady state; no cliff).
MTRON = SeedDevice("Mtron MSP-SATA7035064", 0.0001, 120 * MB, 80 * MB, "all figures: seed 002 (BNL)")
# BNL's hard disk: "typical HD ~10ms" (seed 002), 500 GB disks; rate assumed as Glasgow's.
BNL_HDD = replace(HDD_7200, source="access: seed 002; rate: assumed")


# ----------------------------------------------------------------------------- seed workloads


@dataclass(frozen=True)
class SeedWorkload:
    """A study's job as tierlens' model sees it, per CPU second (times scale away)."""

    name: str
    #: bytes staged to scratch per CPU second (the job's data rate); assumed: ATLAS AOD of 2010,
    #: ~150-200 kB/event at ~15-20 events per CPU second, i.e. ~3 MB/s
    staged_bytes_per_cpu_second: float = 3 * MB
    #: bytes the job reads from scratch per byte staged; seed 003 (FNAL): a ROOT analysis of the
    #: era reads "about 50 %" of each event
    read_fraction: float = 0.5
    #: the network the stage-in crosses: seed 000 §3 ("the 1GigE interface used for this test")
    nic_bytes_per_second: float = 125 * MB
    #: measured single-job efficiency on one HDD: seed 000 Table 1, "8:1 HDD 90%" (the anchor)
    single_job_hdd_efficiency: float = 0.90
    #: how far N jobs use a device's parallel channels (the device layer's channel_sharing); 1:
    #: fully, assumed because 8 or more jobs keep both mirrors / all queues busy
    channel_sharing: float = 1.0
    #: job writes against the probe's streaming write (the device layer's prior centre, see devices.py)
    write_factor: float = 1.0


GLASGOW = SeedWorkload("Glasgow HammerCloud FileStager (reordered AOD)")


@dataclass(frozen=True)
class Case:
    """One published figure and the configuration it was measured on."""

    key: str
    study: str
    what: str
    published: float
    device: SeedDevice | None = None
    raid: str | None = None
    members: int = 1
    jobs: int = 8
    #: the tolerance the test holds the prediction to, and why
    tolerance: float = 0.0
    reason: str = ""
    represented: bool = True


#: Glasgow Table 1 (8-core node and 24-core Magny-Cours node, FileStager) and Table 3 (real ATLAS
#: analysis, 8-core, nodes full). Tolerances: the paper gives one HammerCloud run per row and says
#: its real-workload figures are "within a few percent" of them (Table 3 vs 1: 2-2.5 points), so
#: run-to-run spread is ~3 points; on top of that the device figures marked assumed move a row by
#: ~5-10 points over their plausible range (sensitivity table), so rows are held to 12 points,
#: and rows that hinge on a steady-state write figure nobody measured (the SSDs) to 20.
GLASGOW_CASES: tuple[Case, ...] = (
    Case(
        "glasgow_t1_hdd_8",
        "Glasgow T1",
        "1 HDD, 8 jobs: efficiency",
        0.75,
        HDD_7200,
        None,
        1,
        8,
        0.12,
        "run spread ~3 pt + assumed HDD transfer rate",
    ),
    Case(
        "glasgow_t1_raid1_8",
        "Glasgow T1",
        "2xHDD RAID1, 8 jobs: efficiency",
        0.83,
        HDD_7200,
        "raid1",
        2,
        8,
        0.12,
        "run spread ~3 pt + assumed HDD transfer rate; RAID1 as one queue with 2 read channels",
    ),
    Case(
        "glasgow_t1_raid0_8",
        "Glasgow T1",
        "2xHDD RAID0, 8 jobs: efficiency",
        0.90,
        HDD_7200,
        "raid0",
        2,
        8,
        0.12,
        "run spread ~3 pt + assumed HDD transfer rate",
    ),
    Case(
        "glasgow_t1_intel_8",
        "Glasgow T1",
        "Intel X25-M, 8 jobs: efficiency",
        0.80,
        INTEL_X25M,
        None,
        1,
        8,
        0.20,
        "steady-state write assumed (70 % of datasheet), never measured",
    ),
    Case(
        "glasgow_t1_kingston_8",
        "Glasgow T1",
        "Kingston V, 8 jobs: efficiency",
        0.60,
        KINGSTON_V,
        None,
        1,
        8,
        0.20,
        "steady-state write assumed (30 % of datasheet), never measured",
    ),
    Case(
        "glasgow_t1_intel_24",
        "Glasgow T1",
        "Intel X25-M, 24 jobs (Magny-Cours): efficiency",
        0.50,
        INTEL_X25M,
        None,
        1,
        24,
        0.20,
        "steady-state write assumed; a different CPU (per-core data rate assumed equal)",
    ),
    Case(
        "glasgow_t1_raid0_24",
        "Glasgow T1",
        "2xHDD RAID0, 24 jobs (Magny-Cours): efficiency",
        0.86,
        HDD_7200,
        "raid0",
        2,
        24,
        0.20,
        "a different CPU (per-core data rate assumed equal) + assumed HDD rate",
    ),
    Case(
        "glasgow_t3_intel_8",
        "Glasgow T3",
        "Intel X25-M, real ATLAS analysis, full 8-core nodes",
        0.78,
        INTEL_X25M,
        None,
        1,
        8,
        0.20,
        "real jobs' mix differs from HammerCloud's; steady write assumed",
    ),
    Case(
        "glasgow_t3_raid0_8",
        "Glasgow T3",
        "2xHDD RAID0, real ATLAS analysis, full 8-core nodes",
        0.88,
        HDD_7200,
        "raid0",
        2,
        8,
        0.12,
        "real jobs' mix differs from HammerCloud's (paper: within a few %)",
    ),
)

#: The Glasgow Table 2 rows (DQ2_LOCAL: jobs read remotely, scratch barely used). The model says the
#: scratch device does not matter then; the published spread across devices is its error.
GLASGOW_T2 = {"Kingston V": 0.67, "Intel X25-M": 0.73, "2xHDD RAID1": 0.73, "HDD": 0.78}

NOT_REPRESENTED: tuple[tuple[str, str], ...] = (
    (
        "read-ahead (FNAL 85 % of a file moved when 50 % is read)",
        "tierlens counts the bytes a client reports reading; a file system's read-ahead that moves more "
        "than is read is invisible to it, so remote route times absorb it as a slower route.",
    ),
    (
        "unfairness between clients (FNAL slowest/fastest 1.77)",
        "queues are first-come-first-served with identical jobs, so every client gets the same share; "
        "placement on the three servers' NICs gives the only spread (17 vs 16 clients).",
    ),
    (
        "controller settings (IFCA: read cache disabled, rebuild priority lowered: 35 % -> 70 %)",
        "a storage controller's cache policy and background work are not devices in the model; only "
        "what they do to a device's measured figures would show, through a new probe.",
    ),
    (
        "the device's dependence on what else the node does (Glasgow T2: Kingston 67 % vs HDD 78 % "
        "with scratch unused)",
        "with remote reads the model gives every scratch device the same efficiency; the spread "
        "(system disk, logs, swap) is outside it.",
    ),
    (
        "write stalls of cheap flash controllers (reads waiting hundreds of ms behind a write)",
        "a device is one FCFS queue with a mean time per byte; latency spikes beyond the mean are not modelled.",
    ),
)


# ----------------------------------------------------------------------------- the model


def _profile(w: SeedWorkload, jobs: int, storage_type: str = "dev") -> ef.JobProfiles:
    """One representative job of ``w`` (CPU 1 h) on a node of ``jobs`` such jobs."""
    cpu = 3600.0
    staged = w.staged_bytes_per_cpu_second * cpu
    remote = np.zeros((len(ef.ROUTES), 1))
    remote[0, 0] = staged
    return ef.JobProfiles(
        storage_type=np.array([storage_type], dtype=object),
        arm=np.array([""], dtype=object),
        cores=np.ones(1),
        cpu=np.array([cpu]),
        wall=np.zeros(1),
        scratch_read=np.array([staged * w.read_fraction]),
        scratch_write=np.array([staged]),
        stage_in=np.array([staged]),
        remote=remote,
        concurrent=np.array([float(jobs)]),
        job_key=np.array(["seed.0"], dtype=object),
        node=np.array(["seed-node"], dtype=object),
    )


def _log_times(read_s_per_gb: float, write_s_per_gb: float, w: SeedWorkload) -> np.ndarray:
    # the stage-in route at the NIC's line rate: the model folds network contention into route
    # times, and 8-24 jobs staging a few MB/s each stay far below 1 GbE
    stage = GB / w.nic_bytes_per_second
    routes = np.full(len(ef.ROUTES), 1.0)
    routes[0] = stage
    return np.log(np.concatenate([[read_s_per_gb, write_s_per_gb], routes]))


def efficiency(fig: DeviceFigures, w: SeedWorkload, jobs: int, seeks_per_gb: float) -> float:
    """Predicted efficiency of ``jobs`` jobs of ``w`` sharing ``fig``.

    A device with a write cliff is first predicted at its burst rate; if the resulting stage-in
    volume per node-hour reaches its fast region's size, the steady-state rate is used (the
    device layer's rule, :meth:`DeviceFigures.sustained`)."""
    prof = _profile(w, jobs)
    theta = np.array([seeks_per_gb, w.channel_sharing, w.write_factor])

    def predict(volume: float | None) -> float:
        fig_v = fig if volume == 0.0 else fig.sustained(volume)
        r, wr = service_times(replace(fig_v, write_cache=None), theta)
        wall = ef.predict_wall(_log_times(r, wr, w), ("dev",), prof)
        return ef.efficiency_of(prof, wall)

    eff = predict(0.0)  # burst figures
    if fig.write_cache is None:
        return eff
    volume = jobs * w.staged_bytes_per_cpu_second * eff * 3600.0
    return predict(volume)


def anchor_seeks(w: SeedWorkload, hdd: SeedDevice = HDD_7200) -> float:
    """Random accesses per GB read that make one job alone on one HDD reach the measured
    single-job efficiency (the workload figure no seed states)."""
    fig = hdd.figures()

    def gap(seeks: float) -> float:
        return efficiency(fig, w, 1, seeks) - w.single_job_hdd_efficiency

    if gap(0.0) < 0:
        raise ValueError(
            "the single-job efficiency is below what the transfers alone allow; "
            "the workload's data rate is too high for this anchor"
        )
    return float(brentq(gap, 0.0, 1e6, xtol=1e-3))


@dataclass(frozen=True)
class Row:
    case: Case
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted - self.case.published

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.case.tolerance


def glasgow_rows(w: SeedWorkload = GLASGOW, cases: tuple[Case, ...] = GLASGOW_CASES) -> list[Row]:
    seeks = anchor_seeks(w)
    return [Row(c, efficiency(c.device.figures(c.raid, c.members), w, c.jobs, seeks)) for c in cases]


# --- BNL: SSD vs HDD in concurrent reads (PROOF, 8 workers per node) -------------------------

# Reading one variable (the BNL test: "Plot one variable, scan ~10E7 events") is one request per
# basket of that branch (ROOT_BASKET_BYTES).
BNL_WORKERS = 8  # seed 002: "2x4 core Kentsfield CPUs per node", 8 workers per node in the 1+8 farm
BNL_PUBLISHED_RATIO = 10.0  # seed 002: "~ 10 times faster in concurrent read scenario"


def bnl_ratio(ssd: SeedDevice = MTRON, hdd: SeedDevice = BNL_HDD) -> float:
    """SSD over HDD analysis rate with 8 workers reading concurrently, device-bound.

    The slides give no CPU time per event, so the ratio is the device-bound limit (the workers'
    CPU is negligible beside their reads): the ratio of seconds per GB read at one request per
    basket. CPU time can only pull the ratio down towards 1: it is an upper bound."""
    theta = np.array([GB / ROOT_BASKET_BYTES, 1.0, 1.0])
    hdd_read, _ = service_times(hdd.figures(), theta)
    ssd_read, _ = service_times(ssd.figures(), theta)
    return hdd_read / ssd_read


# --- FNAL: bandwidth fairness and read-ahead (Lustre, seed 003) -----------------------------

FNAL_CLIENTS, FNAL_SERVERS = 49, 3  # seed 003 §4.4: 49 clients, three 1 GBit OST interfaces
FNAL_PUBLISHED_SPREAD = 1.77
FNAL_READ_FRACTION = 0.50  # seed 003: NOvA's benchmark reads about 50 % of each event
FNAL_PUBLISHED_MOVED = 0.85


def fnal_spread() -> float:
    """Slowest over fastest client: FCFS servers share their NIC equally among their clients;
    the only spread left is how 49 clients fall on 3 servers (17 against 16)."""
    per_server = [
        FNAL_CLIENTS // FNAL_SERVERS + (1 if i < FNAL_CLIENTS % FNAL_SERVERS else 0) for i in range(FNAL_SERVERS)
    ]
    return max(per_server) / min(per_server)


def fnal_moved_fraction() -> float:
    """Bytes moved over the network per byte of file: the model moves what the client reads."""
    return FNAL_READ_FRACTION


# --- IFCA: CPU efficiency before and after the network tuning (seed 004) --------------------

IFCA_BEFORE = 0.28  # seed 004: 100,000-event skims, "from an initial value of 28%"
IFCA_AFTER_NETWORK = 0.35  # seed 004: after firewall off and SACK
IFCA_AFTER_ALL = 0.72  # seed 004 Results (I): 100,000 events after all changes
IFCA_WN_LINK_BEFORE = 400e6 / 8  # seed 004 iperf: GPFS -> WN ~350-450 Mbps
IFCA_WN_LINK_AFTER = 1000e6 / 8  # seed 004: "Connection between GPFS servers and WNs is now 1 Gbps"


def ifca_after_network(before: float = IFCA_BEFORE) -> float:
    """Efficiency after the WN link went from ~400 Mbps to 1 Gbps, from the measured 28 % before.

    A what-if from a measured baseline, as tierlens does for a site change: the job's I/O wait per
    CPU second is (1 - e) / e, all of it on the remote route (the skims read 6 GB from GPFS and
    barely compute); the route's time scales with the link's bandwidth. This is the largest effect
    the network change can have (part of the wait may be the servers' disks), so an upper bound."""
    wait = (1.0 - before) / before
    wait_after = wait * IFCA_WN_LINK_BEFORE / IFCA_WN_LINK_AFTER
    return 1.0 / (1.0 + wait_after)


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class ScoreRow:
    study: str
    figure: str
    predicted: float
    published: float
    unit: str  # "eff" (efficiency, error in points) or "ratio" (error relative)
    tolerance: str
    represented: bool = True
    note: str = ""

    @property
    def error(self) -> float:
        return self.predicted - self.published


def scoreboard(w: SeedWorkload = GLASGOW) -> list[ScoreRow]:
    out = [
        ScoreRow(
            r.case.study,
            r.case.what,
            r.predicted,
            r.case.published,
            "eff",
            f"±{r.case.tolerance * 100:.0f} pt: {r.case.reason}",
        )
        for r in glasgow_rows(w)
    ]
    for name, pub in GLASGOW_T2.items():
        out.append(
            ScoreRow(
                "Glasgow T2",
                f"{name}, DQ2_LOCAL, 8 jobs: efficiency relative to HDD",
                1.0,
                pub / GLASGOW_T2["HDD"],
                "ratio",
                "not held: scratch unused, model says equal",
                represented=False,
            )
        )
    out.append(
        ScoreRow(
            "BNL",
            "SSD/HDD analysis rate, 8 concurrent readers",
            bnl_ratio(),
            BNL_PUBLISHED_RATIO,
            "ratio",
            "prediction is an upper bound (CPU unknown): ≥ 1/1.2 and ≤ 3x published",
            note="device-bound limit",
        )
    )
    out.append(
        ScoreRow(
            "FNAL",
            "slowest/fastest client, 49 clients",
            fnal_spread(),
            FNAL_PUBLISHED_SPREAD,
            "ratio",
            "not held: unfairness not represented",
            represented=False,
        )
    )
    out.append(
        ScoreRow(
            "FNAL",
            "bytes moved per byte of file (reads 50 %)",
            fnal_moved_fraction(),
            FNAL_PUBLISHED_MOVED,
            "eff",
            "not held: read-ahead not represented",
            represented=False,
        )
    )
    out.append(
        ScoreRow(
            "IFCA",
            "efficiency after the network fix (from 28 %)",
            ifca_after_network(),
            IFCA_AFTER_NETWORK,
            "eff",
            "upper bound: ≥ published, within 20 pt (part of the wait is disk)",
            note="what-if from the measured baseline",
        )
    )
    out.append(
        ScoreRow(
            "IFCA",
            "efficiency after all changes (controller)",
            ifca_after_network(),
            IFCA_AFTER_ALL,
            "eff",
            "not held: controller cache policy not represented",
            represented=False,
            note="model has only the network change",
        )
    )
    return out


def kingston_breakeven_steady_write(w: SeedWorkload = GLASGOW, jobs: int = 8) -> float:
    """The Kingston's steady-state write rate (bytes/s) below which the model ranks it under one
    HDD at ``jobs`` jobs (the paper's ordering): the figure the prediction hinges on."""
    seeks = anchor_seeks(w)
    hdd = efficiency(HDD_7200.figures(), w, jobs, seeks)

    def gap(rate: float) -> float:
        dev = replace(KINGSTON_V, write_cache=replace(KINGSTON_V.write_cache, steady_write_bytes_per_second=rate))
        return efficiency(dev.figures(), w, jobs, seeks) - hdd

    return float(brentq(gap, 1 * MB, KINGSTON_V.write_bytes_per_second, xtol=1e4))


# ----------------------------------------------------------------------------- structural error


def scoreboard_structural_error(w: SeedWorkload = GLASGOW) -> float:
    """RMS error (efficiency, 0-1) of the scoreboard's efficiency rows the model represents: every
    one is a prediction for hardware whose outcome no fit saw, so this is the device layer's
    structural error on published measurements."""
    errs = [r.error for r in glasgow_rows(w)]
    return float(np.sqrt(np.mean(np.square(errs))))


@dataclass(frozen=True)
class TypeLoo:
    case: str
    published: float
    predicted: float
    theta: tuple[float, float]  # (channel_sharing, write_factor) fitted on the other rows

    @property
    def error(self) -> float:
        return self.predicted - self.published


def scoreboard_type_loo(w: SeedWorkload = GLASGOW, cases: tuple[Case, ...] = GLASGOW_CASES) -> list[TypeLoo]:
    """Leave one Glasgow configuration out: fit the device layer's channel sharing and write factor
    on the other published rows (as a site's run fits them on its measured types), predict the one
    left out. The RMS of these errors is the structural error of a datasheet prediction whose
    mapping was fitted on measured types (what hardware_options carries)."""
    from scipy.optimize import least_squares

    seeks = anchor_seeks(w)
    out: list[TypeLoo] = []
    for held in cases:
        rest = [c for c in cases if c.key != held.key]

        def resid(x: np.ndarray, rest=rest) -> np.ndarray:
            ww = replace(w, channel_sharing=float(x[0]), write_factor=float(np.exp(x[1])))
            res = [efficiency(c.device.figures(c.raid, c.members), ww, c.jobs, seeks) - c.published for c in rest]
            return np.asarray(res + [x[1] / WRITE_FACTOR_PRIOR_SD * 0.05])  # the write factor's prior (devices.py)

        sol = least_squares(resid, np.array([1.0, 0.0]), bounds=([0.0, -1.6], [1.0, 1.6]))
        ww = replace(w, channel_sharing=float(sol.x[0]), write_factor=float(np.exp(sol.x[1])))
        pred = efficiency(held.device.figures(held.raid, held.members), ww, held.jobs, seeks)
        out.append(TypeLoo(held.key, held.published, pred, (float(sol.x[0]), float(np.exp(sol.x[1])))))
    return out


def loo_rms(rows: list[TypeLoo]) -> float:
    return float(np.sqrt(np.mean([r.error**2 for r in rows])))


@dataclass(frozen=True)
class StructuralError:
    value: float  # efficiency, 0-1
    source: str  # "generator" or "published figures"
    generator: float | None
    published: float


def reported_structural_error(generator_rms: float | None, w: SeedWorkload = GLASGOW) -> StructuralError:
    """The structural error hardware_options should carry: the larger of the leave-one-type-out
    RMS on the site's own (synthetic or measured) data and the one on the published figures."""
    published = loo_rms(scoreboard_type_loo(w))
    if generator_rms is not None and generator_rms >= published:
        return StructuralError(generator_rms, "generator", generator_rms, published)
    return StructuralError(published, "published figures", generator_rms, published)


def structural_error_rows(generator: dict[str, float | None], w: SeedWorkload = GLASGOW) -> list[dict]:
    """One row per kind of evidence (``probe``, ``datasheet``: the generator's leave-one-type-out RMS
    for it, from hardware.validate_types) for the report: both errors and the one to carry.
    The published figures rest on datasheets and stated assumptions, no probes, so their error
    bounds both kinds from below: a probe cannot be trusted more than the model is on real devices."""
    published = published_loo_rms() if w is GLASGOW else loo_rms(scoreboard_type_loo(w))
    out = []
    for evidence, gen in generator.items():
        larger = gen is not None and gen >= published
        out.append(
            {
                "evidence": evidence,
                "generator_rms": gen,
                "published_rms": published,
                "structural_error": gen if larger else published,
                "source": "generator" if larger else "published figures",
            }
        )
    return out


@lru_cache(maxsize=1)
def published_loo_rms() -> float:
    """The leave-one-configuration-out RMS on Glasgow's published figures (fixed inputs: computed
    once per process, as every efficiency run carries it)."""
    return loo_rms(scoreboard_type_loo(GLASGOW))


def sensitivity(w: SeedWorkload = GLASGOW) -> list[tuple[str, dict[str, float]]]:
    """Each Glasgow prediction under the assumed figures' plausible range (not a fit: a spread)."""
    variants: list[tuple[str, SeedWorkload, tuple[Case, ...]]] = [
        ("as assumed", w, GLASGOW_CASES),
        ("data rate 2 MB/s", replace(w, staged_bytes_per_cpu_second=2 * MB), GLASGOW_CASES),
        ("data rate 4.5 MB/s", replace(w, staged_bytes_per_cpu_second=4.5 * MB), GLASGOW_CASES),
        ("reads 100 % of staged", replace(w, read_fraction=1.0), GLASGOW_CASES),
        ("channel sharing 0.5", replace(w, channel_sharing=0.5), GLASGOW_CASES),
        ("HDD 120 MB/s", w, _with_hdd_rate(120 * MB)),
        ("SSD steady = datasheet (no cliff)", w, _without_cliffs()),
    ]
    return [(name, {r.case.key: r.predicted for r in glasgow_rows(ww, cases)}) for name, ww, cases in variants]


def _with_hdd_rate(rate: float) -> tuple[Case, ...]:
    hdd = replace(HDD_7200, read_bytes_per_second=rate, write_bytes_per_second=rate)
    return tuple(replace(c, device=hdd) if c.device is HDD_7200 else c for c in GLASGOW_CASES)


def _without_cliffs() -> tuple[Case, ...]:
    return tuple(replace(c, device=replace(c.device, write_cache=None)) for c in GLASGOW_CASES)


__all__ = [
    "Case",
    "GLASGOW",
    "GLASGOW_CASES",
    "NOT_REPRESENTED",
    "Row",
    "ScoreRow",
    "SeedDevice",
    "SeedWorkload",
    "StructuralError",
    "TypeLoo",
    "anchor_seeks",
    "bnl_ratio",
    "efficiency",
    "fnal_spread",
    "glasgow_rows",
    "ifca_after_network",
    "kingston_breakeven_steady_write",
    "loo_rms",
    "published_loo_rms",
    "reported_structural_error",
    "scoreboard",
    "scoreboard_structural_error",
    "scoreboard_type_loo",
    "sensitivity",
    "structural_error_rows",
    "replace",
]
