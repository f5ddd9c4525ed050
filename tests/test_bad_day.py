"""An admin's bad day: what cron and Airflow see when the input is bad.

A sacct that cannot reach slurmdbd or prints JSON that breaks off, a Parquet file of the wrong
columns or types, a history ad with a value of the wrong type: every one fails the command with
exit code 1 (README.md, "Exit codes") and one line on stderr, fails the DAG's task with the same
line, and leaves rejects that name the field, the location and what to change. A quiet window is
not a failure (exit 0, "nothing new"). The stand-in sacct is found on PATH, as a site's is."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from support.rows import wh_rows
from support.sacct import doc_2411, job_2411, spool_record
from tierlens.cli import app
from tierlens.ingest import condor, slurm, xrootd
from tierlens.ingest.interval import IngestFailed

T0 = 1_795_000_000
START, END = datetime.fromtimestamp(T0, timezone.utc), datetime.fromtimestamp(T0 + 3600, timezone.utc)
DB_ERROR = "sacct: error: Problem talking to the database: Connection refused"

#: FAKE_SACCT_MODE: "dberror" (slurmdbd down: stderr and exit 1, whatever the format asked), "silent"
#: (nothing at all, exit 0),
#: "cut" (the JSON of $FAKE_SACCT_JSON up to $FAKE_SACCT_CUT characters, exit 0), "ok" (all of it).
#: --parsable2 always answers with a valid job line, so a fallback to it would load that job.
FAKE_SACCT = r"""#!PYTHON
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_SACCT_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
mode = os.environ["FAKE_SACCT_MODE"]
if "--parsable2" in args:
    print("77|77|prod|u|a|p|wn1|1795000000|1795000000|1795000100|1|00:01.000|00:00.000|100|COMPLETED|0:0|fs/disk=1|fs/disk=1|1")
    sys.exit(0)
if mode == "dberror":
    print("DB_ERROR", file=sys.stderr)
    sys.exit(1)
if mode == "silent":
    sys.exit(0)
out = open(os.environ["FAKE_SACCT_JSON"]).read()
if mode == "cut":
    out = out[: int(os.environ["FAKE_SACCT_CUT"])]
sys.stdout.write(out)
"""


@pytest.fixture
def sacct_on_path(tmp_path, monkeypatch):
    """A stand-in `sacct` first on PATH; returns (set the mode and JSON, the calls made)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "sacct"
    exe.write_text(FAKE_SACCT.replace("PYTHON", sys.executable).replace("DB_ERROR", DB_ERROR))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SACCT_LOG", str(log))
    monkeypatch.setenv("FAKE_SACCT_JSON", str(tmp_path / "out.json"))

    def setup(mode: str, text: str = "", cut: int | None = None) -> None:
        monkeypatch.setenv("FAKE_SACCT_MODE", mode)
        (tmp_path / "out.json").write_text(text)
        if cut is not None:
            monkeypatch.setenv("FAKE_SACCT_CUT", str(cut))

    def calls() -> list[list[str]]:
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    return setup, calls


def _slurm(wh: Path, *extra: str):
    return CliRunner().invoke(
        app, ["ingest", "slurm", "-w", str(wh), "--start", str(T0), "--end", str(T0 + 3600), *extra]
    )


def _one_stderr_line(result) -> str:
    """The failure line: the one line on stderr (what cron mails when stdout goes to /dev/null)."""
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


# ---- sacct ------------------------------------------------------------------------------------
def test_a_slurmdbd_error_fails_and_never_falls_back_to_parsable2(tmp_path, sacct_on_path):
    setup, calls = sacct_on_path
    setup("dberror")
    wh = tmp_path / "wh.duckdb"
    r = _slurm(wh)
    assert r.exit_code == 1, r.output
    # the --json call failed for a reason no format cures: --parsable2 is never asked, so its job
    # (which the fake always serves) is not loaded
    assert all("--parsable2" not in c for c in calls()) and len(calls()) == 1
    assert wh_rows(wh, "SELECT count(*) FROM raw_job") == [(0,)]
    line = _one_stderr_line(r)
    assert line.startswith("ingest slurm failed: 1 sacct call(s) could not be read") and DB_ERROR in line
    # one reject for the window, naming the error and holding the command to run by hand
    ((reason, field, raw),) = wh_rows(wh, "SELECT reason, field, raw_record FROM raw_rejects")
    assert field == "document" and DB_ERROR in reason and "asked for again" in reason
    assert raw.split()[0].endswith("sacct") and "--json" in raw.split()
    # the format stays open: the next run asks for JSON again, not the fallback
    r = _slurm(wh)
    assert r.exit_code == 1 and "--json" in calls()[-1]


