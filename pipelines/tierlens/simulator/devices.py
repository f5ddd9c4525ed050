"""The device layer under the queueing core: a device's probe or datasheet figures → the read and
write seconds per GB of *this site's* job mix, for storage types nobody has run jobs on.

A device is described by four figures, whichever way they were obtained:

* ``access_seconds``: the fixed cost of one random request (seek and rotation for a disk, the
  controller's latency for flash);
* ``read_bytes_per_second`` / ``write_bytes_per_second``: the transfer rates;
* ``read_channels`` / ``write_channels``: how many requests it serves at once when a full node
  keeps it busy (RAID1 mirrors, flash queues).

From a probe (probe/jobs.py): the random reads at 128 KiB and 1 MiB give a per-request latency
``L(b) = access + b / rate`` at two sizes, hence both; the stage-in write's latency minus the
access gives the write rate; the full-node jobs' IOPS over the one-process IOPS give the channels.
From a datasheet: sequential MB/s are the rates, ``1 / IOPS(4 KiB) - 4 KiB / rate`` the access
(datasheet IOPS are quoted at deep queues, so this flatters flash: the datasheet error is larger
and measured separately), one channel per device.

RAID layouts are composed from their members: striping (RAID0, and the data devices of RAID5/6/10)
multiplies the rates, since every request is shared by the stripe's members; mirrors (RAID1, RAID10)
serve reads independently (read channels x copies) while every mirror writes everything (the write
rate is that of the data devices alone).

The mapping to the job mix has three parameters, fitted on the storage types the site both runs
and has probed (their times fitted from jobs are the targets):

    read_s_per_gb  = (seeks_per_gb * access + GB / read_rate) / read_channels ** sharing
    write_s_per_gb = write_factor * GB / write_rate / write_channels ** sharing

``seeks_per_gb`` is the workload's random accesses per GB read (ROOT baskets), ``sharing`` how far
a node's jobs actually use the device's channels (0: not at all, 1: fully), ``write_factor`` how
the job's writes compare to fio's streaming write. The efficiency model keeps its queueing core;
only the per-type times it is given come from here.

**Sustained writes.** Many flash devices (consumer SSDs above all) write at their datasheet rate
only until a fast region runs out (an SLC buffer, or the pool of erased spare blocks on a drive
that is never trimmed); past it they write at a much lower steady-state rate. A device with such a
:class:`WriteCache` is given its steady-state write rate wherever the workload writes at least the
cache's bytes in an hour of full occupancy (:meth:`DeviceFigures.sustained`): a node of analysis
jobs staging in does that within minutes, so a burst-only figure would rank exactly the device
that collapses. The probe measures the cache and the steady-state rate (probe/jobs.py,
``sustained_write*``); a datasheet has neither, so a datasheet figure for a device with a cliff is
only as good as a review's steady-state number given beside it.

**What each mapping parameter's prior rests on** (none is centred on the synthetic generator):

* ``write_factor``, log-normal around 1 (sd 0.25): a stage-in copy writes its file sequentially in
  8 MiB blocks, which is exactly the probe's ``stagein_write`` job (same pattern, same block size,
  one request in flight), so physics, not a fit, says the two rates agree; the spread allows for
  file-system and page-cache effects the probe does not share with a copy (it bypasses the page
  cache). That the generator's copies also write that way is a consequence of the same
  description, not the prior's source; a device whose writes slow down with volume is handled by
  the steady-state rate above, not by this factor.
* ``seeks_per_gb`` and ``channel_sharing`` have no prior: bounds only ([0, 1e5] accesses per GB,
  the ROOT basket range; [0, 1] by definition).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import least_squares

from .under_write import UnderWrite, starved_read_wait, under_write_from_probe

GB = 1e9
KIB = 1024
SMALL, LARGE = 128 * KIB, 1024 * KIB
#: Parameter names and bounds of the mapping (seeks per GB, sharing exponent, write factor).
MAPPING_NAMES = ("seeks_per_gb", "channel_sharing", "write_factor")
MAPPING_BOUNDS = ((0.0, 0.0, 0.2), (1e5, 1.0, 5.0))
MAPPING_START = np.array([2000.0, 0.5, 1.0])
#: Prior standard deviation of log(write_factor) around 0 (job writes stream as fio's do).
WRITE_FACTOR_PRIOR_SD = 0.25
#: Floor of a fitted composite's relative error in the mapping fit (the fit's own standard
#: errors are optimistic: they ignore the model's structure).
MIN_RELATIVE_ERROR = 0.05
#: Linux md's stripe chunk before mdadm 3.1 (512 KiB after): the unit a striped read lands on.
MD_CHUNK_BYTES = 64 * KIB


@dataclass(frozen=True)
class WriteCache:
    """A device's fast-write region and the rate it writes at once that region is full.

    ``cache_bytes``: bytes written at the burst rate (``DeviceFigures.write_bytes_per_second``)
    before the rate falls; ``steady_write_bytes_per_second``: the rate after it. ``evidence`` says
    where the figures come from: ``probe`` (the probe wrote until the rate settled), ``budget``
    (the probe's size/time budget ran out first: the steady rate is an upper bound), or
    ``datasheet`` (a published steady-state figure).
    """

    cache_bytes: float
    steady_write_bytes_per_second: float
    evidence: str = "probe"


@dataclass(frozen=True)
class DeviceFigures:
    storage_type: str
    access_seconds: float
    read_bytes_per_second: float
    write_bytes_per_second: float
    read_channels: float = 1.0
    write_channels: float = 1.0
    evidence: str = "probe"  # probe | datasheet
    label: str = ""
    #: the fast-write region and the steady-state rate past it (None: no cliff measured/known)
    write_cache: WriteCache | None = None
    #: the probe's read latencies under throttled background writes (simulator/under_write.py;
    #: None: not probed so, or not from a probe)
    under_write: tuple[UnderWrite, ...] | None = None

    def sustained(self, staged_bytes_per_node_hour: float | None = None) -> DeviceFigures:
        """The figures a workload writing ``staged_bytes_per_node_hour`` (stage-in and job writes
        per node-hour at full occupancy) sees: the steady-state write rate when an hour's writes
        reach the end of the fast region. Unknown volume (None) counts as reaching it: a node of
        jobs staging in does so within minutes, and the burst figure is the one that misleads."""
        wc = self.write_cache
        if wc is None or wc.steady_write_bytes_per_second >= self.write_bytes_per_second:
            return self
        if staged_bytes_per_node_hour is not None and staged_bytes_per_node_hour < wc.cache_bytes:
            return self
        return replace(self, write_bytes_per_second=wc.steady_write_bytes_per_second)

    def composed(
        self,
        raid_level: str | None,
        devices: int,
        read_request_bytes: float | None = None,
        chunk_bytes: float = MD_CHUNK_BYTES,
    ) -> DeviceFigures:
        """The figures of ``devices`` such devices combined as ``raid_level``.

        By default every read is striped over all data devices (rates x data devices, one read
        channel). Given the workload's random read request, a request within one stripe chunk
        lands on one member, so a striped array serves that many independent requests at once
        (read channels x data / members touched) at the members' rate, as a mirror does; writes
        (stage-in copies in 8 MiB blocks, many chunks) stay striped."""
        n = max(int(devices or 1), 1)
        level = (raid_level or "none").lower()
        data = {"raid0": n, "raid1": 1, "raid10": max(n // 2, 1), "raid5": max(n - 1, 1), "raid6": max(n - 2, 1)}.get(
            level
        )
        if data is None or n == 1:
            return self
        read_copies = n if level == "raid1" else (2 if level == "raid10" else 1)
        touched = data
        if read_request_bytes is not None:
            touched = int(min(data, max(1, np.ceil(read_request_bytes / chunk_bytes))))
        read_copies *= data / touched
        read_data = touched
        wc = self.write_cache
        if wc is not None:  # every data device has its own fast region, written in parallel
            wc = replace(
                wc,
                cache_bytes=wc.cache_bytes * data,
                steady_write_bytes_per_second=wc.steady_write_bytes_per_second * data,
            )
        return replace(
            self,
            read_bytes_per_second=self.read_bytes_per_second * read_data,
            write_bytes_per_second=self.write_bytes_per_second * data,
            read_channels=self.read_channels * read_copies,
            write_cache=wc,
            label=f"{n}x {self.label} {level}".strip(),
        )


def from_probe(rows: list[dict]) -> DeviceFigures:
    """Figures from one probe run's device_probe rows (the job set of probe/jobs.py)."""
    by = {r["job_name"]: r for r in rows}
    missing = {"stagein_write", "rand_read_128k", "rand_read_1m", "rand_read_128k_node", "stagein_write_node"} - set(by)
    if missing:
        raise ValueError(f"probe {rows[0]['probe_id'] if rows else '?'} lacks job(s) {', '.join(sorted(missing))}")
    small, large = by["rand_read_128k"]["mean_latency_seconds"], by["rand_read_1m"]["mean_latency_seconds"]
    if large > small:
        rate = (LARGE - SMALL) / (large - small)
        access = max(small - SMALL / rate, 0.0)
    else:  # latency does not grow with size (memory, noise): all transfer, no access
        rate, access = LARGE / large, 0.0
    w = by["stagein_write"]
    per_write = w["mean_latency_seconds"]
    # the access is paid once per 8 MiB write; keep at least half the latency as transfer
    write_rate = w["block_size_bytes"] / max(per_write - access, 0.5 * per_write)

    def channels(job: str) -> float:
        alone, node = by[job], by[f"{job}_node"]
        return float(np.clip(node["iops"] / alone["iops"], 1.0, max(node["processes"], 1)))

    first = rows[0]
    return DeviceFigures(
        first["storage_type"],
        access,
        rate,
        write_rate,
        channels("rand_read_128k"),
        channels("stagein_write"),
        "probe",
        ", ".join(first.get("device_models") or []),
        write_cache_from_probe(by, write_rate),
        under_write=under_write_from_probe(rows),
    )


def write_cache_from_probe(by_job: dict[str, dict], burst_rate: float) -> WriteCache | None:
    """The fast-write region from the sustained-write jobs (probe/jobs.py), when the probe ran them.

    ``sustained_write_burst``: the rate until it fell, over ``seconds`` (its bytes are the region);
    ``sustained_write`` (the rate settled) or ``sustained_write_budget`` (the budget ran out first):
    the last window's rate. A steady rate within 15 % of the burst rate is no cliff."""
    burst = by_job.get("sustained_write_burst")
    steady = by_job.get("sustained_write") or by_job.get("sustained_write_budget")
    if burst is None or steady is None:
        return None
    rate = steady["bandwidth_bytes_per_second"]
    burst_rate_measured = burst["bandwidth_bytes_per_second"]
    if rate >= 0.85 * burst_rate_measured:
        return None
    # the single-process write job saw the fast region: scale the steady rate to its figure
    steady_rate = burst_rate * rate / burst_rate_measured
    return WriteCache(
        burst_rate_measured * burst["seconds"], steady_rate, "probe" if "sustained_write" in by_job else "budget"
    )


def from_datasheet(row: dict) -> DeviceFigures | None:
    """Figures from a storage_catalog row's datasheet columns, composed by its RAID level; None
    when the row has no datasheet figures."""
    read, write, iops = row.get("seq_read_mb_per_s"), row.get("seq_write_mb_per_s"), row.get("rand_read_iops_4k")
    if not (read and write and iops):
        return None
    rate = read * 1e6
    member = DeviceFigures(
        row["storage_type"],
        max(1.0 / iops - 4 * KIB / rate, 0.0),
        rate,
        write * 1e6,
        evidence="datasheet",
        label=row.get("device_model") or row["config_name"],
    )
    return replace(
        member.composed(row.get("raid_level"), row.get("devices_per_node") or 1), storage_type=row["storage_type"]
    )


# ----------------------------------------------------------------------------- the mapping


def under_write_read_seconds_per_gb(
    fig: DeviceFigures, node_write_bytes_per_second: float | None, reads_per_gb: float
) -> float:
    """Seconds per GB read that a job's reads lose behind the node's stage-in writes beyond their
    share of the device's time (under_write.starved_read_wait), measured by the probe at the
    utilisation the node's writes put on this device, times the job mix's reads per GB (the
    mapping's ``seeks_per_gb``). The share itself is the queueing core's: writes are part of a
    job's demand at the device. 0 without the probe's under-write points (a datasheet, an older
    probe) or without a write rate."""
    points = fig.under_write
    if not points or not node_write_bytes_per_second or fig.write_bytes_per_second <= 0:
        return 0.0
    utilisation = node_write_bytes_per_second / fig.write_bytes_per_second
    return starved_read_wait(points, utilisation) * reads_per_gb


def service_times(
    fig: DeviceFigures,
    theta: np.ndarray,
    staged_bytes_per_node_hour: float | None = None,
    node_write_bytes_per_second: float | None = None,
) -> tuple[float, float]:
    """(read, write) seconds per GB of the job mix for ``fig`` under mapping ``theta``; a device
    with a write cliff writes at its steady-state rate where the workload reaches it. With the
    node's write rate, reads also pay what the probe measured them losing behind writes at that
    rate beyond their share of the device (:func:`under_write_read_seconds_per_gb`): behaviour of
    the kernel and the drive that the mapping's three parameters cannot describe, taken from the
    device itself."""
    seeks, sharing, write_factor = theta
    behind_writes = under_write_read_seconds_per_gb(fig, node_write_bytes_per_second, seeks)
    fig = fig.sustained(staged_bytes_per_node_hour)
    read = (seeks * fig.access_seconds + GB / fig.read_bytes_per_second) / fig.read_channels**sharing
    write = write_factor * GB / fig.write_bytes_per_second / fig.write_channels**sharing
    return read + behind_writes, write


@dataclass
class Mapping:
    theta: np.ndarray
    types: tuple[str, ...]  # the types it was fitted on
    read_fraction: float  # scratch bytes read per byte staged (the workload's mix)
    rms_log_error: float  # of the composite times it was fitted on
    #: stage-in and job writes per node-hour at full occupancy (None: assume a write cliff is reached)
    staged_bytes_per_node_hour: float | None = None
    #: what a node of the site's jobs writes to scratch per second, at their measured pace and
    #: concurrency: the write load under which a predicted device's reads wait (None: no such wait)
    node_write_bytes_per_second: float | None = None

    def times(self, fig: DeviceFigures) -> tuple[float, float]:
        return service_times(fig, self.theta, self.staged_bytes_per_node_hour, self.node_write_bytes_per_second)

    def as_dict(self) -> dict[str, float]:
        return dict(zip(MAPPING_NAMES, self.theta.tolist()))


def fit_mapping(
    figures: dict[str, DeviceFigures],
    fitted: dict[str, tuple[float, float, float]],
    read_fraction: float,
    write_rates: WriteRates | None = None,
) -> Mapping:
    """Fit the mapping on the types with both figures and job-fitted times.

    ``fitted`` maps a storage type to (read s/GB, write s/GB, relative standard error of their
    composite). The composite ``read * f + write`` (f = bytes read per byte staged) is what the
    accounting pins down, so it carries the fit; the separate read and write times, which a job's
    reads and writes growing together leave loosely determined, pull only weakly.

    ``write_rates``: the node write rate each measured type's jobs ran under and the site's (for
    predictions). A fitted type's read time includes what its reads waited behind its own node's
    writes; with its probe's under-write points that wait is taken out of what the three
    parameters must explain, and a predicted type gets its own probe's wait back at the site's rate.
    """
    types = tuple(sorted(set(figures) & set(fitted)))
    if len(types) < 2:
        raise ValueError(
            f"the device mapping needs at least two storage types with both measured jobs and a probe "
            f"(or datasheet); have {', '.join(types) or 'none'}"
        )
    f = read_fraction
    rates = write_rates or WriteRates()

    def residuals(theta: np.ndarray) -> np.ndarray:
        out = []
        for st in types:
            r, w = service_times(figures[st], theta, node_write_bytes_per_second=rates.of(st))
            tr, tw, rel = fitted[st]
            sigma = max(rel, MIN_RELATIVE_ERROR)
            out.append(np.log((r * f + w) / (tr * f + tw)) / sigma)
            out.append(0.3 * np.log(r / tr))
            out.append(0.3 * np.log(w / tw))
        # a stage-in copy streams like fio's sequential write: without a write-dominated type
        # among the fitted ones the data hardly pin write_factor, and the prior keeps it near 1
        out.append(np.log(theta[2]) / WRITE_FACTOR_PRIOR_SD)
        return np.asarray(out)

    sol = least_squares(residuals, MAPPING_START, bounds=MAPPING_BOUNDS, x_scale=[1000.0, 0.3, 0.5])
    comp = [
        np.log(
            sum(np.array(service_times(figures[st], sol.x, node_write_bytes_per_second=rates.of(st))) * [f, 1])
            / (fitted[st][0] * f + fitted[st][1])
        )
        for st in types
    ]
    return Mapping(sol.x, types, f, float(np.sqrt(np.mean(np.square(comp)))), node_write_bytes_per_second=rates.site)


@dataclass(frozen=True)
class WriteRates:
    """Bytes per second a full node writes to its scratch device (stage-in copies and the jobs'
    own writes): per measured storage type as its jobs ran, and site-wide for a prediction."""

    site: float | None = None
    by_type: dict[str, float] = field(default_factory=dict)

    def of(self, storage_type: str) -> float | None:
        return self.by_type.get(storage_type, self.site)


def write_warning(fig: DeviceFigures, staged_bytes_per_node_hour: float) -> str | None:
    """The evidence a buying guide should print beside a device whose writes cannot keep up: its
    steady-state (or only) write rate below the rate a full node stages in at, or a fast region
    the node writes through within the hour. None when neither holds."""
    need = staged_bytes_per_node_hour / 3600.0
    rate = fig.sustained(staged_bytes_per_node_hour).write_bytes_per_second
    wc = fig.write_cache
    source = f"{wc.evidence}: steady state past a {wc.cache_bytes / GB:.0f} GB fast region" if wc else fig.evidence
    if rate < need:
        return f"writes {rate / 1e6:.0f} MB/s ({source}), below the {need / 1e6:.0f} MB/s a full node stages in"
    if wc is not None and staged_bytes_per_node_hour >= wc.cache_bytes:
        minutes = wc.cache_bytes / need / 60.0
        return (
            f"a full node fills its {wc.cache_bytes / GB:.0f} GB fast region in {minutes:.0f} min; then "
            f"{wc.steady_write_bytes_per_second / 1e6:.0f} MB/s ({wc.evidence}), not the "
            f"{fig.write_bytes_per_second / 1e6:.0f} MB/s burst"
        )
    return None
