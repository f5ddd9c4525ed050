"""What the synthetic site's generator knows and a real site never does: the true service times.

The efficiency model fits, per storage type, seconds per GB read from and written to a job's
scratch. For the synthetic site these follow from the device profiles and the analysis workload
(site.py), so a test can check that calibrating on the generated accounting recovers them.

A read of ``b`` bytes by an analysis job costs ``b/MB * seeks_per_mb`` random accesses plus the
transfer at the device's read rate; RAID0 splits each request over its members. Devices with
several independent channels (RAID1 mirrors, NVMe queues, a shared NFS server's spindles) serve a
single job at the one-channel time but several jobs in parallel, so a model with one queue per
node sits between the one-channel time and that time divided by the channels: both are given.
"""

from __future__ import annotations

from dataclasses import dataclass

from .site import GB, MB, SiteSpec


@dataclass(frozen=True)
class TrueServiceTime:
    storage_type: str
    read_s_per_gb: float  # one job alone, one channel
    write_s_per_gb: float
    channels: int  # independent servers behind the scratch path

    @property
    def read_range(self) -> tuple[float, float]:
        """Effective single-queue read time: between all channels busy and one channel."""
        return self.read_s_per_gb / self.channels, self.read_s_per_gb


def analysis_service_times(site: SiteSpec) -> dict[str, TrueServiceTime]:
    seeks_per_gb = site.workload.analysis_seeks_per_mb * GB / MB
    out: dict[str, TrueServiceTime] = {}
    configs = {n.scratch.storage_type: n.scratch for n in site.nodes}
    for st in sorted(configs):
        cfg = configs[st]  # the nodes' own device (a type may have several, e.g. ssd and ssd_consumer)
        d = cfg.device
        read = seeks_per_gb * (d.access_seconds + cfg.network_latency_seconds) + GB / d.read_bytes_per_second
        write = GB / d.write_bytes_per_second
        if st == "raid0":  # striped: each request is shared by every member
            read, write, channels = read / cfg.members, write / cfg.members, 1
        elif cfg.shared:
            channels = cfg.members
        else:
            channels = cfg.members * d.queues
        out[st] = TrueServiceTime(st, read, write, channels)
    return out


def truth_table(site: SiteSpec, staged_read_fraction: float) -> dict[str, tuple[float, float, float]]:
    """'parameter[storage type]' -> (true value, low, high) in the efficiency model's terms.

    ``staged_read_fraction`` (bytes read from scratch per byte staged in) comes from the measured
    workload, as the fitted composite does, so both describe the same mix of reads and writes.
    """
    out: dict[str, tuple[float, float, float]] = {}
    for st, t in analysis_service_times(site).items():
        lo, hi = t.read_range
        out[f"scratch_read_s_per_gb[{st}]"] = (t.read_s_per_gb, lo, hi)
        out[f"scratch_write_s_per_gb[{st}]"] = (t.write_s_per_gb, t.write_s_per_gb / t.channels, t.write_s_per_gb)
        f = staged_read_fraction
        out[f"scratch_s_per_staged_gb[{st}]"] = (
            t.read_s_per_gb * f + t.write_s_per_gb,
            (lo * f + t.write_s_per_gb / t.channels),
            hi * f + t.write_s_per_gb,
        )
    return out
