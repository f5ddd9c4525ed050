"""The Slurm source: sacct's jobs and steps with the SPANK plugin's spool tags, then the tagged jobs
no window returned (ingest/tagged.py).

Two ways to run it: ``load_interval`` for the ingest DAG (an explicit data interval, no watermark)
and ``load_since_watermark`` for `tierlens ingest slurm` (from the watermark the last run left).

Imports nothing at its top but dataclasses: the settings, hence every DAG file as Airflow parses
it, read ``SlurmOptions``' defaults (sources/registry.py), and pyarrow alone takes about a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path

    from ..pipeline import IngestSummary
    from ..sources.slurm.sacct import SacctRunner
    from .tagged import Recovered


@dataclass(frozen=True)
class SlurmOptions:
    """What the Slurm source reads; each field is the setting ``slurm_<field>`` of the DAGs."""

    sacct: str = field(default="sacct", metadata={"meaning": "sacct command"})
    clusters: str = field(default="", metadata={"meaning": "sacct --clusters"})
    spool: tuple[str, ...] = field(
        default=(), metadata={"meaning": "comma-separated spool folders of the SPANK plugin (job tags)"}
    )
    window_hours: float = field(
        default=6.0,
        metadata={"meaning": "longest time window per sacct call, so slurmdbd is never asked for too much"},
    )
    tagged_days: float = field(
        default=8.0,
        metadata={
            "meaning": "days before each interval whose spool-tagged jobs without a job row are asked for by id "
            "(the maximum wall time plus a day); 0: never"
        },
    )


def _spool(options: SlurmOptions) -> list[Path]:
    from pathlib import Path

    return [Path(d).expanduser() for d in options.spool]


def _runner(options: SlurmOptions, fmt: str = "auto") -> SacctRunner:
    from ..sources.slurm.sacct import SacctRunner

    return SacctRunner(sacct=options.sacct, fmt=fmt, clusters=options.clusters or None)


def load_interval(warehouse: Path, start: datetime, end: datetime, options: SlurmOptions) -> dict:
    """Jobs and steps that ended in [start, end) from sacct (explicit window, no watermark), plus
    the SPANK plugin's spool tags of those jobs; then the tagged jobs no window returned."""
    from pathlib import Path

    from ..sources.slurm.sacct import WindowReport
    from ..sources.slurm.source import batches
    from .interval import interval_text, load_interval as load
    from .intervals import utc
    from .tagged import TaggedRecovery, log

    retry: list[WindowReport] = []
    runner = _runner(options)
    spool = _spool(options)
    recovery = TaggedRecovery(start, options.tagged_days, spool)
    where = f" (clusters {options.clusters})" if options.clusters else ""
    result = load(
        "slurm",
        recovery.watch(
            batches(
                runner,
                utc(start).timestamp(),
                utc(end).timestamp(),
                window_hours=options.window_hours,
                spool=spool,
                retry=retry,
                spool_since=recovery.spool_since,
            )
        ),
        warehouse,
        start,
        end,
        lambda a, b: f"sacct{where} answered and reported no job or step that ended in {interval_text(a, b)}",
        # what was complete is loaded; failing the task makes the scheduler run this interval again
        unreadable=lambda: [r.describe() for r in retry],
        unit="sacct call(s)",
        then="; asked for again on the next run",  # the CLI's words: the failed task is run again
    )
    if "landed" in result:
        # the interval's own jobs are not in the warehouse yet: they would all look unaccounted
        return result
    recovered = recovery.recover(Path(warehouse), runner, options.clusters or None, True, log.warning)
    return result | (recovered.as_result() if recovered else {})


@dataclass
class WatermarkRun:
    """What `tierlens ingest slurm` loaded from the watermark on, for the command to print."""

    start: float
    end: float
    summary: IngestSummary
    #: windows whose sacct output was incomplete (asked for again on the next run)
    retry: list[str]
    recovered: Recovered | None
    fmt: str
    watermark_file: Path


def first_window(
    warehouse: Path, options: SlurmOptions, start: float | None, end: float, first_hours: float, overlap_minutes: float
) -> float | None:
    """Where a run starts: ``start`` when given, else the watermark less the overlap (records
    slurmdbd received late), else ``first_hours`` before ``end``; None when there is nothing to
    do (the watermark is at ``end`` and no job was left unfinished)."""
    from ..sources.slurm.source import watermark

    state = watermark(warehouse, options.clusters or None).read()
    if start is None:
        start = state["watermark"] - overlap_minutes * 60 if state.get("watermark") else end - first_hours * 3600
    return None if start >= end and not state.get("unfinished") else start


def load_since_watermark(
    warehouse: Path,
    options: SlurmOptions,
    start: float,
    end: float,
    moves_watermark: bool,
    fmt: str = "auto",
    warn: Callable[[str], object] = print,
) -> WatermarkRun:
    """Jobs and steps of [start, end) (epoch seconds) with the jobs still unfinished last time,
    joined with the spool's tags, advancing the watermark window by window once what came before
    it is loaded (``moves_watermark``: not for an explicit window); then the tagged jobs no
    window returned. SacctError when sacct cannot be run at all."""
    from datetime import datetime, timezone

    from ..pipeline import ingest
    from ..sources.slurm.sacct import WindowReport
    from ..sources.slurm.source import Checkpoints, batches, watermark
    from .tagged import TaggedRecovery

    mark = watermark(warehouse, options.clusters or None)
    state = mark.read()
    runner = _runner(options, fmt)
    spool = _spool(options)
    recovery = TaggedRecovery(datetime.fromtimestamp(start, tz=timezone.utc), options.tagged_days, spool)

    def save(at: float, unfinished: list[str]) -> None:
        if moves_watermark:
            # a window held for retry may start in the overlap before the old watermark
            at = max(at, state.get("watermark") or at)
            mark.write({"watermark": at, "unfinished": unfinished, "format": runner.fmt})

    marks = Checkpoints(save)
    retry: list[WindowReport] = []
    summary = ingest(
        marks.count(
            recovery.watch(
                batches(
                    runner,
                    start,
                    end,
                    window_hours=options.window_hours,
                    spool=spool,
                    unfinished=state.get("unfinished", []),
                    on_window=marks.on_window,
                    retry=retry,
                    spool_since=recovery.spool_since,
                )
            )
        ),
        warehouse,
        on_batch=marks.on_batch,
    )
    marks.flush()
    recovered = recovery.recover(warehouse, runner, options.clusters or None, False, warn)
    if recovered is not None:
        summary.merge(recovered.summary)
    return WatermarkRun(start, end, summary, [r.describe() for r in retry], recovered, runner.fmt, mark.path)
