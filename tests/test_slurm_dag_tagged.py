"""The ingest DAG's Slurm task asks sacct by id for the jobs the SPANK plugin tagged that no time
window returned (slurmdbd can list a finished job in window queries after its interval ran), with
a stand-in sacct that knows a few jobs, lists only some of them in time windows, and records how it
was called. The CLI's equivalent is in test_slurm_sacct.py; the real cluster's in
test_slurm_cluster.py."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from support.rows import wh_rows
from support.sacct import (
    T0,
    fake_sacct as fake_sacct,  # noqa: F401 - the stand-in's set-up, answers replaced here
    new_layout_job,
    sacct_doc,
    spool_record,
)
from tierlens.ingest.slurm import SlurmOptions, load_interval
from tierlens.records import JOB, JOB_TAG

DAY = 86400
#: the interval the DAG runs, five days after the jobs started (T0)
START = T0 + 5 * DAY

# Answers like sacct: --jobs by id from every job it knows; a time window only with the jobs
# slurmdbd lists in windows (FAKE_SACCT_DB: {"jobs": {id: job}, "in_windows": [id, ...]}) that ended
# in it or are still running.
FAKE_SACCT = r"""#!PYTHON
import json, os, sys
from datetime import datetime
args = sys.argv[1:]
with open(os.environ["FAKE_SACCT_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
db = json.load(open(os.environ["FAKE_SACCT_DB"]))
if "--jobs" in args:
    wanted = args[args.index("--jobs") + 1].split(",")
    jobs = [db["jobs"][j] for j in wanted if j in db["jobs"]]
else:
    t0 = datetime.fromisoformat(args[args.index("--starttime") + 1]).timestamp()
    t1 = datetime.fromisoformat(args[args.index("--endtime") + 1]).timestamp()
    jobs = [
        db["jobs"][j] for j in db["in_windows"]
        if db["jobs"][j]["time"]["end"] == 0 or t0 <= db["jobs"][j]["time"]["end"] <= t1
    ]
sys.stdout.write(json.dumps({"meta": {"plugin": {"type": "openapi/slurmdbd", "data_parser": "v0.0.40"}},
                             "errors": [], "warnings": [], "jobs": jobs}))
"""


@pytest.fixture
def sacct(tmp_path, monkeypatch, fake_sacct):
    exe, calls = fake_sacct
    exe.write_text(FAKE_SACCT.replace("PYTHON", sys.executable))
    db = tmp_path / "slurmdbd.json"
    monkeypatch.setenv("FAKE_SACCT_DB", str(db))

    def know(jobs: list[dict], in_windows: list[int]) -> None:
        json.loads(sacct_doc(*jobs))  # the stand-in answers the layout sacct_doc writes
        db.write_text(
            json.dumps({"jobs": {str(j["job_id"]): j for j in jobs}, "in_windows": list(map(str, in_windows))})
        )

    def asked_by_id() -> list[str]:
        made = calls()
        assert all("--jobs" in c or "--starttime" in c for c in made)
        return [c[c.index("--jobs") + 1] for c in made if "--jobs" in c]

    return exe, know, asked_by_id


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=timezone.utc)


def _tag(spool: Path, job: int, step: str, tagged_at: float) -> None:
    (spool / f"{job}.{step}.wn01.json").write_text(
        spool_record(str(job), step, start_time=tagged_at, end_time=tagged_at)
    )


def _state(wh: Path) -> tuple:
    """What the warehouse holds of jobs and tags: counts and sums, and the batches loaded (but the
    interval's own record, which a rerun replaces with its time)."""
    return (
        wh_rows(wh, "SELECT count(*), sum(cpu_user_seconds), sum(wall_seconds), sum(allocated_cores) FROM raw_job"),
        wh_rows(wh, "SELECT count(*), count(DISTINCT job_id) FROM raw_job_tag"),
        wh_rows(wh, "SELECT count(*) FROM raw_batches WHERE record_kind <> 'source_interval'"),
        wh_rows(wh, "SELECT job_id, step_id, end_time FROM raw_job ORDER BY ALL"),
    )


def test_jobs_tagged_but_missed_by_every_window_are_asked_for_by_id(tmp_path, sacct):
    exe, know, asked_by_id = sacct
    spool = tmp_path / "spool"
    spool.mkdir()
    missed = new_layout_job(95, end=START - 2 * DAY)  # ended before the interval; no window lists it
    loaded = new_layout_job(96, end=START - DAY + 60)  # loaded by its own interval's run
    in_interval = new_layout_job(97, end=START + 600)  # a long job that ends in the interval
    running = new_layout_job(98, end=0, state="RUNNING")
    know([missed, loaded, in_interval, running], in_windows=[96, 97, 98])
    for job, tagged in [(95, T0 + 60), (96, T0 + 60), (97, START - 3 * 3600), (98, T0 + 60), (100, T0 + 60)]:
        _tag(spool, job, "batch", tagged)  # 100: a job sacct does not know
    _tag(spool, 95, "0", T0 + 70)
    _tag(spool, 93, "batch", START - 9 * DAY)  # tagged before tagged_days
    _tag(spool, 99, "batch", START - 1800)  # in the hour before the interval: left to the windows
    wh = tmp_path / "wh.duckdb"

    def run(start: float, tagged_days: float = 8.0) -> dict:
        options = SlurmOptions(sacct=str(exe), spool=(str(spool),), tagged_days=tagged_days)
        return load_interval(wh, _at(start), _at(start + 3600), options)

    first = run(START - DAY, tagged_days=0)  # switched off: only the interval's job
    assert asked_by_id() == [] and "tagged_asked_by_id" not in first
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job") == [("96",)]

    result = run(START)
    # 96 has its row, 97 came with the interval, 93 and 99 lie outside [START - 8 d, START - 1 h)
    assert asked_by_id() == ["95,98,100"]
    assert result["tagged_asked_by_id"] == 3 and result["tagged_came_back"] == 1
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job ORDER BY 1") == [("95",), ("96",), ("97",)]
    # the missed job whole, as sacct describes it: its job row and its one step, uncut
    step = missed["steps"][0]
    user = step["time"]["user"]["seconds"] + step["time"]["user"]["microseconds"] / 1e6
    assert wh_rows(
        wh,
        "SELECT step_id, cpu_user_seconds, wall_seconds, allocated_cores, epoch(end_time) FROM raw_job "
        "WHERE job_id = '95' ORDER BY step_id",
    ) == [
        ("", user, missed["time"]["elapsed"], 8, START - 2 * DAY),
        ("batch", user, step["time"]["elapsed"], 8, START - 2 * DAY),
    ]
    # and its tags: one per step the spool has, and the whole job's
    assert wh_rows(wh, "SELECT step_id, storage_type FROM raw_job_tag WHERE job_id = '95' ORDER BY 1") == [
        ("", "raid0"),
        ("0", "raid0"),
        ("batch", "raid0"),
    ]
    assert wh_rows(wh, "SELECT count(*) FROM raw_job_tag WHERE job_id IN ('98', '100', '93', '99')") == [(0,)]
    # the interval's own record counts only the interval's rows (job 97: job, step, tags)
    assert wh_rows(wh, f"SELECT records FROM raw_source_interval WHERE interval_start = to_timestamp({START})") == [
        (2 + 2,)
    ]

    before = _state(wh)
    again = run(START)
    assert asked_by_id() == ["98,100"]  # the running one and the unknown one, until they age out
    assert again["tagged_came_back"] == 0
    assert _state(wh) == before
    assert wh_rows(wh, f"SELECT records FROM raw_source_interval WHERE interval_start = to_timestamp({START})") == [
        (4,)
    ]


def test_the_same_rows_as_the_window_of_the_interval_the_job_ended_in(tmp_path, sacct):
    """A job found by id is loaded with the rows (and tags) the window of its own interval gives."""
    exe, know, asked_by_id = sacct
    spool = tmp_path / "spool"
    spool.mkdir()
    job = new_layout_job(95, end=START - 2 * DAY)
    _tag(spool, 95, "batch", T0 + 60)
    other = new_layout_job(96, end=START - DAY)  # gives the warehouse its cluster
    rows = f"SELECT {', '.join(JOB.names)} FROM raw_job WHERE job_id = '95' ORDER BY step_id"
    tags = f"SELECT {', '.join(JOB_TAG.names)} FROM raw_job_tag WHERE job_id = '95' ORDER BY step_id"

    def ingest(wh: Path, start: float, in_windows: list[int], tagged_days: float = 8.0) -> dict:
        know([job, other], in_windows)
        options = SlurmOptions(sacct=str(exe), spool=(str(spool),), tagged_days=tagged_days)
        return load_interval(wh, _at(start), _at(start + 3600), options)

    windows, by_id = tmp_path / "windows.duckdb", tmp_path / "by-id.duckdb"
    hour = (START - 2 * DAY) // 3600 * 3600
    ingest(windows, hour, [95])
    ingest(by_id, START - DAY - 600, [96], tagged_days=0)
    asked_by_id()
    assert ingest(by_id, START, [96])["tagged_came_back"] == 1 and asked_by_id() == ["95"]
    assert wh_rows(by_id, rows) == wh_rows(windows, rows) and len(wh_rows(windows, rows)) == 2
    assert wh_rows(by_id, tags) == wh_rows(windows, tags) and len(wh_rows(windows, tags)) == 2
