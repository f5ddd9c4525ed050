"""The built-in synthetic Tier-2: its nodes, devices, servers and workload parameters.

Device figures follow the seed studies where they give them (BNL: SSD access ~0.1 ms against
~10 ms for a hard disk; Glasgow: 7200 rpm disks, a low-end Kingston SSD; SLAC: an SSD cache box
whose two NICs top out at 2.5 GB/s). Everything a site would change lives here, in dataclasses,
so a test or a what-if run can build a different site without touching the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MB = 1_000_000
GB = 1_000_000_000


@dataclass(frozen=True)
class DeviceProfile:
    """One physical device as a queueing server."""

    model: str
    access_seconds: float  # per random access: seek + rotation for a disk, controller latency for flash
    read_bytes_per_second: float
    write_bytes_per_second: float
    queues: int = 1  # independent internal channels (NVMe has many, a disk has one head)
    #: A fast-write region (an SLC buffer, or an untrimmed drive's erased spare blocks): writes go
    #: at write_bytes_per_second until it is full, then at steady_write_bytes_per_second; idle
    #: time frees it again at recovery_bytes_per_second. 0 bytes: no cliff.
    write_cache_bytes: float = 0.0
    steady_write_bytes_per_second: float = 0.0
    recovery_bytes_per_second: float = 0.0


SEAGATE_HDD = DeviceProfile("Seagate ST500DM002", 0.0125, 110 * MB, 100 * MB)
# A low-end consumer SSD: fast random reads, but sustained writes collapse once its SLC buffer
# is full, which is what made the Glasgow Kingston rows the worst of all.
KINGSTON_SSD = DeviceProfile("Kingston SV300S37A120G", 0.0002, 220 * MB, 28 * MB)
# A consumer QLC SATA SSD with a dynamic SLC buffer: datasheet-fast until ~12 GB have been written
# without a pause, then a fraction of its spec sheet (the cliff a buying guide must catch). Not part
# of the demo site's nodes; probed with ``--synthetic ssd_consumer`` and used by the tests.
CONSUMER_SSD = DeviceProfile(
    "Generic QLC SATA SSD 1TB",
    0.00009,
    550 * MB,
    500 * MB,
    write_cache_bytes=12 * GB,
    steady_write_bytes_per_second=45 * MB,
    recovery_bytes_per_second=150 * MB,
)
SAMSUNG_NVME = DeviceProfile("Samsung MZQL2960HCJR", 0.00008, 3000 * MB, 1400 * MB, queues=8)
CACHE_SSD = DeviceProfile("OCZ Talos 2C", 0.0001, 450 * MB, 250 * MB)
NFS_SPINDLE = DeviceProfile("nfs:nas01 spindle", 0.0125, 110 * MB, 100 * MB)


@dataclass(frozen=True)
class ScratchConfig:
    """What sits under a node's job scratch directory."""

    storage_type: str
    device: DeviceProfile
    members: int = 1  # RAID members; 1 for a plain device
    shared: bool = False  # a network file system shared by every node of this type
    network_latency_seconds: float = 0.0

    @property
    def device_models(self) -> list[str]:
        return [self.device.model] * self.members if not self.shared else [f"nfs:{self.device.model}"]


SCRATCH = {
    "hdd": ScratchConfig("hdd", SEAGATE_HDD),
    "raid0": ScratchConfig("raid0", SEAGATE_HDD, members=2),
    "raid1": ScratchConfig("raid1", SEAGATE_HDD, members=2),
    "ssd": ScratchConfig("ssd", KINGSTON_SSD),
    "nvme": ScratchConfig("nvme", SAMSUNG_NVME),
    "nfs": ScratchConfig("nfs", NFS_SPINDLE, members=6, shared=True, network_latency_seconds=0.0004),
}

#: Devices the generator models but the demo site does not run: what ``probe storage --synthetic``
#: and the tests can measure as hardware a site might buy (keys are not storage types).
PROBE_ONLY = {
    # a consumer SSD with a write cliff; its storage type is ssd, like the demo's Kingston
    "ssd_consumer": ScratchConfig("ssd", CONSUMER_SSD),
}


@dataclass(frozen=True)
class NodeSpec:
    name: str
    scratch: ScratchConfig
    slots: int
    ab_arm: str
    nic_gbps: float = 10.0


@dataclass(frozen=True)
class ServerSpec:
    """An XRootD origin server or the SSD cache, as spindles/channels behind one NIC."""

    host: str
    role: str
    device: DeviceProfile
    queues: int
    nic_bytes_per_second: float


