"""sacct and spool records to canonical rows, without a cluster: the 22.05 JSON layout (a real
capture), the later wrapped-number layout, --parsable2, rejects with their locations, running
jobs loaded again when they finish, and the watermark of `tierlens ingest slurm` (with a stand-in
sacct that records how it was called). The fast path (block scan + typed decode) is compared with
the generic one row for row on every document here and on a real sacct's output (the session's
cluster, slurm_fixtures.py); the rest of the real cluster is in test_slurm_cluster.py."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from support.rows import wh_rows
from support.sacct import (
    INFINITE,
    INFINITE64,
    NO_VAL,
    NO_VAL64,
    T0,
    doc_2411,
    fake_sacct as fake_sacct,  # noqa: F401 - the stand-in sacct, a fixture
    job_2411,
    new_layout_job,
    sacct_doc,
    spool_record,
    wrapped,
)
from tierlens.cli import app
from tierlens.pipeline import ingest
from tierlens.records import JOB, job_identity
from tierlens.sources.slurm.parsable2 import _cpu_time
from tierlens.sources.slurm.sacct import (
    PARSABLE_FIELDS,
    first_node,
    parse_json_document,
    parse_parsable2,
    to_batches,
)
from tierlens.sources.slurm.spool import arm_for_job, spool_batches

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "plugins" / "slurm" / "tests" / "data" / "sacct-22.05-dbv0.0.38.json"


def _by_key(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["job_id"], r["step_id"]): r for r in rows}


# ---- --json ---------------------------------------------------------------------------------
def test_json_2205_capture():
    text = CAPTURE.read_text()
    doc = json.loads(text)
    assert doc["meta"]["plugin"]["type"] == "openapi/dbv0.0.38"
    rows, locs, rejects = parse_json_document(text, "cap")
    assert rejects == []
    got = _by_key(rows)
    assert set(got) == {("1", ""), ("1", "0"), ("2", ""), ("2", "batch"), ("2", "0")}
    for job in doc["jobs"]:
        jid = str(job["job_id"])
        steps = job["steps"]
        user = sum(s["time"]["user"]["seconds"] + s["time"]["user"]["microseconds"] / 1e6 for s in steps)
        system = sum(s["time"]["system"]["seconds"] + s["time"]["system"]["microseconds"] / 1e6 for s in steps)
        whole = got[(jid, "")]
        assert whole["cpu_user_seconds"] == pytest.approx(user)
        assert whole["cpu_system_seconds"] == pytest.approx(system)
        assert whole["cpu_user_seconds"] > 0
        assert whole["wall_seconds"] == job["time"]["elapsed"]
        assert whole["allocated_cores"] == 1
        assert whole["start_time"] == datetime.fromtimestamp(job["time"]["start"], tz=timezone.utc)
        assert whole["job_identity"] == job_identity("slurm", "tltest", jid)
        assert whole["state"] == "COMPLETED" and whole["exit_code"] == 0 and whole["node"] == "vm"
    # fs/disk of TRESUsageInTot / OutTot: the step's requested.total / consumed.total
    step = doc["jobs"][0]["steps"][0]
    disk_in = next(t["count"] for t in step["tres"]["requested"]["total"] if t["name"] == "disk")
    disk_out = next(t["count"] for t in step["tres"]["consumed"]["total"] if t["name"] == "disk")
    assert got[("1", "0")]["bytes_read"] == disk_in > 20_000_000  # the job wrote and read 20 MB
    assert got[("1", "0")]["bytes_written"] == disk_out > 20_000_000
    assert got[("1", "")]["bytes_read"] == disk_in
    assert locs[0].startswith("cap:offset ") and text[int(locs[0].split()[-1])] == "{"


def test_json_later_layout_and_arrays():
    rows, _, rejects = parse_json_document(sacct_doc(new_layout_job(43)), "new")
    assert rejects == []
    got = _by_key(rows)
    whole, batch = got[("43", "")], got[("43", "batch")]
    assert whole["allocated_cores"] == 8 and whole["node"] == "wn07" and whole["node_list"] == "wn[07-08]"
    assert whole["cpu_user_seconds"] == pytest.approx(500.25) and whole["cpu_system_seconds"] == 20
    assert whole["state"] == "COMPLETED" and whole["exit_code"] == 0
    assert batch["bytes_read"] == 1000 and batch["bytes_written"] == 300 and batch["wall_seconds"] == 100
    # an array task is its own job (raw id), as in the identity the plugin gave it
    assert whole["job_identity"] == "slurm.c1.43"


def test_pending_jobs_are_left_for_later_and_bad_jobs_rejected():
    pending = new_layout_job(50, end=0, state="PENDING")
    pending["time"]["start"] = 0
    pending["steps"] = []
    bad_time = new_layout_job(51)
    bad_time["steps"][0]["time"]["user"] = {"seconds": "lots", "microseconds": 0}
    no_id = new_layout_job(52)
    del no_id["job_id"]
    text = sacct_doc(pending, bad_time, no_id, new_layout_job(53))
    rows, locs, rejects = parse_json_document(text, "w")
    assert {r["job_id"] for r in rows} == {"53"}
    assert [r.field for r in rejects] == ["steps[0].cpu_user_seconds", "job_id"]
    for r in rejects:
        off = int(r.location.rsplit(" ", 1)[1])
        assert text[off] == "{" and r.source == "w"
        assert json.loads(r.raw).get("job_id") in (51, None)  # the reject's record is the bad job
    # a truncated document: the complete jobs are kept, the rest is one reject
    rows, _, rejects = parse_json_document(text[: text.index('"job_id": 53') + 5], "t")
    assert {r["job_id"] for r in rows} == set() and rejects[-1].field == "jobs"


def test_running_job_is_loaded_again_when_it_finishes_not_duplicated(tmp_path):
    wh = tmp_path / "w.duckdb"
    for end, state in ((0, "RUNNING"), (T0 + 100, "COMPLETED")):
        job = new_layout_job(60, end=end, state=state)
        rows, locs, rejects = parse_json_document(sacct_doc(job), f"s{state}")
        ingest(to_batches(rows, locs, rejects, f"s{state}"), wh)
    got = wh_rows(wh, "SELECT step_id, state, end_time IS NULL FROM raw_job WHERE job_id = '60' ORDER BY step_id")
    assert got == [("", "COMPLETED", False), ("batch", "COMPLETED", False)]


# ---- --parsable2 ----------------------------------------------------------------------------
def _p2(**kw: str) -> str:
    base = dict(
        JobIDRaw="70",
        JobID="70",
        Cluster="c1",
        User="bob",
        Account="cms",
        Partition="short",
        NodeList="wn01",
        Submit=str(T0 - 5),
        Start=str(T0),
        End=str(T0 + 60),
        AllocCPUS="4",
        UserCPU="01:02.500",
        SystemCPU="00:01.250",
        ElapsedRaw="60",
        State="COMPLETED",
        ExitCode="0:0",
        TRESUsageInTot="",
        TRESUsageOutTot="",
        ReqCPUS="4",
    )
    base.update(kw)
    return "|".join(base[f] for f in PARSABLE_FIELDS)


def test_parsable2_rows_and_rejects():
    lines = [
        _p2(),
        _p2(
            JobIDRaw="70.batch",
            JobID="70.batch",
            User="",
            Account="",
            Partition="",
            TRESUsageInTot="cpu=00:01:00,fs/disk=5000",
            TRESUsageOutTot="fs/disk=700",
        ),
        _p2(JobIDRaw="71", State="CANCELLED by 0", UserCPU="1-02:00:00"),
        "72|72|c1|too|few",
        _p2(JobIDRaw="73", UserCPU="soon"),
        _p2(JobIDRaw="74", Start="Unknown", End="Unknown"),
    ]
    rows, locs, rejects = parse_parsable2(lines, "p2")
    got = _by_key(rows)
    assert set(got) == {("70", ""), ("70", "batch"), ("71", "")}
    j = got[("70", "")]
    assert j["cpu_user_seconds"] == 62.5 and j["cpu_system_seconds"] == 1.25 and j["allocated_cores"] == 4
    assert j["bytes_read"] == 5000 and j["bytes_written"] == 700  # summed from its steps
    assert got[("70", "batch")]["user_name"] == "bob"  # steps inherit the job's user
    assert got[("71", "")]["state"] == "CANCELLED" and got[("71", "")]["cpu_user_seconds"] == 93600
    assert [(r.location, r.field) for r in rejects] == [("p2:line 4", "line"), ("p2:line 5", "cpu_user_seconds")]


def test_cpu_time_and_hostlists():
    assert _cpu_time("00:00.001") == 0.001
    assert _cpu_time("01:02:03") == 3723
    assert _cpu_time("2-00:00:01") == 172801
    assert first_node("wn[03-05,09],gpu1") == "wn03"
    assert first_node("node7") == "node7"
    assert first_node("None assigned") is None


# ---- spool ----------------------------------------------------------------------------------
def test_spool_records_to_job_tags_with_rejects(tmp_path):
    sp = tmp_path / "spool"
    sp.mkdir()
    (sp / "80.batch.wn01.json").write_text(spool_record("80", "batch"))
    (sp / "80.0.wn02.json").write_text(spool_record("80", "0", "wn02", storage_type="ssd"))
    (sp / "80.0.wn01.json").write_text(spool_record("80", "0", "wn01"))
    (sp / "81.0.wn01.json").write_text(spool_record("81", "0", ab_arm=None))
    (sp / "81.extern.wn01.json").write_text(spool_record("81", "extern"))
    (sp / "82.0.wn01.json").write_text('{"job_id": "82", broken\n')
    (sp / "83.0.wn01.json").write_text(spool_record("83", "0", storage_type="floppy"))
    (sp / "84.0.wn01.json").write_text(spool_record("84", "0", device_models="ST1"))
    (sp / ".tmp.123.85.0.wn01.json").write_text("half")  # the plugin's temporary: skipped
    (sp / "86.0.wn01.json").symlink_to(sp / "80.0.wn01.json")  # not a plugin record: rejected
    batches = list(spool_batches([sp]))
    assert len(batches) == 1
    b = batches[0]
    tags = {(r["job_id"], r["step_id"]): r for r in b.table.to_pylist()}
    assert set(tags) == {("80", "batch"), ("80", "0"), ("80", ""), ("81", "0"), ("81", "extern"), ("81", "")}
    assert tags[("80", "")]["node"] == "wn01" and tags[("80", "0")]["node"] == "wn01"  # first node
    assert tags[("81", "")]["ab_arm"] is None  # from step 0, preferred to extern
    assert tags[("80", "")]["device_models"] == ["ST1", "ST2"]
    rej = sorted((Path(r.location.split(":")[0]).name, r.location.split(":")[1], r.field) for r in b.rejects)
    assert rej == [
        ("82.0.wn01.json", "line 1", "record"),
        ("83.0.wn01.json", "line 1", "storage_type"),
        ("84.0.wn01.json", "line 1", "device_models"),
        ("86.0.wn01.json", "line 1", "file"),
    ]
    wh = tmp_path / "w.duckdb"
    summary = ingest(batches, wh)
    assert summary.rows_loaded["job_tag"] == 6
    assert wh_rows(wh, "SELECT count(*) FROM raw_rejects WHERE record_kind = 'job_tag'") == [(4,)]
    # the same spool again changes nothing
    ingest(spool_batches([sp]), wh)
    assert wh_rows(wh, "SELECT count(*) FROM raw_job_tag") == [(6,)]


def test_arm_for_job_splits_jobs():
    arms = [arm_for_job(str(i), ["A", "B"]) for i in range(1000)]
    assert 400 < arms.count("A") < 600


# ---- the command: windows, watermark, unfinished jobs, fallback -------------------------------
def test_watermark_windows_and_unfinished_jobs(tmp_path, fake_sacct):
    exe, calls = fake_sacct
    wh = tmp_path / "wh.duckdb"
    (tmp_path / "out.json").write_text(sacct_doc(new_layout_job(90, end=0, state="RUNNING"), new_layout_job(91)))
    base = ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe)]
    r = CliRunner().invoke(app, [*base, "--first-hours", "3", "--window-hours", "1"])
    assert r.exit_code == 0, r.output
    first = calls()
    assert len(first) == 3 and all("--json" in c and "--starttime" in c for c in first)  # 3 windows of 1 h
    state = json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]
    assert state["unfinished"] == ["90"] and state["format"] == "json"
    wm = state["watermark"]
    assert wh_rows(wh, "SELECT state FROM raw_job WHERE job_id = '90' AND step_id = ''") == [("RUNNING",)]

    # next run: job 90 is asked for by id, and the window starts at the watermark
    (tmp_path / "out.json").write_text(sacct_doc(new_layout_job(90)))
    r = CliRunner().invoke(app, [*base])
    assert r.exit_code == 0, r.output
    second = calls()
    assert "--jobs" in second[0] and second[0][second[0].index("--jobs") + 1] == "90"
    start_arg = second[1][second[1].index("--starttime") + 1]
    assert abs(datetime.fromisoformat(start_arg).timestamp() - (wm - 600)) < 1  # 10 min overlap
    assert json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]["unfinished"] == []
    assert wh_rows(wh, "SELECT count(*), min(state) FROM raw_job WHERE job_id = '90'") == [(2, "COMPLETED")]


def test_tagged_jobs_no_window_returned_are_asked_for_by_id(tmp_path, fake_sacct):
    """slurmdbd can list a finished job in time-window queries later than the overlap: once the
    window is loaded, the jobs the spool tagged in --tagged-days before it (up to an hour before
    it) with no job row are asked for by id, for the clusters the warehouse holds jobs of, in the
    same run (the rule the ingest DAG follows, ingest/tagged.py), and an id sacct does not know
    is asked for again until it ages out."""
    exe, calls = fake_sacct
    now = int(time.time())
    sp = tmp_path / "spool"
    sp.mkdir()
    recent = {"start_time": now - 7200, "end_time": now - 7100}
    (sp / "95.0.wn01.json").write_text(spool_record("95", "0", **recent))  # the job windows missed
    (sp / "96.0.wn01.json").write_text(spool_record("96", "0", **recent))  # returned by its window
    (sp / "98.0.wn01.json").write_text(spool_record("98", "0", **recent))  # sacct never knows it
    (sp / "94.0.wn01.json").write_text(spool_record("94", "0", start_time=now - 20 * 86400))  # too old
    (sp / "97.0.wn01.json").write_text(spool_record("97", "0", cluster="c2", **recent))  # not this cluster's
    (sp / "99.0.wn01.json").write_text(spool_record("99", "0", start_time=now - 3000))  # left to the windows
    wh = tmp_path / "wh.duckdb"
    base = ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--spool", str(sp)]
    (tmp_path / "out.json").write_text(sacct_doc(new_layout_job(96, end=now - 3600)))
    r = CliRunner().invoke(app, [*base, "--first-hours", "1", "--window-hours", "1"])
    assert r.exit_code == 0, r.output
    first = calls()
    assert "--jobs" not in first[0]  # the window first
    assert [c[c.index("--jobs") + 1] for c in first if "--jobs" in c] == ["95,98"]
    assert "for 2 tagged jobs" in r.output
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job ORDER BY 1") == [("96",)]

    (tmp_path / "out.json").write_text(sacct_doc(new_layout_job(95, end=now - 3600)))
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    assert [c[c.index("--jobs") + 1] for c in calls() if "--jobs" in c] == ["98"]  # 95 has its row now
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job ORDER BY 1") == [("95",), ("96",)]
    assert json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]["unfinished"] == []

    r = CliRunner().invoke(app, [*base, "--tagged-days", "0"])
    assert r.exit_code == 0, r.output
    assert not any("--jobs" in c for c in calls())  # switched off
    r = CliRunner().invoke(app, base)
    assert [c[c.index("--jobs") + 1] for c in calls() if "--jobs" in c] == ["98"]  # until it ages out


def test_spool_files_written_before_the_tagged_days_are_not_read(tmp_path, fake_sacct):
    """A collected spool holds a file per job step of the site's whole history: an ingest reads
    the files written from --tagged-days (a job's longest run plus a day) and a day's clock margin
    before its window on, judged by modification time, not every file; 0 reads them all."""
    exe, _calls = fake_sacct
    now = time.time()
    sp = tmp_path / "spool"
    sp.mkdir()
    written_days_ago = {"60": 0, "61": 8.5, "62": 9.5, "63": 20}
    for job, days in written_days_ago.items():
        f = sp / f"{job}.0.wn01.json"
        f.write_text(spool_record(job, "0", start_time=int(now - days * 86400)))
        os.utime(f, (now - days * 86400, now - days * 86400))
    (tmp_path / "out.json").write_text(sacct_doc())
    wh = tmp_path / "wh.duckdb"
    base = ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--spool", str(sp), "--first-hours", "1"]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    # the window starts an hour ago: files from 8 days + 1 day of margin before it are read
    read = [job for job, days in written_days_ago.items() if days * 24 <= 1 + 9 * 24]
    assert read == ["60", "61"]
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job_tag ORDER BY 1") == [(j,) for j in read]
    r = CliRunner().invoke(app, [*base, "--tagged-days", "0"])
    assert r.exit_code == 0, r.output
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job_tag ORDER BY 1") == [(j,) for j in sorted(written_days_ago)]


def test_falls_back_to_parsable2(tmp_path, fake_sacct, monkeypatch):
    exe, calls = fake_sacct
    monkeypatch.setenv("FAKE_SACCT_NO_JSON", "1")
    (tmp_path / "out.p2").write_text("\n".join([_p2(), _p2(JobIDRaw="70.0", JobID="70.0"), "bad|line"]) + "\n")
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--window-hours", "48"])
    assert r.exit_code == 0, r.output
    c = calls()
    assert "--json" in c[0] and "--parsable2" in c[1] and "--noconvert" in c[1]
    assert wh_rows(wh, "SELECT step_id, allocated_cores, cpu_user_seconds FROM raw_job ORDER BY step_id") == [
        ("", 4, 62.5),
        ("0", 4, 62.5),
    ]
    assert wh_rows(wh, "SELECT field FROM raw_rejects") == [("line",)]
    assert "parsable2" in r.output


def test_missing_sacct_is_an_error_not_a_traceback(tmp_path):
    r = CliRunner().invoke(
        app, ["ingest", "slurm", "-w", str(tmp_path / "w.duckdb"), "--sacct", str(tmp_path / "no-such-sacct")]
    )
    assert r.exit_code == 1 and "no-such-sacct" in r.output


# ---- Slurm 24.11 (data_parser v0.0.42): sentinels and launch failures ------------------------
def test_launch_failure_loads_with_no_start_and_its_state(tmp_path):
    failed = job_2411(700, start=NO_VAL, end=T0 + 30, state="FAILED", steps=False)
    assert failed["time"]["elapsed"] == 0
    text = doc_2411(job_2411(699), failed)
    rows, locs, rejects = parse_json_document(text, "p")
    assert rejects == []
    got = _by_key(rows)
    f = got[("700", "")]
    assert f["start_time"] is None and f["wall_seconds"] == 0 and f["state"] == "FAILED"
    assert f["end_time"] == datetime.fromtimestamp(T0 + 30, tz=timezone.utc) and f["exit_code"] == 1
    assert f["allocated_cores"] == 4  # as requested: there was no allocation
    ok = got[("699", "batch")]
    assert ok["start_time"] == datetime.fromtimestamp(T0, tz=timezone.utc) and ok["wall_seconds"] == 100
    assert ok["bytes_read"] == 4096 and ok["bytes_written"] == 1024
    wh = tmp_path / "w.duckdb"
    ingest(to_batches(rows, locs, rejects, "p"), wh)
    assert wh_rows(wh, "SELECT count(*) FROM raw_rejects") == [(0,)]
    assert wh_rows(wh, "SELECT state, start_time IS NULL, wall_seconds FROM raw_job WHERE job_id = '700'") == [
        ("FAILED", True, 0.0)
    ]
    # a job that ran but lost its start is still rejected: wall time needs a start
    ran = job_2411(701, start=NO_VAL, end=T0 + 30)
    ran["time"]["elapsed"] = 30
    rows2, locs2, rej2 = parse_json_document(doc_2411(ran), "q")
    rows2 = [dict(r, wall_seconds=30.0) if not r["step_id"] else r for r in rows2]
    ingest(to_batches(rows2, locs2, rej2, "q"), wh)
    assert wh_rows(wh, "SELECT field FROM raw_rejects WHERE location LIKE 'q:%' AND location NOT LIKE '%step%'") == [
        ("start_time",)
    ]


@pytest.mark.parametrize(
    "value",
    [
        NO_VAL,
        INFINITE,
        NO_VAL64,
        INFINITE64,
        wrapped(NO_VAL),
        wrapped(NO_VAL64),
        wrapped(None),
        wrapped(7, infinite=True),
        str(NO_VAL64),
    ],
)
def test_sentinels_are_null_not_numbers(value):
    from tierlens.sources.slurm.json_job import _num, _ts

    assert _num(value) is None and _ts(value) is None


def test_sentinels_in_json_fields_and_parsable2():
    job = job_2411(710)
    job["steps"][0]["tres"]["consumed"]["total"][0]["count"] = NO_VAL64  # fs/disk never measured
    job["steps"][0]["time"]["end"] = wrapped(INFINITE)
    job["time"]["submission"] = NO_VAL
    rows, _, rejects = parse_json_document(doc_2411(job), "s")
    assert rejects == []
    got = _by_key(rows)
    assert got[("710", "batch")]["bytes_written"] is None and got[("710", "batch")]["end_time"] is None
    assert got[("710", "")]["submit_time"] is None and got[("710", "")]["bytes_written"] is None
    lines = [
        _p2(
            JobIDRaw="720",
            Start=str(NO_VAL),
            End=str(T0 + 9),
            ElapsedRaw="0",
            State="FAILED",
            AllocCPUS="0",
            ReqCPUS="2",
            UserCPU="00:00:00",
            SystemCPU="00:00:00",
            ExitCode="1:0",
        ),
        _p2(JobIDRaw="721", Submit=str(NO_VAL64), AllocCPUS=str(INFINITE), ReqCPUS="3"),
        _p2(JobIDRaw="722", Start=str(NO_VAL), End="Unknown", State="PENDING"),
    ]
    rows, _, rejects = parse_parsable2(lines, "p2")
    assert rejects == []
    got = _by_key(rows)
    assert set(got) == {("720", ""), ("721", "")}  # 722 is pending: later
    f = got[("720", "")]
    assert f["start_time"] is None and f["wall_seconds"] == 0 and f["state"] == "FAILED"
    assert f["allocated_cores"] == 2 and f["exit_code"] == 1
    assert got[("721", "")]["submit_time"] is None and got[("721", "")]["allocated_cores"] is None


# ---- an incomplete window is asked for again -------------------------------------------------
def _starttimes(calls: list[list[str]]) -> list[float]:
    return [datetime.fromisoformat(c[c.index("--starttime") + 1]).timestamp() for c in calls if "--starttime" in c]


@pytest.mark.parametrize("how", ["cut", "exit"])
def test_incomplete_window_holds_the_watermark(tmp_path, fake_sacct, monkeypatch, how):
    exe, calls = fake_sacct
    text = doc_2411(job_2411(801), job_2411(802), job_2411(803))
    (tmp_path / "out.json").write_text(text)
    cut = text.index('"job_id": 803')  # inside job 803: jobs 801 and 802 are whole
    monkeypatch.setenv("FAKE_SACCT_BREAK", f"2:{how}")
    monkeypatch.setenv("FAKE_SACCT_CUT", str(cut))
    wh = tmp_path / "wh.duckdb"
    base = ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--window-hours", "1"]
    r = CliRunner().invoke(app, [*base, "--first-hours", "3"])
    assert r.exit_code == 1, r.output  # a window that could not be read fails the run (README: exit codes)
    starts = _starttimes(calls())
    assert len(starts) == 3
    state = json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]
    assert abs(state["watermark"] - starts[1]) < 1  # held at the broken window's start
    label = f"{datetime.fromtimestamp(starts[1]).strftime('%Y-%m-%dT%H:%M:%S')}.."
    assert "asked for again" in r.output and label in r.output
    rejects = wh_rows(wh, "SELECT reason, location FROM raw_rejects")
    assert len(rejects) == 1
    if how == "cut":
        assert rejects[0][0].startswith("malformed document")
        off = int(rejects[0][1].rsplit(" ", 1)[1])
        # the offset of the job it broke off in
        assert text[off] == "{" and text.index('"job_id": 802') < off < cut
    else:
        assert "exited 2" in rejects[0][0] and "Problem talking to the database" in rejects[0][0]
    # the complete jobs loaded (all three arrive whole from the other windows)
    assert wh_rows(wh, "SELECT count(*) FROM raw_job WHERE step_id = ''") == [(3,)]
    # the next run asks for the held window again (with the overlap), and then moves on
    monkeypatch.setenv("FAKE_SACCT_BREAK", "0:")
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    again = _starttimes(calls())
    assert abs(again[0] - (starts[1] - 600)) < 1
    assert json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]["watermark"] > starts[2]


def test_truncated_document_loads_its_complete_jobs_only(tmp_path):
    text = doc_2411(job_2411(811), job_2411(812), job_2411(813))
    cut = text.index('"job_id": 813')
    rows, locs, rejects = parse_json_document(text[:cut], "t")
    assert {r["job_id"] for r in rows} == {"811", "812"}
    assert len(rejects) == 1 and rejects[0].reason.startswith("malformed document")
    for r, loc in zip(rows, locs):
        off = int(loc.split()[1])
        assert json.JSONDecoder().raw_decode(text, off)[0]["job_id"] == int(r["job_id"])


def test_timeout_keeps_what_was_printed_and_holds_the_window(tmp_path):
    from tierlens.sources.slurm.sacct import SacctRunner, WindowReport, sacct_batches

    text = doc_2411(job_2411(821), job_2411(822))
    cut = text.index('"job_id": 822')
    (tmp_path / "part.json").write_text(text[:cut])
    exe = tmp_path / "slow-sacct"
    exe.write_text(f"#!/bin/sh\ncat {tmp_path / 'part.json'}\nexec sleep 30\n")
    exe.chmod(0o755)
    retry: list[WindowReport] = []
    marks: list[float] = []
    batches = list(
        sacct_batches(
            SacctRunner(sacct=str(exe), fmt="json", timeout=1),
            T0,
            T0 + 7200,
            3600,
            [],
            lambda wm, _u: marks.append(wm),
            retry=retry,
        )
    )
    assert marks == [T0, T0]  # both windows broke: held at the first
    assert [r.start for r in retry] == [T0, T0 + 3600]
    assert all("timed out after 1 s" in r.describe() for r in retry)
    rows = [r for b in batches for r in b.table.to_pylist()]
    assert {r["job_id"] for r in rows} == {"821"}
    reasons = sorted(j.reason.split(":")[0] for b in batches for j in b.rejects)
    assert reasons == ["incomplete output", "incomplete output", "malformed document", "malformed document"]


def test_watermark_never_passes_a_batch_that_failed_to_load(tmp_path, fake_sacct, monkeypatch):
    from tierlens.warehouse import core

    exe, calls = fake_sacct
    (tmp_path / "out.json").write_text(doc_2411(job_2411(831)))
    real_load, loads = core.Warehouse.load, []

    def failing_load(self, batch):
        loads.append(batch.source)
        if len(loads) == 2:
            raise RuntimeError("disk full")
        return real_load(self, batch)

    monkeypatch.setattr(core.Warehouse, "load", failing_load)
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(
        app, ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--window-hours", "1", "--first-hours", "3"]
    )
    assert r.exit_code != 0 and isinstance(r.exception, RuntimeError)
    starts = _starttimes(calls())
    state = json.loads((tmp_path / "wh.slurm-state.json").read_text())["default"]
    assert abs(state["watermark"] - starts[1]) < 1  # the end of the one window that loaded


#: holds the warehouse's writer lock as a transform would, until its stdin closes
HOLD_LOCK = """
import sys
from tierlens.warehouse.lock import warehouse_lock
with warehouse_lock(sys.argv[1], "transform", wait=0):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_held_warehouse_or_a_full_disk_is_one_line_and_exit_1(tmp_path, fake_sacct, monkeypatch):
    """`tierlens ingest slurm` ends as the other ingest commands do when it cannot write: one line
    on stderr, exit 1, no traceback, and the watermark not moved."""
    import errno

    from tierlens.warehouse import Warehouse, core

    exe, _calls = fake_sacct
    (tmp_path / "out.json").write_text(doc_2411(job_2411(841)))
    wh = tmp_path / "wh.duckdb"
    Warehouse(wh).close()
    cmd = ["ingest", "slurm", "-w", str(wh), "--sacct", str(exe), "--first-hours", "1"]
    monkeypatch.setenv("TIERLENS_LOCK_WAIT_SECONDS", "0")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(wh)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        busy = CliRunner().invoke(app, cmd)
    finally:
        holder.communicate(timeout=30)
    full_disk = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(core.Warehouse, "_load", lambda self, batch: (_ for _ in ()).throw(full_disk))
    full = CliRunner().invoke(app, cmd)
    for r, said in ((busy, f"pid {holder.pid}"), (full, "the disk is full")):
        assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert lines[0].startswith("ingest slurm failed: ") and said in " ".join(r.output.split()), r.output
        assert "Traceback" not in r.output
    assert not (tmp_path / "wh.slurm-state.json").exists()


# ---- the fast path (block scan + typed decode) against the generic one, row for row -----------
def _bench_doc(n: int) -> str:
    """Jobs as bench/slurm_bench.py writes them (22.05 layout, one per line, compact)."""
    sys.path.insert(0, str(REPO / "bench"))
    import tempfile

    import slurm_bench

    with tempfile.TemporaryDirectory() as d:
        slurm_bench._write_document(Path(d) / "doc.json", n)
        return (Path(d) / "doc.json").read_text()


def _tricky_doc() -> str:
    """Strings that look like structure, escapes at every parity, non-ASCII (2-, 3- and 4-byte
    UTF-8), elements that are not jobs, doubled commas, values only the generic path reads."""
    jobs: list = []
    for k, name in enumerate(
        [
            'a "quoted" {job}',
            "ends in a backslash \\",
            '\\\\"}]',
            '[{\\"',
            "déjà vu",
            "日本語のジョブ",
            "emoji 🚀 job",
            "tab\tand\nnewline",
        ]
    ):
        j = new_layout_job(900 + k)
        j["name"] = name
        j["user"] = name if k % 2 else "alice"
        j["comment"] = {"job": "}" * k + "\\" * k + '"' * k}
        jobs.append(j)
    as_text = new_layout_job(920)
    as_text["time"]["start"] = str(T0)  # a number written as a string
    boolean = new_layout_job(921)
    boolean["exit_code"]["return_code"] = True  # not a number: null
    nested = new_layout_job(922)
    nested["tres"]["allocated"][0]["count"] = {"set": True, "number": {"number": 8}}  # rejected
    far = new_layout_job(923)
    far["time"]["end"] = 10**12  # year 33658: rejected
    frac = new_layout_job(924)
    frac["time"]["submission"] = T0 - 0.4999995  # fractional epoch
    frac["steps"][0]["step"] = {"name": "extern"}  # an id-less step
    no_id = new_layout_job(925)
    no_id["job_id"] = ""
    odd_state = new_layout_job(926)
    odd_state["state"] = "completed"
    odd_state["steps"][0]["state"] = {"current": []}
    odd_state["steps"][0]["nodes"] = {"range": "", "list": []}
    no_steps = new_layout_job(927)
    no_steps["steps"] = None
    no_steps["time"]["user"] = {"seconds": 7, "microseconds": 9}
    elements = [
        *jobs,
        5,
        "not a job",
        [1, 2],
        None,
        as_text,
        boolean,
        nested,
        far,
        frac,
        no_id,
        odd_state,
        no_steps,
        job_2411(930, start=NO_VAL, end=T0 + 9, state="FAILED", steps=False),
    ]
    body = ",\n".join(json.dumps(e, ensure_ascii=False) for e in elements)
    return '{"meta": {"note": "\\"jobs\\": [ in a string"}, "jobs": [' + body.replace(",\n{", ",,\n{", 1) + "]}"


def _2411_sentinel_doc() -> str:
    job = job_2411(710)
    job["steps"][0]["tres"]["consumed"]["total"][0]["count"] = NO_VAL64
    job["steps"][0]["time"]["end"] = wrapped(INFINITE)
    job["time"]["submission"] = NO_VAL
    return doc_2411(
        job_2411(699),
        job_2411(700, start=NO_VAL, end=T0 + 30, state="FAILED", steps=False),
        job,
        job_2411(711, start=0, end=0, state="PENDING", steps=False),
    )


FIXTURES = {
    "22.05 capture": lambda: CAPTURE.read_text(),
    "23.02+ layout": lambda: sacct_doc(
        new_layout_job(43), new_layout_job(50, end=0, state="RUNNING"), new_layout_job(44, state="FAILED")
    ),
    "24.11 sentinels": _2411_sentinel_doc,
    "bench generator": lambda: _bench_doc(300),
    "tricky": _tricky_doc,
    "broken element": lambda: (
        sacct_doc(new_layout_job(1), new_layout_job(2), new_layout_job(3))
        .replace('"user": "alice"', '"user": alice"', 2)
        .replace('"user": alice"', '"user": "alice"', 1)
    ),
    "empty": lambda: sacct_doc(),
    "no jobs key": lambda: '{"meta": {}, "errors": ["sacct: error"]}',
}


def _parse(fn, text: str, source: str = "s"):
    from tierlens.sources.slurm.sacct import JobBlock, WindowReport

    report = WindowReport("w")
    parts = list(fn(io.StringIO(text), source, report).parts())
    fast_rows = sum(len(p.rows) for p in parts if isinstance(p, JobBlock))
    items = [i for p in parts for i in (p.items() if isinstance(p, JobBlock) else [p])]
    return items, report.problems, fast_rows


def _same(text: str, read_chars: int, monkeypatch) -> int:
    """Fast and generic paths give the same items (rows, locations, rejects) and the same
    problems; returns how many rows came through the fast path."""
    from tierlens.sources.slurm import json_stream, sacct

    monkeypatch.setattr(json_stream, "READ_CHARS", read_chars)
    fast, fast_problems, n_fast = _parse(sacct.iter_json_rows, text)
    slow, slow_problems, n_slow = _parse(sacct.iter_json_rows_generic, text)
    assert n_slow == 0
    assert len(fast) == len(slow)
    for f, s in zip(fast, slow):
        assert f == s
    assert fast_problems == slow_problems
    return n_fast


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(FIXTURES))
@pytest.mark.parametrize("read_chars", [1 << 22, 4096, 997])
def test_fast_path_gives_the_generic_rows(name, read_chars, monkeypatch):
    from tierlens.sources.slurm import sacct

    text = FIXTURES[name]()
    n_fast = _same(text, read_chars, monkeypatch)
    # and the same Arrow batches, cut at the same rows
    fast = list(sacct.stream_batches(sacct.iter_json_rows(io.StringIO(text), "s"), "s", 64))
    slow = list(sacct.stream_batches(sacct.iter_json_rows_generic(io.StringIO(text), "s"), "s", 64))
    assert [b.table for b in fast] == [b.table for b in slow]
    assert [b.locations for b in fast] == [b.locations for b in slow]
    assert [b.rejects for b in fast] == [b.rejects for b in slow]
    # the fast path is what decoded the jobs, not the fallback
    if name in ("22.05 capture", "23.02+ layout", "24.11 sentinels", "bench generator"):
        n_rows = sum(b.table.num_rows for b in fast)
        assert n_rows > 0 and n_fast == n_rows
    if name == "tricky":
        assert 16 <= n_fast < sum(b.table.num_rows for b in fast)