def test_a_sacct_without_json_still_falls_back(tmp_path, sacct_on_path, monkeypatch):
    """The one failure the fallback is for: sacct does not know --json."""
    setup, calls = sacct_on_path
    setup("ok")
    exe = Path(os.environ["PATH"].split(os.pathsep)[0]) / "sacct"
    exe.write_text(exe.read_text().replace(DB_ERROR, "sacct: unrecognized option '--json'"))
    monkeypatch.setenv("FAKE_SACCT_MODE", "dberror")
    wh = tmp_path / "wh.duckdb"
    r = _slurm(wh)
    assert r.exit_code == 0, r.output
    assert "--parsable2" in calls()[-1] and wh_rows(wh, "SELECT job_id FROM raw_job WHERE step_id = ''") == [("77",)]


def test_truncated_json_fails_and_the_offsets_agree(tmp_path, sacct_on_path):
    setup, calls = sacct_on_path
    text = doc_2411(job_2411(901, start=T0 + 10, end=T0 + 100), job_2411(902, start=T0 + 20, end=T0 + 200))
    cut = text.index('"job_id": 902') + 5
    setup("cut", text, cut)
    wh = tmp_path / "wh.duckdb"
    r = _slurm(wh)
    assert r.exit_code == 1, r.output
    assert "could not be read" in _one_stderr_line(r)
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job") == [("901",)]  # the whole job loaded
    ((location, reason),) = wh_rows(wh, "SELECT location, reason FROM raw_rejects")
    at = int(location.rsplit(" ", 1)[1])
    # the reject points at the job that broke off (its first character, where json can read it
    # from), and the message names that same offset and no other
    assert text[at] == "{" and at < cut and text.index('"job_id": 901') < at < text.index('"job_id": 902')
    offsets = {int(w) for w in reason.replace(",", " ").replace(")", " ").split() if w.isdigit()}
    assert f"offset {at}" in reason and not any(f"offset {n}" in reason for n in offsets - {at})
    assert f"offset {at}" in _one_stderr_line(r)


def test_a_quiet_window_is_nothing_new_and_exit_0(tmp_path, sacct_on_path):
    setup, _ = sacct_on_path
    setup("ok", doc_2411())
    r = _slurm(tmp_path / "wh.duckdb")
    assert r.exit_code == 0, r.output
    assert "nothing new" in r.stdout and not r.stderr.strip()


