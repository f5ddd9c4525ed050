"""The SPANK plugin's spool records to canonical ``job_tag`` rows.

The plugin writes one JSON line per job step and node: ``<spool>/<job>.<step>.<node>.json``
(plugins/slurm/README.md lists its fields). Each record becomes a tag of that step; the job as
a whole (step_id '') takes the tag of its batch step, else of its lowest-numbered step, else of
any step (e.g. extern), so sbatch and srun-only jobs are both tagged at job level. When a step
ran on several nodes, the tag of the first node (by name) is kept.

A record that cannot be used becomes a Reject located as 'FILE:line N' with the field at fault.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ...records import JOB_TAG, STORAGE_TYPES, Batch, RecordKind, Reject

#: a record larger than this is not a plugin record (the plugin bounds its own at 64 KiB).
MAX_RECORD_BYTES = 65536
BATCH_ROWS = 20_000
TAGGER = "slurm-spank"


def arm_for_job(job_id: str, arms: list[str]) -> str:
    """The arm the plugin's `arm=hash:A,B,...` gives a job: FNV-1a 32 of the job id, modulo."""
    h = 2166136261
    for b in str(job_id).encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return arms[h % len(arms)]


_NOT_A_SPOOL_FILE = "the SPANK plugin writes a few hundred bytes a step; keep other files out of the spool folders"


def _fix(field: str) -> str:
    """What to change for a spool record whose ``field`` is wrong: the SPANK plugin wrote it."""
    if field == "storage_type":
        return f"the plugin writes one of {', '.join(STORAGE_TYPES)}: install the plugin of this tierlens"
    if field == "record":
        return "the plugin writes one JSON object a line: keep other files out of the spool folders"
    return (
        f"the SPANK plugin writes {field} in every record: install the plugin of this tierlens "
        "(make -C plugins/slurm install), and fix or delete a record written by hand"
    )


class _Bad(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


def _str(rec: dict, key: str, required: bool = False) -> str | None:
    v = rec.get(key)
    if v is None or v == "":
        if required:
            raise _Bad(key, "missing")
        return None
    if not isinstance(v, str):
        raise _Bad(key, f"not a string: {v!r}")
    return v


def _time(rec: dict, key: str) -> datetime | None:
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise _Bad(key, f"not epoch seconds: {v!r}")
    return datetime.fromtimestamp(v, tz=timezone.utc)


def parse_record(rec: object) -> dict:
    """A job_tag row from one decoded spool record; raises _Bad naming the field."""
    if not isinstance(rec, dict):
        raise _Bad("record", "not a JSON object")
    st = _str(rec, "storage_type", required=True)
    if st not in STORAGE_TYPES:
        raise _Bad("storage_type", f"not a known storage type: {st!r}")
    models = rec.get("device_models") or []
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise _Bad("device_models", "not a list of strings")
    job_id = _str(rec, "job_id", required=True)
    if not job_id.isdigit():
        raise _Bad("job_id", f"not a Slurm job id: {job_id!r}")
    return {
        "batch_system": "slurm",
        "cluster": _str(rec, "cluster", required=True),
        "job_id": job_id,
        "step_id": _str(rec, "step_id", required=True),
        "node": _str(rec, "node", required=True),
        "storage_type": st,
        "device_models": models,
        "scratch_path": _str(rec, "scratch_path"),
        "ab_arm": _str(rec, "ab_arm"),
        "cache_route": _str(rec, "cache_route"),
        "tagged_at": _time(rec, "start_time") or _time(rec, "end_time"),
        "tagger": _str(rec, "tagger") or TAGGER,
    }


def read_spool(files: Iterable[Path], source: str = "spool") -> tuple[list[dict], list[str], list[Reject]]:
    """Rows (one per record line), their locations, and rejects, from spool files."""
    rows: list[dict] = []
    locs: list[str] = []
    rejects: list[Reject] = []
    for path in files:
        try:
            if path.is_symlink() or not path.is_file():
                raise OSError("not a regular file")
            size = path.stat().st_size
            if size > 16 * MAX_RECORD_BYTES:
                rejects.append(
                    Reject(
                        RecordKind.JOB_TAG,
                        source,
                        f"{path}:offset 0",
                        "record",
                        f"file of {size} bytes is too large for spool records: {_NOT_A_SPOOL_FILE}",
                        "",
                    )
                )
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            reason = f"{e}: give the ingest read access to the spool files (regular files, not links)"
            rejects.append(Reject(RecordKind.JOB_TAG, source, f"{path}:line 1", "file", reason, ""))
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}:line {n}"
            if len(line) > MAX_RECORD_BYTES:
                rejects.append(
                    Reject(
                        RecordKind.JOB_TAG,
                        source,
                        where,
                        "record",
                        f"longer than {MAX_RECORD_BYTES} bytes: {_NOT_A_SPOOL_FILE}",
                        line[:2000],
                    )
                )
                continue
            try:
                rows.append(parse_record(json.loads(line)))
                locs.append(where)
            except json.JSONDecodeError as e:
                rejects.append(
                    Reject(
                        RecordKind.JOB_TAG,
                        source,
                        f"{where}",
                        "record",
                        f"not JSON: {e.msg} at column {e.colno}: the plugin writes one JSON object a line; "
                        "a cut line comes from a full disk or a copy made while it wrote: fix or delete the file",
                        line[:2000],
                    )
                )
            except _Bad as e:
                reason = f"{e}: {_fix(e.field)}"
                rejects.append(Reject(RecordKind.JOB_TAG, source, where, e.field, reason, line[:2000]))
    return rows, locs, rejects