def test_tricky_document_rows_and_rejects():
    """What the tricky document holds, checked against the document itself."""
    text = _tricky_doc()
    rows, locs, rejects = parse_json_document(text, "t")
    doc_jobs = json.loads(text.replace(",,", ",", 1))["jobs"]
    got = _by_key(rows)
    for j in doc_jobs[:8]:
        assert got[(str(j["job_id"]), "")]["user_name"] == j["user"]
    for r, loc in zip(rows, locs):  # every location is the offset of the job's own object
        off = int(loc.split()[1])
        assert str(json.JSONDecoder().raw_decode(text, off)[0]["job_id"]) == r["job_id"]
    assert got[("920", "")]["start_time"] == datetime.fromtimestamp(T0, tz=timezone.utc)
    assert got[("921", "")]["exit_code"] is None
    assert got[("924", "extern")]["submit_time"] == datetime.fromtimestamp(T0 - 0.4999995, tz=timezone.utc)
    assert got[("926", "")]["state"] == "COMPLETED" and got[("926", "batch")]["state"] is None
    assert got[("927", "")]["cpu_user_seconds"] == 7.000009
    assert got[("930", "")]["start_time"] is None and got[("930", "")]["wall_seconds"] == 0
    assert [(r.field, text[int(r.location.split()[-1])]) for r in rejects] == [
        ("job", "5"),
        ("job", '"'),
        ("job", "["),
        ("job", "n"),
        ("allocated_cores", "{"),
        ("end_time", "{"),
        ("job_id", "{"),
    ]


