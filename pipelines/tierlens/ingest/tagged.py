"""Recovering the jobs the plugin tagged that no sacct time window returned: one rule for the
command line and the ingest DAG.

slurmdbd can list a finished job in time-window queries later than the window that should have
held it, and an ingest keeps only what its window returned, so no later window brings such a job
back: the plugin's tags are what is left to find it by. The rule, run once the window is loaded:

    the jobs the plugin tagged in [window start - tagged_days, window start - 1 h) that still have
    no job row are asked for by id and loaded whole with their tags, if they have ended.

After the load, not before: the window's own jobs have their rows by then, so the long jobs that
end in the window (most jobs of an hourly interval started before it) are not asked for again.
The tags come from the spool batches the window read anyway (``watch``), so the spool is read
once a run; without a spool folder they are the warehouse's (loaded by `tierlens ingest
slurm-spool`). A job sacct returns still running is left to the window it ends in; a rerun asks
for none of the loaded ones again (loading is an upsert, and a loaded job has its row).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa

from ..pipeline import IngestSummary, ingest
from ..records import JOB_TAG, Batch, RecordKind
from ..sources.slurm.sacct import SacctRunner, WindowReport
from ..sources.slurm.source import asked_by_id
from ..sources.slurm.spool import whole_job_tags
from ..warehouse import Warehouse
from ..warehouse.landing import is_lock_error, land
from .intervals import ended_batches, utc

log = logging.getLogger("tierlens.ingest")

#: Jobs tagged in the hour before a window are left to the time windows: most of them are still
#: running, or end in that window and come with it.
TAGGED_MARGIN = timedelta(hours=1)
#: The most tagged-but-unaccounted jobs asked for in one run (500 per sacct call); the rest wait.
MAX_MISSING = 2000


@dataclass
class Recovered:
    """What the by-id pass did: how many jobs it asked for, how many came back ended, and what
    loaded (or how many files were landed while a transform held the warehouse)."""

    asked: int = 0
    came_back: int = 0
    summary: IngestSummary = field(default_factory=IngestSummary)
    landed: int | None = None
    #: sacct output cut short for some of the ids (asked for again next run)
    incomplete: list[str] = field(default_factory=list)

    def as_result(self) -> dict:
        """The DAG task's XCom fields."""
        if self.landed is not None:
            return {"tagged_asked_by_id": self.asked, "tagged_landed": self.landed}
        out: dict = {"tagged_asked_by_id": self.asked, "tagged_came_back": self.came_back}
        if self.asked:
            out["tagged_rows_loaded"] = dict(self.summary.rows_loaded)
        return out


@dataclass
class TaggedRecovery:
    """The rule for one window starting at ``start``: the spool folders, and the tags seen while
    the window's batches went by."""

    start: datetime
    tagged_days: float
    spool: list[Path]
    seen: list[pa.Table] = field(default_factory=list)

    @property
    def since(self) -> datetime:
        return utc(self.start) - timedelta(days=self.tagged_days)

    @property
    def until(self) -> datetime:
        return utc(self.start) - TAGGED_MARGIN

    @property
    def spool_since(self) -> datetime | None:
        """The oldest spool file the window reads: a job of the window was tagged from its start
        on, at most the longest wall time (tagged_days less a day) before. None: every file."""
        return self.since if self.tagged_days > 0 else None

    def watch(self, batches: Iterable[Batch]) -> Iterator[Batch]:
        """``batches`` unchanged, keeping the whole-job tags of [since, until) among them."""
        for b in batches:
            if self.tagged_days > 0 and b.kind is RecordKind.JOB_TAG and b.table.num_rows:
                self.seen.append(whole_job_tags(b.table, self.since, self.until))
            yield b

    def recover(
        self,
        warehouse: Path,
        runner: SacctRunner,
        clusters: str | None,
        land_when_busy: bool,
        warn: Callable[[str], object],
    ) -> Recovered | None:
        """Ask sacct by id for the tagged jobs without a job row and load those that ended (None:
        ``tagged_days`` 0 switched it off). ``land_when_busy``: while another process holds the
        warehouse, land them (the DAG); otherwise wait for it as any load does (the command line)."""
        if self.tagged_days <= 0:
            return None
        tags = (pa.concat_tables(self.seen) if self.seen else JOB_TAG.empty_table()) if self.spool else None
        missing = tagged_not_accounted(warehouse, "slurm", clusters, self.since, self.until, warn, tags)
        if not missing:
            return Recovered()
        ended: set[tuple] = set()
        incomplete: list[WindowReport] = []
        selected = ended_batches(asked_by_id(runner, missing, self.spool, incomplete), ended)
        try:
            summary = ingest(selected, warehouse, wait=0 if land_when_busy else None)
        except Exception as e:
            if not (land_when_busy and is_lock_error(e)):
                raise
            # a transform took the warehouse since the window's load: land them like the window's
            return Recovered(len(missing), landed=land(selected, warehouse))
        log.info(
            "slurm: asked sacct by id for %d jobs tagged in [%s, %s) that no time window returned; %d came back ended",
            len(missing),
            f"{self.since:%Y-%m-%d %H:%M}",
            f"{self.until:%Y-%m-%d %H:%M}",
            len(ended),
        )
        reports = [r.describe() for r in incomplete]
        for report in reports:
            # not fatal: the window is loaded, and the tags name these jobs again next run
            warn(f"slurm: incomplete sacct output for jobs asked by id, asked again next run: {report}")
        return Recovered(len(missing), len(ended), summary, incomplete=reports)


def tagged_not_accounted(
    warehouse: Path,
    batch_system: str,
    clusters: str | None,
    since: datetime,
    until: datetime,
    warn: Callable[[str], object] = print,
    tags: pa.Table | None = None,
) -> Sequence[str]:
    """Jobs the plugin tagged in [since, until) that have no job row yet, lowest ids first, at most
    ``MAX_MISSING``: the ones the batch system's time windows have not returned. The tags are
    the warehouse's, or ``tags`` (job_tag rows, e.g. from the plugin's spool). Nothing (and a
    warning) while a transform holds the warehouse or its schema is behind."""
    import duckdb

    from ..warehouse.migrations import SchemaError

    if not Path(warehouse).is_file() or since >= until:
        return []
    try:
        with Warehouse(warehouse, read_only=True) as w:
            ids = w.tagged_without_accounting(
                batch_system,
                since.astimezone(timezone.utc),
                until.astimezone(timezone.utc),
                [c.strip() for c in clusters.split(",") if c.strip()] if clusters else None,
                tags,
            )
    except (duckdb.Error, SchemaError) as e:
        warn(f"tagged jobs not checked against accounting this run ({warehouse}): {e}")
        return []
    if len(ids) > MAX_MISSING:
        warn(f"{len(ids)} tagged jobs have no accounting record: asking for {MAX_MISSING} this run")
    return ids[:MAX_MISSING]