def test_the_process_exit_code_is_what_cron_sees(tmp_path, sacct_on_path):
    """The installed command, as cron runs it: exit 1 and one line on stderr for slurmdbd down."""
    setup, _ = sacct_on_path
    setup("dberror")
    tierlens = Path(sys.executable).parent / "tierlens"
    proc = subprocess.run(
        [str(tierlens), "ingest", "slurm", "-w", str(tmp_path / "wh.duckdb"), "--first-hours", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(said) == 1 and "failed" in said[0] and "Problem talking to the database" in said[0]
    assert "Traceback" not in proc.stderr


def test_the_dag_task_fails_with_the_commands_line(tmp_path, sacct_on_path):
    setup, _ = sacct_on_path
    setup("dberror")
    r = _slurm(tmp_path / "cli.duckdb")
    assert r.exit_code == 1
    wh = tmp_path / "task.duckdb"
    with pytest.raises(IngestFailed) as failed:
        slurm.load_interval(wh, START, END, slurm.SlurmOptions())
    assert str(failed.value) == _one_stderr_line(r)
    assert DB_ERROR in str(failed.value)
    # the warehouse keeps that the interval could not be read, with the same line
    assert wh_rows(wh, "SELECT outcome, reason FROM raw_source_interval") == [("unreachable", str(failed.value))]

    # a truncated document: the complete job loads, and the task still fails
    text = doc_2411(job_2411(911, start=T0 + 10, end=T0 + 100), job_2411(912, start=T0 + 20, end=T0 + 200))
    setup("cut", text, text.index('"job_id": 912') + 5)
    with pytest.raises(IngestFailed, match="could not be read"):
        slurm.load_interval(wh, START, END, slurm.SlurmOptions())
    assert wh_rows(wh, "SELECT DISTINCT job_id FROM raw_job") == [("911",)]


# ---- tierlens load ----------------------------------------------------------------------------
def _job_rows(n: int) -> list[dict]:
    from tierlens.records import JOB

    return [
        {f.name: None for f in JOB}
        | {
            "batch_system": "slurm",
            "cluster": "c",
            "job_id": str(100 + i),
            "step_id": "",
            "state": "COMPLETED",
            "allocated_cores": 2,
            "start_time": START,
            "end_time": END,
            "wall_seconds": 3600.0,
            "cpu_user_seconds": 3000.0,
            "cpu_system_seconds": 10.0,
        }
        for i in range(n)
    ]


def test_load_of_the_wrong_columns_names_every_one_and_counts_the_file(tmp_path):
    from tierlens.records import JOB

    rows = _job_rows(3)
    for r in rows:  # a site's own export: two fields renamed, one added
        r["cpu_time"] = r.pop("cpu_user_seconds")
        r["walltime"] = r.pop("wall_seconds")
        r["site"] = "X"
    f = tmp_path / "jobs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), f)
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["load", "job", str(f), "-w", str(wh)])
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit) and "Traceback" not in r.output  # a message, not a crash
    line = _one_stderr_line(r)
    assert line.startswith("load job failed: 1 file(s) could not be read")
    for name in ("cpu_user_seconds", "wall_seconds", "cpu_time", "walltime", "site"):
        assert name in line, name
    assert "tierlens schema job" in line
    assert not any(n in line for n in JOB.names if n not in ("cpu_user_seconds", "wall_seconds"))
    # the file is one reject, at the file, naming the missing fields
    assert wh_rows(wh, "SELECT record_kind, location, field FROM raw_rejects") == [
        ("job", f"parquet:{f}:offset 0", "cpu_user_seconds, wall_seconds")
    ]
    assert wh_rows(wh, "SELECT count(*) FROM raw_job") == [(0,)]


def test_load_of_a_file_that_is_not_parquet_is_one_line(tmp_path):
    f = tmp_path / "jobs.parquet"
    f.write_text("job_id,cpu\n1,2\n")
    r = CliRunner().invoke(app, ["load", "job", str(f), "-w", str(tmp_path / "wh.duckdb")])
    assert r.exit_code == 1 and "not a Parquet file" in _one_stderr_line(r)
    assert wh_rows(tmp_path / "wh.duckdb", "SELECT field FROM raw_rejects") == [("file",)]


def test_load_of_wrong_typed_values_rejects_their_rows_only(tmp_path):
    rows = _job_rows(3)
    for r, cpu in zip(rows, ["3000", "abc", "12.5"]):
        r["cpu_user_seconds"] = cpu  # written as text; one of them is not a number
    f = tmp_path / "jobs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), f)
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["load", "job", str(f), "-w", str(wh)])
    assert r.exit_code == 0, r.output  # two rows loaded: not a failed load
    assert wh_rows(wh, "SELECT job_id, cpu_user_seconds FROM raw_job ORDER BY job_id") == [
        ("100", 3000.0),
        ("102", 12.5),
    ]
    ((location, field, reason),) = wh_rows(wh, "SELECT location, field, reason FROM raw_rejects")
    assert location == f"parquet:{f}:row 1" and field == "cpu_user_seconds"
    assert "'abc'" in reason and "double" in reason and "tierlens schema job" in reason

    # every row wrong: nothing loaded, the load fails
    for r in rows:
        r["cpu_user_seconds"] = "n/a"
    pq.write_table(pa.Table.from_pylist(rows), f)
    r = CliRunner().invoke(app, ["load", "job", str(f), "-w", str(wh)])
    assert r.exit_code == 1 and "all 3 record(s) were rejected" in _one_stderr_line(r)