@pytest.mark.timeout(300)
def test_fast_path_on_every_cut_of_a_document(monkeypatch):
    """A document broken off anywhere: the same complete jobs, the same one reject (its offset
    and message) as the generic path."""
    text = doc_2411(job_2411(1), job_2411(2, start=NO_VAL, end=T0 + 3, state="FAILED", steps=False))
    for doc, stride in ((text, 7), (_tricky_doc(), 97)):
        for k, cut in enumerate(range(0, len(doc) + 1, stride)):
            _same(doc[:cut], 4096 if k % 2 else 61, monkeypatch)


def test_scanner_finds_the_decoders_element_ends():
    """Element ends of the block scan are where json's own decoder ends each element, whatever
    the strings hold (quotes, brackets, backslash runs, multi-byte characters)."""
    from hypothesis import given, settings, strategies as st

    from tierlens.sources.slurm.jsonscan import Stop, char_offsets, scan_array

    text_st = st.text(alphabet='{}[]"\\\\ ,:aé日🚀\n', max_size=12)
    value_st = st.recursive(
        st.none() | st.integers() | text_st,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text_st, inner, max_size=3),
        max_leaves=8,
    )

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.dictionaries(text_st, value_st, max_size=4), max_size=5))
    def check(elements):
        text = "[" + ", ".join(json.dumps(e, ensure_ascii=False) for e in elements) + "]"
        block = text[1:].encode()
        sc = scan_array(block)
        dec, pos, ends = json.JSONDecoder(), 1, []
        for _ in elements:
            while text[pos] in " ,":
                pos += 1
            pos = dec.raw_decode(text, pos)[1]
            ends.append(pos - 1)
        assert char_offsets(block, sc.ends).tolist() == ends
        assert sc.why is Stop.END

    check()


