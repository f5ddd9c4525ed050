"""The canonical records: the only contract between tierlens stages.

Every stage (scheduler plugins' spool, batch-system sources, the XRootD collector, the
synthetic site, the simulator) produces Arrow tables with exactly these schemas, and the
warehouse stores them unchanged in its raw tables. Units are part of the field name or stated
in the field's ``doc`` metadata: seconds are float64, bytes int64, times UTC timestamps in
microseconds, cores int32.

Besides the schemas this module owns, per record kind:

* the natural key that makes loading idempotent,
* the time column that places a row in a day partition of the Parquet lake,
* the validation rules a row must pass before it reaches a raw table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa

TIMESTAMP = pa.timestamp("us", tz="UTC")

#: Storage types a scheduler plugin may report for a job's scratch space (docs/architecture.md, "Records").
STORAGE_TYPES: tuple[str, ...] = (
    "hdd",
    "ssd",
    "nvme",
    "raid0",
    "raid1",
    "raid5",
    "raid6",
    "raid10",
    "tmpfs",
    "nfs",
    "lustre",
    "gpfs",
    "cephfs",
    "other",
)

#: How a storage_catalog configuration combines its devices ('none': one device, or a JBOD of one).
RAID_LEVELS: tuple[str, ...] = ("none", "raid0", "raid1", "raid5", "raid6", "raid10")

#: Roles an XRootD server plays in a file access.
SERVER_ROLES: tuple[str, ...] = ("origin", "cache")

#: Kinds of site change a site manager records (site_change.category).
CHANGE_CATEGORIES: tuple[str, ...] = ("storage", "network", "filesystem", "cache", "software", "other")


def _f(name: str, type_: pa.DataType, doc: str, unit: str = "", nullable: bool = True) -> pa.Field:
    meta = {"doc": doc}
    if unit:
        meta["unit"] = unit
    return pa.field(name, type_, nullable=nullable, metadata=meta)


JOB = pa.schema(
    [
        _f("batch_system", pa.string(), "Batch system that ran the job: slurm, htcondor or synthetic.", nullable=False),
        _f(
            "cluster",
            pa.string(),
            "Site or cluster name as the batch system reports it (Slurm ClusterName, HTCondor schedd pool).",
            nullable=False,
        ),
        _f("job_id", pa.string(), "Job id within the cluster (Slurm JobID, HTCondor GlobalJobId).", nullable=False),
        _f(
            "step_id",
            pa.string(),
            "Step within the job; empty string for the whole job (batch systems without steps always use it).",
            nullable=False,
        ),
        _f(
            "job_identity",
            pa.string(),
            "Identity the scheduler plugin handed the job in XRD_MONINFO, '<batch_system>.<cluster>.<job_id>'; joins file accesses to the job exactly.",
        ),
        _f("user_name", pa.string(), "Unix user (Slurm User, HTCondor Owner)."),
        _f("account", pa.string(), "Accounting account or group (Slurm Account, HTCondor AccountingGroup)."),
        _f("vo", pa.string(), "Virtual organisation the account belongs to, e.g. atlas, cms; null when unknown."),
        _f(
            "job_class",
            pa.string(),
            "Kind of work, e.g. analysis or production, when the source can tell; null otherwise.",
        ),
        _f("partition", pa.string(), "Partition (Slurm) or queue the job ran in."),
        _f("node", pa.string(), "First (or only) node the job ran on."),
        _f("node_list", pa.string(), "All nodes the job ran on, comma separated, as the batch system reports them."),
        _f("submit_time", TIMESTAMP, "When the job was submitted.", "UTC"),
        _f("start_time", TIMESTAMP, "When the job (or step) started running.", "UTC"),
        _f("end_time", TIMESTAMP, "When the job (or step) ended; null while running.", "UTC"),
        _f(
            "allocated_cores",
            pa.int32(),
            "Cores allocated to the job (Slurm AllocCPUS, HTCondor RequestCpus/CpusProvisioned).",
            "cores",
        ),
        _f("cpu_user_seconds", pa.float64(), "CPU time spent in user mode, summed over all cores.", "s"),
        _f("cpu_system_seconds", pa.float64(), "CPU time spent in kernel mode, summed over all cores.", "s"),
        _f("wall_seconds", pa.float64(), "Elapsed wall-clock time from start to end.", "s"),
        _f("state", pa.string(), "Final state in upper case, e.g. COMPLETED, FAILED, CANCELLED, TIMEOUT."),
        _f("exit_code", pa.int32(), "Exit code of the job's main process; null when unknown."),
        _f(
            "bytes_read",
            pa.int64(),
            "Bytes read by the job where the batch system measures it (Slurm fs/disk rchar); null otherwise.",
            "bytes",
        ),
        _f(
            "bytes_written",
            pa.int64(),
            "Bytes written by the job where the batch system measures it (Slurm fs/disk wchar); null otherwise.",
            "bytes",
        ),
        _f(
            "sluid",
            pa.string(),
            "Slurm's unique id of this run of the job (SLUID, 's' and 13 upper-case Crockford base32 digits; Slurm 26.05+, sacct --json 'sluid'); a requeued job's new run has a new one. Null where the batch system has none.",
        ),
    ]
)

JOB_TAG = pa.schema(
    [
        _f("batch_system", pa.string(), "Batch system of the tagged job.", nullable=False),
        _f("cluster", pa.string(), "Cluster of the tagged job.", nullable=False),
        _f("job_id", pa.string(), "Job id of the tagged job.", nullable=False),
        _f("step_id", pa.string(), "Step of the tagged job; empty string for the whole job.", nullable=False),
        _f("node", pa.string(), "Node the tag was recorded on.", nullable=False),
        _f(
            "storage_type",
            pa.string(),
            "Storage type under the job's scratch directory; one of STORAGE_TYPES.",
            nullable=False,
        ),
        _f(
            "device_models",
            pa.list_(pa.string()),
            "Model strings of the block devices under the scratch directory (RAID members listed individually).",
        ),
        _f("scratch_path", pa.string(), "Scratch directory the plugin inspected (TMPDIR or the configured path)."),
        _f("ab_arm", pa.string(), "A/B arm the job was given, e.g. A or B; null outside a trial."),
        _f(
            "cache_route",
            pa.string(),
            "Where the job's remote reads were sent, e.g. 'cache:xcache01:1094' or 'direct'; null when not set.",
        ),
        _f("tagged_at", TIMESTAMP, "When the plugin recorded the tag.", "UTC"),
        _f("tagger", pa.string(), "What wrote the tag: slurm-spank, htcondor-startd-cron or synthetic."),
    ]
)

FILE_ACCESS = pa.schema(
    [
        _f("server_host", pa.string(), "XRootD server or cache that served the file.", nullable=False),
        _f(
            "unique_id",
            pa.string(),
            "Identifier of this open-close, unique per server (SLAC record unique_id).",
            nullable=False,
        ),
        _f("server_role", pa.string(), "origin or cache; one of SERVER_ROLES."),
        _f("file_lfn", pa.string(), "Logical file name as opened.", nullable=False),
        _f("file_size_bytes", pa.int64(), "File size at open.", "bytes"),
        _f("start_time", TIMESTAMP, "Open time.", "UTC"),
        _f("end_time", TIMESTAMP, "Close time, or the time the record was given up as unclosed.", "UTC"),
        _f("read_single_average_bytes", pa.float64(), "Mean size of a single (non-vector) read.", "bytes"),
        _f(
            "read_vector_average_bytes",
            pa.float64(),
            "Mean size of a vector read (readv), over all its segments.",
            "bytes",
        ),
        _f("write_average_bytes", pa.float64(), "Mean size of a write.", "bytes"),
        _f("read_bytes_at_close", pa.int64(), "Bytes read (single and vector) when the file was closed.", "bytes"),
        _f("write_bytes_at_close", pa.int64(), "Bytes written when the file was closed.", "bytes"),
        _f("read_bytes", pa.int64(), "Bytes read by single reads.", "bytes"),
        _f("readv_bytes", pa.int64(), "Bytes read by vector reads.", "bytes"),
        _f("write_bytes", pa.int64(), "Bytes written.", "bytes"),
        _f("read_ops", pa.int64(), "Number of single reads.", "operations"),
        _f("readv_ops", pa.int64(), "Number of vector reads.", "operations"),
        _f("write_ops", pa.int64(), "Number of writes.", "operations"),
        _f("client_host", pa.string(), "Host the client connected from."),
        _f("client_pid", pa.int32(), "Process id of the client on client_host, when known."),
        _f("app_name", pa.string(), "Application name the client sent (XRD_APPNAME, the &x= login field)."),
        _f(
            "job_identity",
            pa.string(),
            "Job identity the client sent (XRD_MONINFO, the &y= login field); see JOB.job_identity.",
        ),
        _f(
            "cache_hit_bytes",
            pa.int64(),
            "Bytes served from the cache's own storage; null when the server is not a cache.",
            "bytes",
        ),
        _f(
            "cache_miss_bytes",
            pa.int64(),
            "Bytes the cache fetched from its origin to serve this access (staged in); null when not a cache.",
            "bytes",
        ),
        _f(
            "cache_bypass_bytes",
            pa.int64(),
            "Bytes passed through the cache without being stored; null when not a cache.",
            "bytes",
        ),
        _f(
            "close_seen",
            pa.bool_(),
            "True when the close was observed; false for records emitted as unclosed.",
            nullable=False,
        ),
        # Appended by the collector v2: how the access ended, and the evidence for cache truth.
        _f(
            "end_reason",
            pa.string(),
            "How the access ended; one of END_REASONS (close, disconnect, timeout, shutdown, server_restart).",
        ),
        _f(
            "server_pid",
            pa.int32(),
            "Process id of the xrootd server (from its '=' identity); an origin sees a cache's own reads under this pid.",
        ),
        _f("server_addr", pa.string(), "IP address the server's monitoring packets came from."),
        _f("cache_attach_time", TIMESTAMP, "XCache g-stream: when the cache attached the file for this access.", "UTC"),
        _f("cache_detach_time", TIMESTAMP, "XCache g-stream: when the cache detached the file.", "UTC"),
        _f(
            "cache_access_count",
            pa.int64(),
            "XCache g-stream access_cnt: accesses of the file so far, this one included (1: first, cannot be a hit).",
            "accesses",
        ),
        _f(
            "cache_remotes",
            pa.string(),
            "XCache g-stream remotes: origins contacted during this attach, comma separated; empty: none.",
        ),
        _f("cache_blocks", pa.int64(), "XCache g-stream n_blks: blocks of the file.", "blocks"),
        _f(
            "cache_blocks_done",
            pa.int64(),
            "XCache g-stream n_blks_done: blocks on the cache's disk at detach.",
            "blocks",
        ),
        # Appended for XRootD 5.7.2+ caches, whose file_close also says what reached the cache's disk.
        _f(
            "cache_todisk_bytes",
            pa.int64(),
            "XCache g-stream b_todisk (5.7.2+): bytes fetched from the origin and written to the cache's disk while the file was attached, prefetch included; null when not reported.",
            "bytes",
        ),
        _f(
            "cache_prefetch_bytes",
            pa.int64(),
            "XCache g-stream b_prefetch (5.7.2+): bytes of the blocks the cache prefetched (not asked for by a read) while the file was attached; null when not reported.",
            "bytes",
        ),
    ]
)

#: FILE_ACCESS's XCache g-stream fields (a cache's pfc file_close event), null until that event is
#: joined to its access and on an origin's rows. Grouped by the release that appended them, so a
#: migration step reads the group it added and a new field goes in a new group.
GSTREAM_BYTES: tuple[str, ...] = ("cache_hit_bytes", "cache_miss_bytes", "cache_bypass_bytes")
#: appended by the collector v2 (migration 4)
GSTREAM_V2: tuple[str, ...] = (
    "cache_attach_time",
    "cache_detach_time",
    "cache_access_count",
    "cache_remotes",
    "cache_blocks",
    "cache_blocks_done",
)
#: appended for XRootD 5.7.2+ caches (migration 7): null from an older cache
GSTREAM_572: tuple[str, ...] = ("cache_todisk_bytes", "cache_prefetch_bytes")
GSTREAM_FIELDS: tuple[str, ...] = GSTREAM_BYTES + GSTREAM_V2 + GSTREAM_572

#: How a file_access ended (FILE_ACCESS.end_reason).
END_REASONS: tuple[str, ...] = ("close", "disconnect", "timeout", "shutdown", "server_restart")

NODE = pa.schema(
    [
        _f("cluster", pa.string(), "Cluster the node belongs to.", nullable=False),
        _f("node", pa.string(), "Node host name.", nullable=False),
        _f(
            "storage_type", pa.string(), "Storage type of the node's job scratch; one of STORAGE_TYPES.", nullable=False
        ),
        _f("device_models", pa.list_(pa.string()), "Model strings of the scratch devices."),
        _f("device_count", pa.int32(), "Number of physical devices under the scratch space.", "devices"),
        _f("job_slots", pa.int32(), "Cores the batch system may allocate to jobs on the node.", "cores"),
        _f("nic_gbps", pa.float64(), "Network interface speed.", "Gbit/s"),
        _f("ab_arm", pa.string(), "A/B arm the node serves when arms are fixed per node; null otherwise."),
    ]
)

STORAGE_CATALOG = pa.schema(
    [
        _f("config_name", pa.string(), "Name of the device or configuration, e.g. '2xHDD RAID0'.", nullable=False),
        _f(
            "storage_type",
            pa.string(),
            "Storage type the configuration provides; one of STORAGE_TYPES.",
            nullable=False,
        ),
        _f("device_model", pa.string(), "Device model the configuration is built from."),
        _f("devices_per_node", pa.int32(), "Devices one worker node needs for this configuration.", "devices"),
        _f("unit_price", pa.float64(), "Price of one device.", "currency units"),
        _f("currency", pa.string(), "ISO 4217 currency of unit_price, e.g. GBP."),
        _f("capacity_bytes", pa.int64(), "Usable capacity of one device.", "bytes"),
        _f("endurance_tbw", pa.float64(), "Rated write endurance of one device; null for HDDs.", "TB written"),
        # datasheet figures: let a device nobody has probed be priced and predicted
        _f(
            "seq_read_mb_per_s",
            pa.float64(),
            "Datasheet sequential read rate of one device; null when unknown.",
            "MB/s (1e6 bytes)",
        ),
        _f(
            "seq_write_mb_per_s",
            pa.float64(),
            "Datasheet sustained sequential write rate of one device; null when unknown.",
            "MB/s (1e6 bytes)",
        ),
        _f(
            "rand_read_iops_4k",
            pa.float64(),
            "Datasheet random read operations per second at 4 KiB of one device; null when unknown.",
            "IOPS",
        ),
        _f(
            "raid_level",
            pa.string(),
            "How devices_per_node devices are combined: none (one device), raid0, raid1, raid5, raid6 or raid10; null = none.",
        ),
    ]
)

DEVICE_PROBE = pa.schema(
    [
        _f(
            "probe_id",
            pa.string(),
            "One run of `tierlens probe storage`: every job of the run shares it.",
            nullable=False,
        ),
        _f(
            "node",
            pa.string(),
            "Node the probe ran on (or 'synthetic:<type>' for the demo's device model).",
            nullable=False,
        ),
        _f("path", pa.string(), "Directory probed (the scratch path jobs would use)."),
        _f(
            "storage_type",
            pa.string(),
            "Storage type under path, from the plugins' detector; one of STORAGE_TYPES.",
            nullable=False,
        ),
        _f(
            "device_models",
            pa.list_(pa.string()),
            "Model strings of the block devices under path (RAID members listed individually).",
        ),
        _f("tool", pa.string(), "What measured: fio, or synthetic (the demo generator's discrete-event device)."),
        _f("tool_version", pa.string(), "Version of the tool, e.g. fio-3.33."),
        _f(
            "job_name",
            pa.string(),
            "Probe job, one of tierlens.probe.jobs.JOBS (e.g. stagein_write, rand_read_128k_node).",
            nullable=False,
        ),
        _f("rw", pa.string(), "Access pattern: write (sequential), read (sequential) or randread."),
        _f("block_size_bytes", pa.int64(), "Size of each request.", "bytes"),
        _f(
            "queue_depth",
            pa.int32(),
            "Requests each process keeps in flight (1: synchronous, as a job's reads are).",
            "requests",
        ),
        _f("processes", pa.int32(), "Processes running the job at once (1, or a full node's job slots).", "processes"),
        _f(
            "direct_io",
            pa.bool_(),
            "True when the page cache was bypassed (O_DIRECT); false where the file system refuses it (tmpfs).",
        ),
        _f("seconds", pa.float64(), "How long the job ran.", "s"),
        _f(
            "bandwidth_bytes_per_second",
            pa.float64(),
            "Bytes transferred per second, all processes together.",
            "bytes/s",
        ),
        _f("iops", pa.float64(), "Requests completed per second, all processes together.", "requests/s"),
        _f("mean_latency_seconds", pa.float64(), "Mean time from issuing a request to its completion.", "s"),
        _f("p99_latency_seconds", pa.float64(), "99th percentile of the completion latency.", "s"),
        _f("probed_at", TIMESTAMP, "When the probe run started.", "UTC"),
        _f("p50_latency_seconds", pa.float64(), "Median of the completion latency.", "s"),
        _f("p999_latency_seconds", pa.float64(), "99.9th percentile of the completion latency.", "s"),
        _f("max_latency_seconds", pa.float64(), "Longest completion latency seen.", "s"),
        _f(
            "write_utilisation_target",
            pa.float64(),
            "read_under_write_* jobs: the background writers' throttle as a fraction of the run's stagein_write "
            "bandwidth (0: no writers); null for other jobs.",
            "fraction",
        ),
        _f(
            "write_utilisation",
            pa.float64(),
            "read_under_write_* jobs: bytes the background writers wrote per second over the stagein_write "
            "bandwidth (buffered: written into the page cache); null for other jobs.",
            "fraction",
        ),
        _f(
            "io_scheduler",
            pa.string(),
            "I/O scheduler of the block device under path (/sys/block/DEV/queue/scheduler; a stacked device "
            "lists its members', e.g. 'none; sda: mq-deadline'); null when path is on no block device.",
        ),
        _f("filesystem", pa.string(), "File system type of the mount holding path (ext4, xfs, tmpfs, ...)."),
        _f(
            "discard",
            pa.string(),
            "Online discard (TRIM) of that mount: 'discard', 'discard=async', or 'off' when the mount options "
            "ask for none (periodic fstrim may still run).",
        ),
        _f(
            "discard_max_bytes",
            pa.int64(),
            "Largest discard the block device accepts (/sys/block/DEV/queue/discard_max_bytes; 0: no TRIM); "
            "null when path is on no block device.",
            "bytes",
        ),
    ]
)

SITE_CHANGE = pa.schema(
    [
        _f(
            "change_id",
            pa.string(),
            "Identifier of the change; `tierlens change add` derives one from time, text and scope when none is given.",
            nullable=False,
        ),
        _f("changed_at", TIMESTAMP, "When the change took effect.", "UTC", nullable=False),
        _f(
            "description",
            pa.string(),
            "What changed, in the site manager's words, e.g. 'GPFS pagepool 512MB -> 1GB'.",
            nullable=False,
        ),
        _f("category", pa.string(), "Kind of change; one of CHANGE_CATEGORIES."),
        _f("cluster", pa.string(), "Cluster the change applies to; null for every cluster of the site."),
        _f("scope_nodes", pa.list_(pa.string()), "Nodes the change applies to; null when not limited to nodes."),
        _f(
            "scope_storage_type",
            pa.string(),
            "Storage type the change applies to (nodes of that scratch type); null when not limited.",
        ),
        _f("scope_ab_arm", pa.string(), "A/B arm the change applies to; null when not limited."),
        _f("changed_by", pa.string(), "Who made the change."),
        _f("recorded_at", TIMESTAMP, "When the change was recorded in tierlens.", "UTC"),
    ]
)

COLLECTOR_STATS = pa.schema(
    [
        _f("collector_host", pa.string(), "Host the collector ran on.", nullable=False),
        _f("worker", pa.int32(), "Receiving worker (0..N-1 with --workers N).", nullable=False),
        _f("interval_start", TIMESTAMP, "Start of the counting interval.", "UTC", nullable=False),
        _f("interval_end", TIMESTAMP, "End of the counting interval.", "UTC", nullable=False),
        _f("server_host", pa.string(), "XRootD server the counts are for; '' for socket-level counts.", nullable=False),
        _f("datagrams", pa.int64(), "Datagrams received and journaled.", "datagrams"),
        _f(
            "kernel_drops",
            pa.int64(),
            "Datagrams the kernel dropped on the socket (SO_RXQ_OVFL); socket-level rows only.",
            "datagrams",
        ),
        _f(
            "sequence_gaps",
            pa.int64(),
            "Datagrams missing from the server's pseq sequences (lower bound of loss).",
            "datagrams",
        ),
        _f("disallowed", pa.int64(), "Datagrams dropped because the sender is outside --allow.", "datagrams"),
        _f("quarantined", pa.int64(), "Datagrams or records that could not be decoded.", "datagrams"),
        _f(
            "pfc_unmatched",
            pa.int64(),
            "Cache file_close events matched to no access within the grace window.",
            "events",
        ),
        _f("rows_written", pa.int64(), "file_access rows written.", "rows"),
        # Appended when newer XRootD releases began to send what this collector does not decode.
        _f(
            "unknown_records",
            pa.int64(),
            "Records, packets, g-stream types and event fields the collector does not know, counted and not decoded.",
            "records",
        ),
        _f(
            "unknown_kinds",
            pa.string(),
            "unknown_records by kind, 'kind=count' joined by ';' and sorted: map:<code>, code:<code>, json:<code>, gstream:<type>, gstream_event:<name>, field:<event>.<name>; '' when none.",
        ),
    ]
)


#: What one scheduled ingest of a source brought for its interval, kept so that an interval that
#: loaded nothing is seen in data_completeness, with the reason, not only in a task log.
SOURCE_INTERVAL_OUTCOMES = ("loaded", "outside_window", "no_new_records", "not_found", "unreachable")

SOURCE_INTERVAL = pa.schema(
    [
        _f(
            "source",
            pa.string(),
            "Source the interval was read from: synthetic, slurm, condor or xrootd.",
            nullable=False,
        ),
        _f("interval_start", TIMESTAMP, "Start of the data interval (included).", "UTC", nullable=False),
        _f("interval_end", TIMESTAMP, "End of the data interval (excluded).", "UTC", nullable=False),
        _f(
            "records",
            pa.int64(),
            "Job, job tag and file access records the source brought for the interval.",
            "records",
        ),
        _f(
            "outcome",
            pa.string(),
            "loaded, or why nothing was: outside_window (the source has no data for that time), no_new_records (it answered with none), not_found (its folder or files are missing), unreachable (reading it failed).",
            nullable=False,
        ),
        _f("reason", pa.string(), "The reason in words, as the task log gives it; null when records were loaded."),
        _f("recorded_at", TIMESTAMP, "When the ingest ran.", "UTC"),
    ]
)


class RecordKind(str, Enum):
    """Each canonical record and the raw warehouse table that holds it."""

    JOB = "job"
    JOB_TAG = "job_tag"
    FILE_ACCESS = "file_access"
    NODE = "node"
    STORAGE_CATALOG = "storage_catalog"
    SITE_CHANGE = "site_change"
    COLLECTOR_STATS = "collector_stats"
    DEVICE_PROBE = "device_probe"
    SOURCE_INTERVAL = "source_interval"

    @property
    def table(self) -> str:
        return f"raw_{self.value}"


@dataclass(frozen=True)
class Rule:
    """A validation rule: rows for which ``violated_when`` (DuckDB SQL) is true are rejected."""

    field: str
    violated_when: str
    reason: str


@dataclass(frozen=True)
class RecordSpec:
    kind: RecordKind
    schema: pa.Schema
    natural_key: tuple[str, ...]
    #: Column whose UTC day places the row in a lake partition.
    day_column: str | None
    rules: tuple[Rule, ...] = field(default_factory=tuple)


def _in_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _required(*names: str) -> tuple[Rule, ...]:
    return tuple(Rule(n, f"{n} IS NULL OR CAST({n} AS VARCHAR) = ''", "missing") for n in names)


# One constructor per kind of check, so the same check reads (and rejects) the same way in
# every record.


def _null(name: str, reason: str = "missing") -> Rule:
    return Rule(name, f"{name} IS NULL", reason)


def _negative(*names: str) -> tuple[Rule, ...]:
    return tuple(Rule(n, f"{n} < 0", "negative") for n in names)


def _not_positive(*names: str, required: bool = False) -> tuple[Rule, ...]:
    if required:
        return tuple(Rule(n, f"{n} IS NULL OR {n} <= 0", "missing or not positive") for n in names)
    return tuple(Rule(n, f"{n} <= 0", "zero or negative") for n in names)


def _at_least_one(name: str, reason: str) -> Rule:
    return Rule(name, f"{name} IS NULL OR {name} < 1", reason)


def _before(later: str, earlier: str) -> Rule:
    return Rule(later, f"{later} < {earlier}", f"before {earlier}")


def _one_of(name: str, values: tuple[str, ...], reason: str, required: bool = False) -> Rule:
    presence = f"{name} IS NULL OR" if required else f"{name} IS NOT NULL AND"
    return Rule(name, f"{presence} {name} NOT IN ({_in_list(values)})", reason)


def _storage_type(name: str = "storage_type", required: bool = True) -> Rule:
    return _one_of(name, STORAGE_TYPES, "not a known storage type", required)


_WHOLE_JOB_STEP = _null("step_id", "missing (use '' for the whole job)")

SPECS: dict[RecordKind, RecordSpec] = {
    RecordKind.JOB: RecordSpec(
        RecordKind.JOB,
        JOB,
        ("batch_system", "cluster", "job_id", "step_id"),
        "start_time",
        _required("batch_system", "cluster", "job_id")
        + (
            _WHOLE_JOB_STEP,
            # a launch failure ends without starting (Slurm time.start NO_VAL, elapsed 0): it keeps
            # its end so it counts as a finished failed job; a job with wall time must have a start
            Rule(
                "start_time",
                "start_time IS NULL AND end_time IS NOT NULL AND coalesce(wall_seconds, 0) > 0",
                "missing while end_time is set and wall_seconds > 0",
            ),
            _before("end_time", "start_time"),
            _at_least_one("allocated_cores", "missing or below 1 core"),
        )
        + _negative("cpu_user_seconds", "cpu_system_seconds", "wall_seconds", "bytes_read", "bytes_written"),
    ),
    RecordKind.JOB_TAG: RecordSpec(
        RecordKind.JOB_TAG,
        JOB_TAG,
        ("batch_system", "cluster", "job_id", "step_id"),
        "tagged_at",
        _required("batch_system", "cluster", "job_id", "node") + (_WHOLE_JOB_STEP, _storage_type()),
    ),
    RecordKind.FILE_ACCESS: RecordSpec(
        RecordKind.FILE_ACCESS,
        FILE_ACCESS,
        ("server_host", "unique_id"),
        "start_time",
        _required("server_host", "unique_id", "file_lfn")
        + (
            _one_of("server_role", SERVER_ROLES, "not origin or cache"),
            _null("start_time"),
            _before("end_time", "start_time"),
        )
        + _negative("file_size_bytes", "read_bytes_at_close", "write_bytes_at_close")
        + (
            _null("close_seen"),
            _one_of("end_reason", END_REASONS, "not an end reason"),
        ),
    ),
    RecordKind.NODE: RecordSpec(
        RecordKind.NODE,
        NODE,
        ("cluster", "node"),
        None,
        _required("cluster", "node") + (_storage_type(), _at_least_one("job_slots", "missing or below 1")),
    ),
    RecordKind.STORAGE_CATALOG: RecordSpec(
        RecordKind.STORAGE_CATALOG,
        STORAGE_CATALOG,
        ("config_name",),
        None,
        _required("config_name")
        + (_storage_type(),)
        + _negative("unit_price")
        + _not_positive("capacity_bytes", "seq_read_mb_per_s", "seq_write_mb_per_s", "rand_read_iops_4k")
        + (_one_of("raid_level", RAID_LEVELS, "not none, raid0, raid1, raid5, raid6 or raid10"),),
    ),
    RecordKind.DEVICE_PROBE: RecordSpec(
        RecordKind.DEVICE_PROBE,
        DEVICE_PROBE,
        ("probe_id", "job_name"),
        "probed_at",
        _required("probe_id", "node", "job_name")
        + (_storage_type(),)
        + _not_positive("block_size_bytes", "bandwidth_bytes_per_second", required=True)
        + _negative(
            "mean_latency_seconds",
            "p50_latency_seconds",
            "p999_latency_seconds",
            "max_latency_seconds",
            "write_utilisation_target",
            "write_utilisation",
            "discard_max_bytes",
        )
        + (_null("probed_at"),),
    ),
    RecordKind.SITE_CHANGE: RecordSpec(
        RecordKind.SITE_CHANGE,
        SITE_CHANGE,
        ("change_id",),
        "changed_at",
        _required("change_id", "description")
        + (
            _null("changed_at"),
            _one_of("category", CHANGE_CATEGORIES, f"not a change category ({', '.join(CHANGE_CATEGORIES)})"),
            _storage_type("scope_storage_type", required=False),
        ),
    ),
    RecordKind.COLLECTOR_STATS: RecordSpec(
        RecordKind.COLLECTOR_STATS,
        COLLECTOR_STATS,
        ("collector_host", "worker", "interval_start", "server_host"),
        "interval_start",
        _required("collector_host", "worker", "interval_start", "interval_end")
        + (
            _null("server_host", "missing (use '' for socket-level counts)"),
            _before("interval_end", "interval_start"),
        ),
    ),
    RecordKind.SOURCE_INTERVAL: RecordSpec(
        RecordKind.SOURCE_INTERVAL,
        SOURCE_INTERVAL,
        ("source", "interval_start", "interval_end"),
        "interval_start",
        _required("source", "interval_start", "interval_end", "outcome")
        + (
            _one_of("outcome", SOURCE_INTERVAL_OUTCOMES, f"not an outcome ({', '.join(SOURCE_INTERVAL_OUTCOMES)})"),
            _before("interval_end", "interval_start"),
        ),
    ),
}


#: A Slurm SLUID as Slurm prints it (print_sluid): 's' and 13 upper-case Crockford base32 digits
#: (no I, L, O, U); the first digit holds only the top 4 of the 64 bits.
SLUID_PATTERN = re.compile(r"s[0-9A-F][0-9A-HJKMNP-TV-Z]{12}")


def job_identity(batch_system: str, cluster: str, job_id: str, sluid: str | None = None) -> str:
    """The identity a scheduler plugin puts in XRD_MONINFO; the collector copies it verbatim.

    '<batch_system>.<cluster>.<job_id>', and '.<sluid>' after it where the cluster gives the run
    a SLUID (Slurm 26.05+): job ids are reused (MaxJobId wraps, a rebuilt controller starts
    again, a requeue keeps the id) and the SLUID is not. The plugin sees the SLUID in the step's
    environment (SLURM_JOB_SLUID), the ingest in sacct's 'sluid'; both build this same string.
    A value that is not a SLUID is left out, so a damaged field cannot make an identity no plugin
    would write (docs/architecture.md#joining-file-accesses-to-jobs).
    """
    base = f"{batch_system}.{cluster}.{job_id}"
    sluid = valid_sluid(sluid)
    return f"{base}.{sluid}" if sluid else base


_CB32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def valid_sluid(value: object) -> str | None:
    """``value`` when it is a SLUID Slurm gave a job's run, else None.

    Its top 12 bits are the cluster; cluster 0 is reserved for accounting records written before
    SLUIDs (sacct prints their db_index in the same form), so those are not run ids.
    """
    if not isinstance(value, str) or not SLUID_PATTERN.fullmatch(value):
        return None
    cluster = (_CB32.index(value[1]) << 8) | (_CB32.index(value[2]) << 3) | (_CB32.index(value[3]) >> 2)
    return value if cluster else None


@dataclass(frozen=True)
class Reject:
    """A record a source could not turn into a canonical row (it never reached Arrow).

    ``location`` names where it came from: 'FILE:line N' or 'FILE:offset N'.
    """

    kind: RecordKind
    source: str
    location: str
    field: str
    reason: str
    raw: str


def conform(kind: RecordKind, table: pa.Table, source: str) -> pa.Table:
    """``table`` in the schema of ``kind``, or a ValueError naming the source and the field.

    Columns are cast one by one so a null in a required field survives to validation (and
    becomes a counted reject for its row) instead of failing the whole batch here.
    """
    schema = SPECS[kind].schema
    if table.schema.equals(schema, check_metadata=False):
        return table
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            raise ValueError(f"{source}: {kind.value} batch has no field {f.name!r}")
        column = table[f.name]
        try:
            columns.append(column.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            raise ValueError(f"{source}: field {f.name!r} is {column.type}, cannot cast to {f.type}: {err}") from err
    return pa.Table.from_arrays(columns, schema=schema)


@dataclass
class Batch:
    """What a source hands the warehouse: one record kind, rows in its schema, and provenance.

    ``locations`` has one entry per row (e.g. 'sacct.json:line 12') so a row that fails a rule
    can be traced; without it a row is located as '<source>:row <row_offset + i>', which is
    exact for a batch cut from a file at ``row_offset``. ``rejects`` carries records the source
    could not parse at all.
    """

    kind: RecordKind
    table: pa.Table
    source: str
    locations: list[str] | None = None
    rejects: list[Reject] = field(default_factory=list)
    row_offset: int = 0

    def location(self, i: int) -> str:
        if self.locations is not None:
            return self.locations[i]
        return f"{self.source}:row {self.row_offset + i}"

    def __post_init__(self) -> None:
        self.table = conform(self.kind, self.table, self.source)
        if self.locations is not None and len(self.locations) != self.table.num_rows:
            raise ValueError(f"{self.source}: {len(self.locations)} locations for {self.table.num_rows} rows")


def describe(kind: RecordKind) -> list[tuple[str, str, str, str]]:
    """(name, type, unit, doc) per field, for docs and `tierlens schema`."""
    rows = []
    for f in SPECS[kind].schema:
        meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        rows.append((f.name, str(f.type), meta.get("unit", ""), meta.get("doc", "")))
    return rows


# ---- the simulator's results ------------------------------------------------------------------
# Tables the simulator writes back into the warehouse and the marts read (dbt source `simulator`):
# records like the others, so the warehouse creates, migrates, exports and describes them from here
# without importing the simulator. simulator/store.py writes them.

SIM_CACHE_RUNS = "sim_cache_runs"
SIM_CACHE_HOURLY = "sim_cache_hourly"
SIM_CACHE_MRC = "sim_cache_mrc"
SIM_EFFICIENCY_RUNS = "sim_efficiency_runs"
SIM_EFFICIENCY_PARAMETERS = "sim_efficiency_parameters"
SIM_EFFICIENCY_PREDICTIONS = "sim_efficiency_predictions"
SIM_EFFICIENCY_TYPE_LOO = "sim_efficiency_type_loo"
SIM_HARDWARE_OPTIONS = "sim_hardware_options"

SIMULATOR_DDL = {
    SIM_CACHE_RUNS: f"""CREATE TABLE IF NOT EXISTS {SIM_CACHE_RUNS} (
        run_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, tierlens_version VARCHAR,
        policy VARCHAR, capacity_bytes BIGINT, params VARCHAR,
        trace_source VARCHAR, trace_fingerprint VARCHAR, first_hour TIMESTAMPTZ, hours INTEGER,
        requests BIGINT, objects BIGINT, hits BIGINT, hit_ratio DOUBLE,
        bytes_requested BIGINT, bytes_from_cache BIGINT, byte_hit_ratio DOUBLE, bytes_staged BIGINT,
        ssd_writes_per_day_bytes DOUBLE, ssd_config VARCHAR, ssd_devices INTEGER,
        ssd_endurance_bytes DOUBLE, days_to_endurance DOUBLE,
        nic_cap_bytes_per_s DOUBLE, nic_peak_utilisation DOUBLE, nic_hours_at_cap INTEGER,
        replay_seconds DOUBLE)""",
    SIM_CACHE_HOURLY: f"""CREATE TABLE IF NOT EXISTS {SIM_CACHE_HOURLY} (
        run_id VARCHAR, hour_start TIMESTAMPTZ, requests BIGINT, hits BIGINT,
        bytes_requested BIGINT, bytes_from_cache BIGINT, bytes_staged BIGINT,
        nic_utilisation DOUBLE, PRIMARY KEY (run_id, hour_start))""",
    SIM_CACHE_MRC: f"""CREATE TABLE IF NOT EXISTS {SIM_CACHE_MRC} (
        run_id VARCHAR, cache_bytes BIGINT, requests BIGINT, hits BIGINT, hit_ratio DOUBLE,
        bytes_requested BIGINT, bytes_from_cache BIGINT, byte_hit_ratio DOUBLE,
        PRIMARY KEY (run_id, cache_bytes))""",
    SIM_EFFICIENCY_RUNS: f"""CREATE TABLE IF NOT EXISTS {SIM_EFFICIENCY_RUNS} (
        run_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, tierlens_version VARCHAR,
        model_version VARCHAR, job_class VARCHAR, inputs VARCHAR, data_fingerprint VARCHAR,
        jobs BIGINT, fit_jobs BIGINT, rms_error DOUBLE, structural_error DOUBLE, run_seconds DOUBLE)""",
    SIM_EFFICIENCY_PARAMETERS: f"""CREATE TABLE IF NOT EXISTS {SIM_EFFICIENCY_PARAMETERS} (
        run_id VARCHAR, parameter VARCHAR, applies_to VARCHAR, value DOUBLE, std_error DOUBLE,
        unit VARCHAR, fitted BOOLEAN, true_value DOUBLE, true_low DOUBLE, true_high DOUBLE,
        evidence VARCHAR, PRIMARY KEY (run_id, parameter, applies_to))""",
    SIM_EFFICIENCY_PREDICTIONS: f"""CREATE TABLE IF NOT EXISTS {SIM_EFFICIENCY_PREDICTIONS} (
        run_id VARCHAR, model_version VARCHAR, job_class VARCHAR, scenario VARCHAR,
        storage_type VARCHAR, ab_arm VARCHAR, jobs_per_node DOUBLE, cache VARCHAR,
        cache_policy VARCHAR, cache_bytes BIGINT, jobs BIGINT, mean_concurrent_jobs DOUBLE,
        measured_efficiency DOUBLE, predicted_efficiency DOUBLE, efficiency_sd DOUBLE,
        efficiency_low DOUBLE, efficiency_high DOUBLE, loo_predicted_efficiency DOUBLE,
        predicted_mean_wall_seconds DOUBLE, jobs_per_node_hour DOUBLE, extrapolated BOOLEAN,
        evidence VARCHAR)""",
    SIM_EFFICIENCY_TYPE_LOO: f"""CREATE TABLE IF NOT EXISTS {SIM_EFFICIENCY_TYPE_LOO} (
        run_id VARCHAR, storage_type VARCHAR, evidence VARCHAR, jobs BIGINT, measured_efficiency DOUBLE,
        predicted_efficiency DOUBLE, error DOUBLE, PRIMARY KEY (run_id, storage_type, evidence))""",
    SIM_HARDWARE_OPTIONS: f"""CREATE TABLE IF NOT EXISTS {SIM_HARDWARE_OPTIONS} (
        run_id VARCHAR, config_name VARCHAR, storage_type VARCHAR, evidence VARCHAR, jobs_per_node DOUBLE,
        cache VARCHAR, currency VARCHAR, price_per_node DOUBLE, capacity_gb_per_node DOUBLE, price_per_gb DOUBLE,
        efficiency DOUBLE, efficiency_low DOUBLE, efficiency_high DOUBLE, node_throughput DOUBLE,
        node_throughput_low DOUBLE, node_throughput_high DOUBLE, price_per_throughput DOUBLE,
        price_per_throughput_low DOUBLE, price_per_throughput_high DOUBLE, price_per_core_hour DOUBLE,
        price_per_core_hour_low DOUBLE, price_per_core_hour_high DOUBLE, scratch_gb_written_per_node_day DOUBLE,
        ssd_lifetime_years DOUBLE, rank INTEGER, cores_per_job DOUBLE, node_config VARCHAR, node_cores INTEGER,
        node_price DOUBLE, whole_node_price DOUBLE, power_watts DOUBLE, power_price_per_node_hour DOUBLE,
        interval_driver VARCHAR, staged_gb_per_node_hour DOUBLE, write_warning VARCHAR,
        published_structural_error DOUBLE, structural_error_source VARCHAR, under_write_read_p99_ms DOUBLE,
        PRIMARY KEY (run_id, config_name, jobs_per_node, cache))""",
}

SIMULATOR_COMMENTS = {
    SIM_CACHE_RUNS: "One row per cache simulation (tierlens simulate cache): parameters, totals, SSD wear, NIC load.",
    SIM_CACHE_HOURLY: "Per run and UTC hour: requests, hits, bytes delivered from the simulated cache, bytes staged in.",
    SIM_CACHE_MRC: "LRU miss-ratio curve (tierlens simulate cache --mrc): hits per cache size, from one pass.",
    SIM_EFFICIENCY_RUNS: "One row per efficiency-model run (tierlens simulate efficiency): model version, inputs, fit quality.",
    SIM_EFFICIENCY_PARAMETERS: "Fitted service times per run (s/GB) with standard errors; true values where a synthetic site knows them.",
    SIM_EFFICIENCY_PREDICTIONS: "Predicted CPU efficiency per configuration: measured configurations back-filled beside their measurement, and the what-if grid.",
    SIM_EFFICIENCY_TYPE_LOO: "Device layer validation: each storage type left out entirely, predicted from its probe or datasheet.",
    SIM_HARDWARE_OPTIONS: "Buying guide (simulate efficiency --candidates): catalog configurations priced per delivered core-hour.",
}


#: Column descriptions of the simulator's tables the dbt project reads (source `simulator`);
#: ``python -m tierlens.warehouse.dbt_sources`` writes them into dbt/models/staging/_sources.yml.
SIMULATOR_COLUMN_DOCS: dict[str, dict[str, str]] = {
    SIM_EFFICIENCY_RUNS: {
        "run_id": "Hash of the model version, the run's inputs and the calibration data.",
        "created_at": "When the run was written, UTC.",
        "tierlens_version": "tierlens version that wrote the run.",
        "model_version": "Efficiency model version, e.g. tierlens-mva-1.",
        "job_class": "Job class the model was calibrated on and predicts ('all' for every class).",
        "inputs": "The run's inputs as JSON: grid, caches, period, validation settings.",
        "data_fingerprint": "Hash of the calibration jobs' profiles.",
        "jobs": "Jobs in the calibration set. Unit: jobs.",
        "fit_jobs": "Jobs the fit itself used (a seeded sample of the set). Unit: jobs.",
        "rms_error": "RMS of the per-job efficiency residuals of the fit. Unit: fraction.",
        "structural_error": "RMS leave-one-out error of configuration efficiency; null without validation. Unit: fraction.",
        "run_seconds": "Wall time of the run. Unit: seconds.",
    },
    SIM_EFFICIENCY_PREDICTIONS: {
        "run_id": "Run that made the prediction.",
        "model_version": "Efficiency model version.",
        "job_class": "Job class predicted.",
        "scenario": "'measured' (a configuration the site ran) or 'what-if'.",
        "storage_type": "Storage type under the jobs' scratch.",
        "ab_arm": "A/B arm of a measured configuration; null for what-if rows.",
        "jobs_per_node": "Jobs per node of a what-if row; null for measured rows (each job keeps its measured node sharing). Unit: jobs.",
        "cache": "'as measured', 'none', or POLICY:SIZE of the replayed cache.",
        "cache_policy": "Replayed cache policy; null for none or as measured.",
        "cache_bytes": "Replayed cache capacity. Unit: bytes.",
        "jobs": "Jobs the prediction is over. Unit: jobs.",
        "mean_concurrent_jobs": "Measured rows: mean jobs sharing a node. Unit: jobs.",
        "measured_efficiency": "Measured rows: the jobs' measured efficiency. Unit: fraction.",
        "predicted_efficiency": "Predicted efficiency, sum(cpu) / sum(wall x cores). Unit: fraction.",
        "efficiency_sd": "Standard uncertainty of the prediction (fit and structural error). Unit: fraction.",
        "efficiency_low": "Lower end of the 95 % interval. Unit: fraction.",
        "efficiency_high": "Upper end of the 95 % interval. Unit: fraction.",
        "loo_predicted_efficiency": "Measured rows: prediction when this configuration was left out of the fit. Unit: fraction.",
        "predicted_mean_wall_seconds": "Predicted mean wall time per job. Unit: seconds.",
        "jobs_per_node_hour": "What-if rows: throughput of a full node. Unit: jobs per node-hour.",
        "extrapolated": "The prediction uses a service time the measured jobs did not determine.",
        "evidence": "What the storage type's times rest on: jobs (fitted), probe or datasheet (derived by the device layer).",
    },
    SIM_HARDWARE_OPTIONS: {
        "run_id": "Run that priced the option (sim_efficiency_runs.run_id).",
        "config_name": "storage_catalog configuration priced.",
        "storage_type": "Storage type the configuration provides.",
        "evidence": "What the prediction rests on: measured (jobs on this storage type), probe (a device probe, possibly of a RAID member), or datasheet.",
        "jobs_per_node": "Jobs per node of the option. Unit: jobs.",
        "cache": "'none' or POLICY:SIZE of the replayed cache.",
        "currency": "Currency of the prices.",
        "price_per_node": "Storage price of one node: unit price x devices per node. Unit: currency.",
        "capacity_gb_per_node": "Usable scratch per node (RAID-aware). Unit: GB.",
        "price_per_gb": "price_per_node / capacity_gb_per_node. Unit: currency per GB.",
        "efficiency": "Predicted CPU efficiency. Unit: fraction.",
        "efficiency_low": "Lower end of its 95 % interval. Unit: fraction.",
        "efficiency_high": "Upper end of its 95 % interval. Unit: fraction.",
        "node_throughput": "CPU core-hours delivered per node-hour: jobs x cores x efficiency. Unit: core-hours per node-hour.",
        "node_throughput_low": "node_throughput at efficiency_low. Unit: core-hours per node-hour.",
        "node_throughput_high": "node_throughput at efficiency_high. Unit: core-hours per node-hour.",
        "price_per_throughput": "price_per_node / node_throughput (Glasgow Table 4's price/throughput). Unit: currency per (core-hour per node-hour).",
        "price_per_throughput_low": "price_per_node / node_throughput_high. Unit: currency per (core-hour per node-hour).",
        "price_per_throughput_high": "price_per_node / node_throughput_low. Unit: currency per (core-hour per node-hour).",
        "price_per_core_hour": "Whole-node price per delivered CPU core-hour: (node price over the service life + storage price over its life (the service life, or the SSD's rated life if shorter) + power) per node-hour / node_throughput. Rows written before schema version 9 priced the storage alone. Unit: currency per core-hour.",
        "price_per_core_hour_low": "price_per_core_hour at efficiency_high and, where endurance sets the storage life, the low end of the writes per core-hour. Unit: currency per core-hour.",
        "price_per_core_hour_high": "price_per_core_hour at efficiency_low and, where endurance sets the storage life, the high end of the writes per core-hour. Unit: currency per core-hour.",
        "scratch_gb_written_per_node_day": "Predicted scratch writes of a node per day. Unit: GB per day.",
        "ssd_lifetime_years": "Rated endurance of the node's data devices / predicted writes; null without an endurance. Unit: years.",
        "rank": "Rank by price_per_core_hour within the run, 1 = cheapest.",
        "cores_per_job": "Mean cores a job of the job mix is allocated. Unit: cores.",
        "node_config": "Node the option is priced in: the cheapest node row with jobs_per_node x cores_per_job cores (the largest when none has).",
        "node_cores": "Cores of that node. Unit: cores.",
        "node_price": "Price of the node without its scratch storage (CPU, memory, chassis). Unit: currency.",
        "whole_node_price": "node_price + price_per_node. Unit: currency.",
        "power_watts": "Mean draw of the busy node. Unit: W.",
        "power_price_per_node_hour": "power_watts x the site tariff. Unit: currency per node-hour.",
        "interval_driver": "What the price interval varies: efficiency, or efficiency and endurance (the storage's life is set by its rated writes, whose rate per core-hour has its own interval).",
        "staged_gb_per_node_hour": "What a full node of the site's jobs writes to scratch per hour (stage-in copies and the jobs' own writes) at jobs_per_node, at the pace the jobs were measured to run; null before schema version 11. Unit: GB per node-hour.",
        "published_structural_error": "Probe- and datasheet-derived rows: the leave-one-configuration-out RMS error of the device layer on Glasgow's published figures (simulator/seeds.py); null for measured rows and rows before schema version 11. Unit: fraction.",
        "structural_error_source": "Which leave-one-out error the row's interval carries, the larger of the two: 'generator' (this site's leave-one-type-out RMS, sim_efficiency_type_loo) or 'published figures'; null for measured rows.",
        "write_warning": "Why this device's writes cannot keep up with staged_gb_per_node_hour, with the figures and what they rest on (probe, budget-limited probe, datasheet): a steady-state write rate below the node's stage-in rate, or a fast-write region the node fills within the hour; null when neither holds or the configuration has no device figures.",
        "under_write_read_p99_ms": "Evidence beside the prediction: the p99 latency of 128 KiB random reads (one reader per job slot, through the page cache) the configuration's probe measured while a writer streamed at half its stage-in write bandwidth (probe job read_under_write_buffered_50); null without such a probe, for datasheet rows and for arrays composed from a member's probe. Unit: ms.",
    },
    SIM_EFFICIENCY_TYPE_LOO: {
        "run_id": "Run that validated the device layer.",
        "storage_type": "Storage type left out (its jobs and its fitted times).",
        "evidence": "Figures its times were derived from: probe or datasheet.",
        "jobs": "Jobs of the type predicted. Unit: jobs.",
        "measured_efficiency": "The type's measured efficiency. Unit: fraction.",
        "predicted_efficiency": "Its efficiency predicted from the derived times. Unit: fraction.",
        "error": "predicted - measured. Unit: fraction.",
    },
}