# ---- HTCondor history -------------------------------------------------------------------------
def _ad(n: int, cpu: str = "3000.0", host: str | None = "slot1@wn1.example.org", storage: str | None = None) -> str:
    """One completed job's history ad and its banner, in the long form the schedd writes."""
    lines = [
        f'GlobalJobId = "sched#{n}.0#{T0}"',
        f"ClusterId = {n}",
        "ProcId = 0",
        'Owner = "alice"',
        "JobStatus = 4",
        "ExitCode = 0",
        f"QDate = {T0 - 100}",
        f"JobCurrentStartDate = {T0 + 10}",
        f"CompletionDate = {T0 + 1010}",
        "RequestCpus = 1",
        f"RemoteUserCpu = {cpu}",
        "RemoteSysCpu = 5.0",
        "CommittedTime = 1000",
    ]
    if host is not None:
        lines.append(f'LastRemoteHost = "{host}"')
    if storage is not None:
        lines.append(f'MachineAttrTierlensStorageType0 = "{storage}"')
    return "\n".join(lines) + f'\n*** Offset = 0 ClusterId = {n} ProcId = 0 Owner = "alice"\n'


@pytest.mark.parametrize("fast", [True, False])
def test_a_wrong_typed_classad_value_is_a_reject_not_a_null(tmp_path, fast):
    from tierlens.sources.condor.history import history_batches

    ads = [_ad(1), _ad(2, cpu='"abc"'), _ad(3, host=None, storage="nvme"), _ad(4, storage="ssd")]
    path = tmp_path / "history"
    path.write_text("".join(ads))
    offsets = [sum(len(a) for a in ads[:i]) for i in range(len(ads))]
    batches = list(history_batches([path], "pool", fast=fast))
    jobs = {r["job_id"]: r for b in batches if b.kind.value == "job" for r in b.table.to_pylist()}
    # the ad whose RemoteUserCpu is a string gives no row (not a job with no CPU time)
    assert sorted(jobs) == [f"sched#{n}.0#{T0}" for n in (1, 3, 4)]
    assert all(r["cpu_user_seconds"] == 3000.0 for r in jobs.values())
    job_rejects = [j for b in batches if b.kind.value == "job" for j in b.rejects]
    assert [(j.location, j.field) for j in job_rejects] == [(f"{path}:offset {offsets[1]}", "RemoteUserCpu")]
    assert "'abc'" in job_rejects[0].reason and "number" in job_rejects[0].reason
    assert "cpu_user_seconds" in job_rejects[0].reason
    # the tagged ad without a host: its job loads, its tag is a reject that names the attribute to add
    tags = [r["job_id"] for b in batches if b.kind.value == "job_tag" for r in b.table.to_pylist()]
    assert tags == [f"sched#4.0#{T0}"]
    tag_rejects = [j for b in batches if b.kind.value == "job_tag" for j in b.rejects]
    assert [(j.location, j.field) for j in tag_rejects] == [(f"{path}:offset {offsets[2]}", "node")]
    assert "LastRemoteHost" in tag_rejects[0].reason


def test_ingest_condor_of_only_bad_ads_fails(tmp_path):
    path = tmp_path / "history"
    path.write_text(_ad(1, cpu='"abc"') + _ad(2, cpu="true"))
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["ingest", "condor", str(path), "--cluster", "pool", "-w", str(wh)])
    assert r.exit_code == 1, r.output
    assert "all 2 record(s) were rejected" in _one_stderr_line(r)
    assert wh_rows(wh, "SELECT field FROM raw_rejects ORDER BY location") == [("RemoteUserCpu",), ("RemoteUserCpu",)]
    # a good file loads and exits 0
    path.write_text(_ad(3))
    r = CliRunner().invoke(app, ["ingest", "condor", str(path), "--cluster", "pool", "-w", str(wh)])
    assert r.exit_code == 0, r.output