def test_a_job_seen_twice_in_one_output_keeps_its_last_rows():
    from tierlens.sources.slurm.sacct import iter_json_rows, stream_batches

    text = sacct_doc(
        new_layout_job(61, end=0, state="RUNNING"),
        new_layout_job(62),
        new_layout_job(61, end=T0 + 300, state="COMPLETED"),
    )
    (batch,) = stream_batches(iter_json_rows(io.StringIO(text), "d"), "d")
    got = {(r["job_id"], r["step_id"]): (r["state"], loc) for r, loc in zip(batch.table.to_pylist(), batch.locations)}
    last = text.rindex('"job_id": 61')
    last = text.rindex("{", 0, last)
    assert got == {
        ("62", ""): ("COMPLETED", got[("62", "")][1]),
        ("62", "batch"): ("COMPLETED", got[("62", "batch")][1]),
        ("61", ""): ("COMPLETED", f"d:offset {last}"),
        ("61", "batch"): ("COMPLETED", f"d:offset {last} step batch"),
    }
    assert [r["job_id"] for r in batch.table.to_pylist()] == ["62", "62", "61", "61"]


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_fast_path_on_a_real_sacct(cluster, monkeypatch):
    """What a real sacct prints (here Slurm 22.05), a job name full of JSON's own characters and a
    failed job included: the fast path decodes every job, and gives the generic path's rows."""
    name = 'tl "fast" {path} [x] \\ é'
    jid = (
        cluster.run(["sbatch", "--parsable", "-n1", "-J", name, "-o", "/dev/null", "--wrap", "srun -n1 true; exit 3"])
        .stdout.strip()
        .split(";")[0]
    )
    cluster.wait_accounted(jid)
    # slurmdbd may hold a step's record before the job's own: the job is then a placeholder
    # named "allocation" until the job's record arrives. Slurm stores a job name's double quotes
    # as backquotes; the backslash is escaped in the JSON.
    for _ in range(120):
        text = cluster.run(["sacct", "--json", "--allusers", "--jobs", jid]).stdout
        doc = json.loads(text)
        if [j["name"] for j in doc["jobs"]] == [name.replace('"', "`")]:
            break
        time.sleep(0.5)
    assert [j["name"] for j in doc["jobs"]] == [name.replace('"', "`")] and "\\\\ " in text
    for read_chars in (1 << 22, 997):
        n_fast = _same(text, read_chars, monkeypatch)
        rows, _, rejects = parse_json_document(text, "real")
        assert rejects == [] and n_fast == len(rows)
    got = _by_key(rows)
    # the states as sacct's own --parsable2 gives them; 22.05's JSON has the exit codes as 0/SUCCESS
    # (parsable2 says 3:0 for this job), so those are compared with what the JSON holds
    p2 = cluster.run(["sacct", "-j", jid, "--parsable2", "--noheader", "-o", "JobIDRaw,State"]).stdout.split()
    assert (
        {(jid, line.split("|")[0].partition(".")[2]): line.split("|")[1] for line in p2}
        == {k: r["state"] for k, r in got.items() if k[0] == jid}
        == {(jid, ""): "FAILED", (jid, "batch"): "FAILED", (jid, "0"): "COMPLETED"}
    )
    mine = next(j for j in doc["jobs"] if str(j["job_id"]) == jid)
    rc = mine["exit_code"]["return_code"]  # from v0.0.40 a {set, infinite, number} wrapper
    assert got[(jid, "")]["exit_code"] == (rc["number"] if isinstance(rc, dict) else rc)
    assert len({k[0] for k in got}) == len([j for j in doc["jobs"] if j["time"]["start"] or j["time"]["end"]])