@dataclass(frozen=True)
class Workload:
    """The job mix. Efficiencies are not here: they come out of the queueing model."""

    analysis_share: float = 0.9
    analysis_cpu_seconds_per_gb: float = 185.0  # CPU a user analysis spends per GB it reads
    analysis_seeks_per_mb: float = 3.5  # ROOT basket reads: out-of-order accesses per MB read
    analysis_direct_share: float = 0.45  # jobs reading remotely (partial reads) instead of staging in
    production_cpu_hours: tuple[float, float] = (1.0, 3.5)
    production_multicore_share: float = 0.25
    production_multicore_cores: int = 4
    oversubscribed_share: float = 0.01  # production jobs running more threads than cores allocated
    failed_share: float = 0.02
    missing_identity_share: float = 0.03  # accesses from clients that bypass the plugin's XRD_MONINFO
    load: float = 0.93  # mean offered load as a fraction of the site's cores


@dataclass(frozen=True)
class Catalogue:
    """The files jobs read: datasets with Zipf popularity that rise and fade within days."""

    datasets: int = 900
    files_per_dataset: tuple[int, int] = (8, 40)
    file_size_median_bytes: float = 2.2 * GB
    file_size_sigma: float = 0.55
    file_size_max_bytes: int = 9 * GB
    zipf_exponent: float = 0.8
    activity_days: float = 3.5


@dataclass(frozen=True)
class SiteSpec:
    cluster: str
    nodes: tuple[NodeSpec, ...]
    origins: tuple[ServerSpec, ...]
    cache: ServerSpec
    cache_capacity_bytes: int
    workload: Workload = field(default_factory=Workload)
    catalogue: Catalogue = field(default_factory=Catalogue)

    @property
    def slots(self) -> int:
        return sum(n.slots for n in self.nodes)


def demo_site(nodes_per_type: int = 2, slots: int = 8, cluster: str = "t2demo") -> SiteSpec:
    """The demo site: every scratch configuration, each split evenly between arms A and B.

    Arm A skips the SSD cache and reads the origin servers directly; arm B tries the cache first
    (the SLAC set-up). Arms are fixed per node, on identical hardware, as SLAC's node groups were.
    """
    # Every storage type gets an even number of nodes so both arms run on identical hardware:
    # an arm with the only NVMe node would measure the NVMe, not the cache.
    others = 2 * -(-nodes_per_type // 2)
    counts = {
        "hdd": 2 * nodes_per_type,
        "raid0": 2 * nodes_per_type,
        "raid1": others,
        "ssd": others,
        "nvme": others,
        "nfs": others,
    }
    nodes: list[NodeSpec] = []
    for storage_type, count in counts.items():
        for i in range(count):
            arm = "A" if i % 2 == 0 else "B"
            nodes.append(NodeSpec(f"wn-{storage_type}-{i + 1:02d}", SCRATCH[storage_type], slots, arm))
    origins = tuple(
        ServerSpec(f"se{i + 1:02d}.{cluster}", "origin", SEAGATE_HDD, queues=8, nic_bytes_per_second=1.25 * GB)
        for i in range(3)
    )
    cache = ServerSpec(f"xcache01.{cluster}", "cache", CACHE_SSD, queues=12, nic_bytes_per_second=2.5 * GB)
    total_slots = sum(n.slots for n in nodes)
    # Sized against the working set so the cache hits often but not always, as at SLAC.
    cache_capacity = int(total_slots * 0.05e12)
    return SiteSpec(cluster, tuple(nodes), origins, cache, cache_capacity)


def contention_free_site(
    nodes: int = 6, slots: int = 8, cluster: str = "t2mix", scratch_latency_seconds: float = 0.01, load: float = 0.9
) -> SiteSpec:
    """A site where no job waits for another: what a job-mix test needs.

    Every read a job makes from scratch pays a fixed latency per access (a high-latency network
    block device), on a node with as many scratch channels as job slots, and the servers are
    flash behind ample network; analysis jobs stage their input in. A job's efficiency then
    depends on its own work alone, so changing the job mix changes the site's efficiency only
    through the mix, which is what a stratified before/after comparison must see through.
    """
    scratch = ScratchConfig("other", SAMSUNG_NVME, network_latency_seconds=scratch_latency_seconds)
    if slots > SAMSUNG_NVME.queues:
        raise ValueError(f"{slots} slots would share {SAMSUNG_NVME.queues} scratch channels")
    node_specs = tuple(
        NodeSpec(f"wn-{i + 1:02d}", scratch, slots, "A" if i % 2 == 0 else "B", nic_gbps=400.0) for i in range(nodes)
    )

    def server(host: str, role: str) -> ServerSpec:
        return ServerSpec(host, role, SAMSUNG_NVME, queues=64, nic_bytes_per_second=200 * GB)

    origins = tuple(server(f"se{i + 1:02d}.{cluster}", "origin") for i in range(3))
    return SiteSpec(
        cluster,
        node_specs,
        origins,
        server(f"xcache01.{cluster}", "cache"),
        cache_capacity_bytes=int(nodes * slots * 0.05e12),
        workload=Workload(load=load, analysis_direct_share=0.0),
    )