def test_the_exit_codes_are_the_documented_ones():
    from tierlens.cli import common

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("### Exit codes of `tierlens ingest …` and `tierlens load`", 1)[1].split("\n\n")[1]
    documented = {line.split("|")[1].strip(): line.split("|")[2] for line in table.splitlines()[2:]}
    assert documented.keys() == {"0", "1", "2"}
    assert "nothing new" in documented[str(common.EXIT_OK)] and "failed" in documented[str(common.EXIT_FAILED)]
    assert "bad option" in documented[str(common.EXIT_USAGE)]
    admin = (Path(__file__).resolve().parents[1] / "docs" / "site-admin.md").read_text()
    assert "| every record rejected | exit 1" in admin and "IngestFailed" in admin
    r = CliRunner().invoke(app, ["ingest", "slurm", "--format", "xml"])
    assert r.exit_code == 2, r.output  # a usage error: nothing read


# ---- XRootD: the OSG collector's records and the collector's batches ---------------------------
def _osg(**over) -> str:
    rec = {"start_time": T0 * 1000, "end_time": (T0 + 60) * 1000, "filename": "/store/f.root", "read": 1000}
    rec["server_hostname"] = "xrootd01.example.org"
    return json.dumps(rec | over)


def test_osg_records_of_the_wrong_type_are_rejects_naming_the_field_and_line(tmp_path):
    f = tmp_path / "closes.jsonl"
    f.write_text("\n".join([_osg(), _osg(read="lots"), _osg(filesize=[1]), "{not json"]) + "\n")
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["ingest", "xrootd-osg", str(f), "-w", str(wh)])
    assert r.exit_code == 0, r.output  # one record loaded
    rejects = wh_rows(wh, "SELECT location, field, reason FROM raw_rejects ORDER BY location")
    assert [(loc, field) for loc, field, _ in rejects] == [
        (f"{f}:line 2", "read"),
        (f"{f}:line 3", "filesize"),
        (f"{f}:line 4", "record"),
    ]
    assert "'lots' is not a number" in rejects[0][2] and "one JSON object a line" in rejects[2][2]

    broken = tmp_path / "array.json"
    broken.write_text("[" + _osg() + ", {")
    r = CliRunner().invoke(app, ["ingest", "xrootd-osg", str(broken), "-w", str(wh)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "all 1 record(s) were rejected" in _one_stderr_line(r)
    assert wh_rows(wh, f"SELECT field FROM raw_rejects WHERE location LIKE '{broken}:%'") == [("document",)]


def test_a_collector_batch_that_is_not_parquet_fails_the_command_and_the_task(tmp_path):
    folder = tmp_path / "xrootd"
    folder.mkdir()
    (folder / "file_access-g1.parquet").write_bytes(b"PAR1 cut short")
    r = CliRunner().invoke(app, ["ingest", "xrootd", str(folder), "-w", str(tmp_path / "cli.duckdb")])
    assert r.exit_code == 1, r.output
    line = _one_stderr_line(r)
    assert "file_access-g1.parquet" in line and "not a Parquet file" in line
    with pytest.raises(IngestFailed) as failed:
        xrootd.load_interval(tmp_path / "task.duckdb", START, END, xrootd.XrootdOptions(str(folder)))
    assert str(failed.value) == line


def test_the_condor_task_fails_when_every_ad_is_rejected(tmp_path):
    path = tmp_path / "history"
    path.write_text(_ad(1, cpu='"abc"'))
    with pytest.raises(IngestFailed, match="all 1 record"):
        condor.load_interval(tmp_path / "wh.duckdb", START, END, condor.CondorOptions((str(path),), "pool"))


# ---- every reject says what to change ---------------------------------------------------------
def test_a_wrong_typed_sacct_value_is_a_reject_at_its_jobs_offset(tmp_path, sacct_on_path):
    setup, _ = sacct_on_path
    bad = job_2411(922, start=T0 + 20, end=T0 + 200)
    bad["time"]["start"] = "yesterday"
    text = doc_2411(job_2411(921, start=T0 + 10, end=T0 + 100), bad)
    setup("ok", text)
    wh = tmp_path / "wh.duckdb"
    r = _slurm(wh)
    assert r.exit_code == 0, r.output  # job 921 loaded
    ((location, field, reason),) = wh_rows(wh, "SELECT location, field, reason FROM raw_rejects")
    at = int(location.rsplit(" ", 1)[1])
    assert field == "start_time" and json.JSONDecoder().raw_decode(text, at)[0]["job_id"] == 922
    assert "'yesterday'" in reason and "by hand" in reason


def test_spool_rejects_say_what_to_change(tmp_path):
    from tierlens.records import STORAGE_TYPES

    sp = tmp_path / "spool"
    sp.mkdir()
    (sp / "1.0.wn01.json").write_text(spool_record("1", "0", storage_type="floppy"))
    (sp / "2.0.wn01.json").write_text(spool_record("2", "0", job_id=7))
    (sp / "3.0.wn01.json").write_text(spool_record("3", "0"))
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["ingest", "slurm-spool", str(sp), "-w", str(wh)])
    assert r.exit_code == 0, r.output
    reasons = dict(wh_rows(wh, "SELECT field, reason FROM raw_rejects"))
    assert reasons.keys() == {"storage_type", "job_id"}
    assert all(t in reasons["storage_type"] for t in STORAGE_TYPES)
    assert "make -C plugins/slurm install" in reasons["job_id"]


def test_a_rotated_history_file_cut_short_is_one_line_naming_it(tmp_path):
    import gzip

    good, cut = tmp_path / "history.20261001T000000", tmp_path / "history.20261002T000000.gz"
    good.write_text(_ad(1))
    cut.write_bytes(gzip.compress(_ad(2).encode())[:-12])  # a copy taken while it was written
    wh = tmp_path / "wh.duckdb"
    r = CliRunner().invoke(app, ["ingest", "condor", str(tmp_path), "--cluster", "pool", "-w", str(wh)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    line = _one_stderr_line(r)
    assert line.startswith("ingest condor failed: could not read") and str(cut) in line
    assert wh_rows(wh, "SELECT job_id FROM raw_job") == [(f"sched#1.0#{T0}",)]  # the file before it loaded


def test_the_ingest_dags_slurm_task_fails_as_the_dag_calls_it(tmp_path, sacct_on_path):
    """What dags/tierlens_ingest.py runs: the registry's interval load with the options from the
    Airflow Variables lookup."""
    from tierlens.orchestration.settings import source_options
    from tierlens.sources import registry

    setup, _ = sacct_on_path
    setup("dberror")
    variables = {"tierlens_slurm_sacct": "sacct", "tierlens_slurm_tagged_days": "0"}
    with pytest.raises(IngestFailed, match="Problem talking to the database"):
        entry = registry.source("slurm")
        entry.interval_load()(tmp_path / "wh.duckdb", START, END, source_options(entry, variables.get))


def test_tierlens_rejects_says_what_to_change_for_a_records_rule(tmp_path):
    rows = _job_rows(2)
    rows[1]["allocated_cores"] = 0  # the job record's rule: at least 1 core
    f = tmp_path / "jobs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), f)
    wh = tmp_path / "wh.duckdb"
    assert CliRunner().invoke(app, ["load", "job", str(f), "-w", str(wh)]).exit_code == 0
    ((stored,),) = wh_rows(wh, "SELECT reason FROM raw_rejects")
    shown = CliRunner().invoke(app, ["rejects", "-w", str(wh), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    (row,) = json.loads(shown.stdout)
    assert row["field"] == "allocated_cores" and row["reason"].startswith(stored)
    assert "tierlens schema job" in row["reason"] and len(row["reason"]) > len(stored)


def test_a_sacct_that_prints_nothing_is_an_error_not_a_fallback(tmp_path, sacct_on_path):
    setup, calls = sacct_on_path
    setup("silent")
    wh = tmp_path / "wh.duckdb"
    r = _slurm(wh)
    assert r.exit_code == 1, r.output
    assert "printed nothing" in _one_stderr_line(r) and all("--parsable2" not in c for c in calls())