@pytest.mark.timeout(300)
def test_fast_path_on_damaged_documents(monkeypatch):
    """Characters of a document replaced at random by JSON's structural ones (or by a letter):
    whatever the damage, the fast path gives the generic path's rows, rejects and offsets."""
    import random

    rng = random.Random(17)
    base = doc_2411(job_2411(1), job_2411(2, start=NO_VAL, end=T0 + 3, state="FAILED", steps=False), job_2411(3))
    for k in range(400):
        doc = list(base)
        for _ in range(rng.choice((1, 1, 2, 3))):
            doc[rng.randrange(len(doc))] = rng.choice('{}[]",:\\ 0x')
        _same("".join(doc), 4096 if k % 2 else 233, monkeypatch)


# ---- data_parser v0.0.42 (24.11) to v0.0.45 (26.05): the layouts as Slurm's parsers.c dumps them --
#: (data_parser, Slurm release that defaults to it). The paths tierlens reads are the same in all
#: four (job time/*, tres/*, steps[].step/id, time/*, nodes/*, tres/*, state, exit_code); what
#: changes around them is added below, from src/plugins/data_parser/v0.0.4x/parsers.c.
DATA_PARSERS = {"v0.0.42": "24.11.5", "v0.0.43": "25.05.3", "v0.0.44": "25.11.2", "v0.0.45": "26.05.5"}
SLUID = "s0J4V2M8ZB3Q1K"  # cluster 0x091 (not the reserved 0): a run id as print_sluid writes it