def _step_rank(step: str) -> tuple[int, int]:
    if step == "batch":
        return (0, 0)
    if step.isdigit():
        return (1, int(step))
    return (2, 0)


def with_job_level(rows: list[dict], locs: list[str]) -> tuple[list[dict], list[str]]:
    """One tag per (cluster, job, step) (first node by name) plus the whole-job tag (step '')."""
    best: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        key = (r["cluster"], r["job_id"], r["step_id"])
        if key not in best or r["node"] < rows[best[key]]["node"]:
            best[key] = i
    job_best: dict[tuple, int] = {}
    for (cluster, job, step), i in best.items():
        if step == "":
            continue
        k = (cluster, job)
        if k not in job_best or _step_rank(step) < _step_rank(rows[job_best[k]]["step_id"]):
            job_best[k] = i
    out_rows, out_locs = [], []
    for _key, i in sorted(best.items()):
        out_rows.append(rows[i])
        out_locs.append(locs[i])
    for (cluster, job), i in sorted(job_best.items()):
        if (cluster, job, "") in best:
            continue
        out_rows.append(dict(rows[i], step_id=""))
        out_locs.append(locs[i])
    return out_rows, out_locs


#: How far a spool file's modification time may lie before the tag it holds: the nodes' clocks
#: and a copy that did not keep modification times (rsync -a keeps them) are allowed this much.
CLOCK_MARGIN = timedelta(days=1)


def spool_files(
    dirs: Iterable[Path], jobs: Collection[str] | None = None, modified_since: datetime | None = None
) -> list[Path]:
    """The record files of ``dirs``; with ``jobs``, only those the plugin named after one of those
    job ids (``<job>.<step>.<node>.json``), so that a few jobs' tags are read without the rest;
    with ``modified_since``, only files written from CLOCK_MARGIN before it on.

    A spool collected from every node holds a file per job step the site ever ran (tens of
    thousands a day at a large site): an hourly ingest reads the days its jobs can have been
    tagged in, judged by the file's modification time, not every file of history."""
    oldest = (modified_since - CLOCK_MARGIN).timestamp() if modified_since is not None else None
    files: list[Path] = []
    for d in dirs:
        if not Path(d).is_dir():
            continue
        with os.scandir(d) as entries:
            names = sorted(
                e.name
                for e in entries
                if e.name.endswith(".json")
                and not e.name.startswith(".")
                and (jobs is None or e.name.partition(".")[0] in jobs)
                and (oldest is None or e.stat().st_mtime >= oldest)
            )
        files.extend(Path(d) / name for name in names)
    return files


def spool_batches(
    dirs: Iterable[Path],
    batch_rows: int = BATCH_ROWS,
    jobs: Collection[str] | None = None,
    modified_since: datetime | None = None,
) -> Iterator[Batch]:
    """JOB_TAG batches of at most `batch_rows` rows from spool directories (with ``jobs``: of
    the files of those job ids only; with ``modified_since``: of the files written since, as
    spool_files).

    Files are read in chunks of files; a job whose steps fall in different chunks still gets
    one whole-job tag per chunk, and the upsert by natural key keeps one row.
    """
    files = spool_files(dirs, jobs, modified_since)
    source = "slurm-spool"
    for k in range(0, max(len(files), 1), batch_rows):
        chunk = files[k : k + batch_rows]
        rows, locs, rejects = read_spool(chunk, source)
        rows, locs = with_job_level(rows, locs)
        if not rows and not rejects:
            continue
        # batch_rows files give at most 2 x batch_rows rows (a step tag and a job tag each)
        table = pa.Table.from_pylist(rows, schema=JOB_TAG)
        yield Batch(RecordKind.JOB_TAG, table, source, locations=locs, rejects=rejects)


def whole_job_tags(table: pa.Table, since: datetime, until: datetime) -> pa.Table:
    """The whole-job tags (step '') of ``table`` (job_tag rows) tagged in [since, until): what the
    spool says ran, to be checked against what accounting delivered; one row per job, so a week
    of spool fits in little memory."""
    at = table.column("tagged_at")
    in_range = pc.and_(pc.greater_equal(at, pa.scalar(since, at.type)), pc.less(at, pa.scalar(until, at.type)))
    return table.filter(pc.fill_null(pc.and_(pc.equal(table.column("step_id"), ""), in_range), False))