def _job_of(parser: str, job_id: int, sluid: str | None = SLUID, **kw) -> dict:
    job = job_2411(job_id, **kw)
    if parser >= "v0.0.43":  # 25.05: reservations requested, segment size; steps' own I/O paths
        job["reservation"]["requested"] = ""
        job["segment_size"] = 0
        for s in job["steps"]:
            s["step"].update(stderr="", stdin="", stdout="", stderr_expanded="", stdin_expanded="", stdout_expanded="")
            s["time"]["limit"] = wrapped(None, infinite=True)
    if parser >= "v0.0.45":  # 26.05: the run's SLUID and the first run's; 'pid' gone from steps
        job.update(sluid=sluid, original_sluid=sluid, exclusive="", oversubscribe="")
        for s in job["steps"]:
            del s["pid"]
    return job


def _doc_of(parser: str, *jobs: dict) -> str:
    release = DATA_PARSERS[parser]
    major, minor, micro = release.split(".")
    doc = json.loads(doc_2411(*jobs))
    doc["meta"]["plugin"]["data_parser"] = f"data_parser/{parser}"
    doc["meta"]["slurm"].update(version={"major": major, "micro": micro, "minor": minor}, release=release)
    return json.dumps(doc, indent=2)


@pytest.mark.parametrize("parser", list(DATA_PARSERS))
def test_json_each_data_parser_version(parser, tmp_path, monkeypatch):
    jobs = [_job_of(parser, 800), _job_of(parser, 801, start=NO_VAL, end=T0 + 30, state="FAILED", steps=False)]
    text = _doc_of(parser, *jobs)
    assert _same(text, 1 << 22, monkeypatch) == 3  # every row by the fast path, as the generic one
    rows, locs, rejects = parse_json_document(text, parser)
    assert rejects == []
    got = _by_key(rows)
    assert set(got) == {("800", ""), ("800", "batch"), ("801", "")}
    doc = json.loads(text)["jobs"][0]
    step = doc["steps"][0]["time"]
    user = step["user"]["seconds"] + step["user"]["microseconds"] / 1e6
    system = step["system"]["seconds"] + step["system"]["microseconds"] / 1e6
    for key in (("800", ""), ("800", "batch")):
        r = got[key]
        assert (r["cpu_user_seconds"], r["cpu_system_seconds"]) == (user, system)
        assert r["wall_seconds"] == doc["time"]["end"] - doc["time"]["start"]
        assert r["allocated_cores"] == doc["tres"]["allocated"][0]["count"]
    assert got[("801", "")]["state"] == "FAILED" and got[("801", "")]["start_time"] is None
    has_sluid = parser >= "v0.0.45"
    for (jid, _), r in got.items():
        assert r["sluid"] == (SLUID if has_sluid else None)
        assert r["job_identity"] == (f"slurm.prod.{jid}.{SLUID}" if has_sluid else f"slurm.prod.{jid}")
    wh = tmp_path / "w.duckdb"
    ingest(to_batches(rows, locs, rejects, parser), wh)
    assert wh_rows(wh, "SELECT job_id, step_id, sluid, job_identity FROM raw_job ORDER BY 1, 2") == [
        (j, s, SLUID if has_sluid else None, got[(j, s)]["job_identity"]) for j, s in sorted(got)
    ]


@pytest.mark.parametrize(
    "value",
    [
        "",
        None,
        "s00300000000G4",
        "S0J4V2M8ZB3Q1K",
        "s0J4V2M8ZB3Q1",
        "s0J4V2M8ZB3Q1KX",
        "s0J4V2M8ZB3QIK",
        "sZJ4V2M8ZB3Q1K",
        12345,
    ],
)
def test_a_value_that_is_no_run_sluid_leaves_the_identity_as_before(value, monkeypatch):
    """Unset (26.05 prints "" or null), the db_index of a record written before SLUIDs (cluster
    bits 0), the wrong case, length or alphabet, a number: no SLUID, the identity of 25.11."""
    job = _job_of("v0.0.45", 810, sluid=value)
    text = _doc_of("v0.0.45", job)
    _same(text, 1 << 22, monkeypatch)
    rows, _, rejects = parse_json_document(text, "x")
    assert rejects == [] and rows
    assert {(r["sluid"], r["job_identity"]) for r in rows} == {(None, "slurm.prod.810")}


IDENTITY_CASES = [
    ("prod", "42", None),
    ("prod", "42", SLUID),
    ("t2", "4294967294", "s00400000000G4"),
    ("prod", "42", "s00300000000G4"),
    ("prod", "42", "S0J4V2M8ZB3Q1K"),
    ("prod", "42", "bogus"),
    ("prod", "42", "s0J4V2M8ZB3Q1"),
    ("prod", "42", "sFZZZZZZZZZZZZ"),
    ("prod", "42", "sGZZZZZZZZZZZZ"),
]


def test_sluid_identity_is_what_the_plugin_builds(tmp_path):
    """The plugin builds the identity in C from SLURM_JOB_SLUID, the ingest in Python from sacct's
    'sluid': the same string for every case, or file accesses would not join their jobs."""
    import shutil
    import subprocess

    if not shutil.which("gcc") or not shutil.which("make"):
        pytest.skip("needs gcc and make (deploy/ci/system-packages.txt)")
    r = subprocess.run(
        ["make", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={tmp_path}", f"{tmp_path}/tl_test"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for cluster, jid, sluid in IDENTITY_CASES:
        c = subprocess.run(
            [str(tmp_path / "tl_test"), "identity", cluster, jid, *([sluid] if sluid else [])],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert c == job_identity("slurm", cluster, jid, sluid), (cluster, jid, sluid)
    assert job_identity("slurm", "prod", "42", SLUID) == f"slurm.prod.42.{SLUID}"
    assert job_identity("slurm", "prod", "42", "s00300000000G4") == "slurm.prod.42"
    assert job_identity("slurm", "prod", "42", "sGZZZZZZZZZZZZ") == "slurm.prod.42"  # over 64 bits


# ---- real captures (made by the version matrix on Debian 13 and unstable; tests/data/sacct/real) --
REAL = REPO / "tests" / "data" / "sacct" / "real"


@pytest.mark.parametrize("release, parser", [("24.11.5", "v0.0.42"), ("26.05.5", "v0.0.45")])
def test_real_capture_rows_and_identity(release, parser, monkeypatch):
    """Each job of a real `sacct --json`: its rows by both paths, their CPU seconds against the
    capture's --parsable2 twin (UserCPU, SystemCPU), and the identity with the run's SLUID where
    the release has one (every job of 26.05), the plain one where not."""
    text = (REAL / release / "sacct.json").read_text()
    doc = json.loads(text)
    assert doc["meta"]["plugin"]["data_parser"] == f"data_parser/{parser}"
    _same(text, 1 << 22, monkeypatch)
    rows, _, rejects = parse_json_document(text, release)
    assert rejects == []
    got = _by_key(rows)
    cluster = doc["meta"]["slurm"]["cluster"]
    sluids = {str(j["job_id"]): j.get("sluid") for j in doc["jobs"]}
    for (jid, _), r in got.items():
        if release >= "26.05":
            assert r["sluid"] == sluids[jid] and r["sluid"].startswith("s")
            assert r["job_identity"] == f"slurm.{cluster}.{jid}.{sluids[jid]}"
        else:
            assert r["sluid"] is None and r["job_identity"] == f"slurm.{cluster}.{jid}"
    for line in (REAL / release / "parsable2.txt").read_text().splitlines():
        raw, _, state, _, _, _, _, user, system, *_ = line.split("|")
        jid, _, step = raw.partition(".")
        r = got[(jid, step)]
        assert r["state"] == state.split(" ")[0]
        assert r["cpu_user_seconds"] == pytest.approx(_cpu_time(user), abs=1e-3)
        assert r["cpu_system_seconds"] == pytest.approx(_cpu_time(system), abs=1e-3)


# ---- row positions from records.JOB's field names; the two decoders do not import each other -----
def test_typed_rows_follow_a_field_added_to_the_job_record(monkeypatch):
    """Insert a field into JOB's order (the one edit records.py takes): the typed path puts every
    value at its new position by name, the new field null, and the step sums stay the steps'."""
    from tierlens.sources.slurm import sacct_typed, values

    job = job_2411(41)
    plain = sacct_typed.job_rows(sacct_typed.decoder.decode(json.dumps(job).encode()))
    edited = list(JOB.names)
    edited.insert(edited.index("node"), "site_tier")
    monkeypatch.setattr(sacct_typed, "_to_job", values.to_job_order(sacct_typed.BUILT, edited))
    moved = sacct_typed.job_rows(sacct_typed.decoder.decode(json.dumps(job).encode()))
    assert len(moved) == len(plain) >= 2
    for before, after in zip(plain, moved):
        named = dict(zip(edited, after))
        assert named.pop("site_tier") is None
        assert named == dict(zip(JOB.names, before))
    # the job's figures are its steps' sums, counted here from the document, not from the rows
    steps = job["steps"]
    user = sum(s["time"]["user"]["seconds"] + s["time"]["user"]["microseconds"] / 1e6 for s in steps)
    assert dict(zip(edited, moved[0]))["cpu_user_seconds"] == pytest.approx(user)


_ONE_EDIT_RUN = """
import io, json, sys
from tierlens.sources.slurm import sacct
text = open(sys.argv[1]).read()
out = {}
for path in ("iter_json_rows", "iter_json_rows_generic"):
    batches = list(sacct.stream_batches(getattr(sacct, path)(io.StringIO(text), "s"), "s"))
    out[path] = {"names": batches[0].table.schema.names, "rows": [r for b in batches for r in b.table.to_pylist()]}
print(json.dumps(out, default=str))
"""


def test_a_field_added_to_records_py_reaches_both_sacct_paths(tmp_path):
    """The one edit docs/architecture.md promises: a field inserted into JOB in records.py (a copy
    of the package, edited as a developer would) and nothing else. Both --json paths, through to
    the Arrow batches the warehouse loads, put every value under its name, the new field null."""
    from tierlens.sources.slurm import sacct

    package = REPO / "pipelines" / "tierlens"
    copy = tmp_path / "pipelines" / "tierlens"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    records = copy / "records.py"
    text = records.read_text()
    job_at = text.index("JOB = pa.schema(")
    node_at = text.index('_f("node", ', job_at)
    records.write_text(
        text[:node_at] + '_f("site_tier", pa.string(), "WLCG tier of the site."),\n        ' + text[node_at:]
    )
    env = {**os.environ, "PYTHONPATH": str(copy.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", _ONE_EDIT_RUN, str(CAPTURE)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    edited = json.loads(proc.stdout)
    expected_names = list(JOB.names)
    expected_names.insert(expected_names.index("node"), "site_tier")
    text = CAPTURE.read_text()
    for path in ("iter_json_rows", "iter_json_rows_generic"):
        plain = [
            r
            for b in sacct.stream_batches(getattr(sacct, path)(io.StringIO(text), "s"), "s")
            for r in b.table.to_pylist()
        ]
        got = edited[path]
        assert got["names"] == expected_names, path
        assert len(got["rows"]) == len(plain) > 0, path
        for before, after in zip(plain, got["rows"]):
            assert after.pop("site_tier") is None
            assert after == json.loads(json.dumps(before, default=str)), path


def test_a_row_field_not_in_the_job_record_is_refused():
    from tierlens.sources.slurm import values

    with pytest.raises(ValueError, match="cpu_seconds"):
        values.to_job_order(("cluster", "cpu_seconds"))


def test_the_typed_decoder_does_not_import_the_generic_one():
    import ast

    import tierlens.sources.slurm.sacct_typed as typed_mod

    tree = ast.parse(Path(typed_mod.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "sacct" not in imported and "tierlens.sources.slurm.sacct" not in imported


def test_the_slurm_modules_import_each_other_one_way():
    """sacct.py is split by concern (running sacct, reading --json, --parsable2, building rows);
    no two of its modules may import each other, directly or round a longer cycle."""
    import ast

    folder = REPO / "pipelines" / "tierlens" / "sources" / "slurm"
    names = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    graph = {}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text())
        found = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                found |= {n.module} if n.module else {a.name for a in n.names}
        graph[name] = found & names
    assert graph["sacct_typed"].isdisjoint({"sacct", "json_job", "json_stream"})

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        return any(m == target or (m not in seen and reaches(m, target, seen | {m})) for m in graph[start])

    cycles = sorted(m for m in names if reaches(m, m, {m}))
    assert not cycles, f"import cycle through {cycles}: {graph}"
