"""The deployment path as deploy/airflow/README.md documents it, run for real.

``deploy/airflow/standalone.sh`` is started with a PATH that does not hold Airflow's virtualenv
(as from a login shell or systemd), on free loopback ports, with the synthetic site as the only
source: the README's trial block, parsed from the README and run as written (only the checkout
and TIERLENS_HOME replaced by the test's), so README and test cannot drift. The DAGs are switched
on with ``airflow dags unpause`` as the README says; then the test waits for the scheduler's first
hourly ``tierlens_ingest`` run to succeed and the ``tierlens_transform`` run its Asset triggers to
follow (one dbt build, a task per model watching it), and stops every process the script started.
That triggered transform runs with one model broken in the deployment's copy of the dbt project:
that model's task leaves the triggerer for a worker, fails, and once the model is mended its retry
rebuilds it, before the snapshot is published (one build serves both claims: a second transform run
would double the test's time). That first hour either loaded what the synthetic generator, run here with the defaults the README
leaves in place, ends in it (checked in the snapshot readers open and in the task's log), or,
when the generator ends nothing in it, says so in the task log, in raw_source_interval and in
data_completeness (intervals_loaded_nothing): never an empty green run. (How long the DAG's
transform takes beside `tierlens transform` is bench/transform_hour_bench.py's figure, not this test's.)

And every systemd unit under deploy/ passes ``systemd-analyze verify`` without a warning.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest

from support.airflow import AIRFLOW_VENV, DBT
from support.processes import free_port, port_open, process_state, started_by, tail
from support.standalone import paused, trial_script

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
#: Longest wait for the scheduled ingest and the transform it triggers (a busy 2-core host).
DEADLINE_S = 1500
#: The units name the checkout /opt/tierlens, as the deploy READMEs install it.
UNIT_CHECKOUT = "/opt/tierlens"


def stop(proc: subprocess.Popen) -> set[int]:
    """SIGINT to the script's process group (airflow standalone stops its components), then
    SIGTERM and SIGKILL to whatever it started that is still there; returns what was left."""
    pids = started_by(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        # standalone's own shutdown; whatever it leaves is ended below and counted
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        left = {p for p in pids | started_by(proc.pid) if process_state(p)}
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end and any(process_state(p) for p in left):
            time.sleep(0.5)
    if proc.poll() is None:
        proc.wait(timeout=5)
    return {p for p in pids if process_state(p)}


LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def _proc_net_address(hex_addr: str) -> tuple[str, int]:
    """``0100007F:1F90`` (or the 32-digit IPv6 form) from /proc/net/tcp* as (address, port)."""
    host, port = hex_addr.split(":")
    raw = bytes.fromhex(host)
    # the kernel prints each 32-bit word in host (little-endian) order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words), int(port, 16)


def listening_sockets(pids: set[int]) -> set[tuple[str, int]]:
    """The TCP addresses the processes ``pids`` listen on, read from /proc (what `ss -ltnp` shows)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.add(_proc_net_address(fields[1]))
    return found


def test_proc_net_addresses_read_as_ss_prints_them():
    assert _proc_net_address("0100007F:1F90") == ("127.0.0.1", 8080)
    assert _proc_net_address("00000000:2259") == ("0.0.0.0", 8793)
    assert _proc_net_address("00000000000000000000000001000000:2262") == ("::1", 8802)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert ("127.0.0.1", s.getsockname()[1]) in listening_sockets({os.getpid()})


# ---- the scheduler's view ----------------------------------------------------------------------
def dag_runs(db: Path) -> list[dict]:
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute(
                "SELECT dag_id, run_type, state, data_interval_start, data_interval_end, "
                "start_date, end_date, run_id FROM dag_run"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:  # not migrated yet, or busy: ask again
        return []
    return [dict(zip(("dag_id", "run_type", "state", "start", "end", "started", "ended", "run_id"), r)) for r in rows]


def unpause(env: dict[str, str], dag_id: str, log: Path, deadline: float) -> None:
    """``airflow dags unpause`` as the README says, once the DAG processor has stored the DAG
    (before that the command finds nothing to change and still exits 0)."""
    db = Path(env["AIRFLOW_HOME"]) / "airflow.db"
    while True:
        r = subprocess.run(
            [str(AIRFLOW_VENV / "bin" / "airflow"), "dags", "unpause", dag_id, "-y"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if r.returncode == 0 and paused(db, dag_id) is False:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"could not unpause {dag_id}: {r.stdout[-1500:]}{r.stderr[-1500:]}\n{tail(log)}")
        time.sleep(10)


def _utc(text: str) -> datetime:
    t = datetime.fromisoformat(text)
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def synthetic_ending(options, start: datetime, end: datetime) -> dict[str, int]:
    """Jobs and file accesses of the synthetic generator, run here, that end in [start, end)."""
    from tierlens.records import RecordKind
    from tierlens.sources.synthetic import generate

    n = {"job": 0, "file_access": 0}
    for b in generate(options):
        if b.kind in (RecordKind.JOB, RecordKind.FILE_ACCESS):
            col = b.table["end_time"]
            mask = pc.and_(pc.greater_equal(col, start), pc.less(col, end))
            n[b.kind.value] += pc.sum(pc.fill_null(mask, False).cast("int64")).as_py() or 0
    return n


def started_setting(root: int, name: str) -> str | None:
    """``name`` in the environment of a process ``root`` started (what the README's block exported)."""
    for pid in sorted(started_by(root)):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for item in env:
            if item.startswith(f"{name}=".encode()):
                return item.split(b"=", 1)[1].decode()
    return None


def task_log(af_home: Path, dag_id: str, run_id: str, task_id: str) -> str:
    logs = sorted((af_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}").glob(f"task_id={task_id}/**/*.log"))
    logs += sorted((af_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}").glob(f"task_id={task_id}/*.log"))
    assert logs, f"no log of {dag_id}/{run_id}/{task_id} under {af_home / 'logs'}"
    return "\n".join(p.read_text(errors="replace") for p in dict.fromkeys(logs))


def task_instances(db: Path, dag_id: str, run_id: str) -> dict[str, dict]:
    """The scheduler's task instances of one run, by task id: state, try number, start and end."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute(
                "SELECT task_id, state, try_number, start_date, end_date FROM task_instance "
                "WHERE dag_id = ? AND run_id = ?",
                [dag_id, run_id],
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:  # busy: ask again
        return {}
    return {r[0]: dict(zip(("state", "try_number", "start", "end"), r[1:])) for r in rows}


def worker_attempts(task_logs: Path) -> list[str]:
    """The attempts a worker ran of a task (attempt=N.log); a trigger's log is attempt=N.log.trigger.*."""
    if not task_logs.is_dir():
        return []
    return sorted(f.name for f in task_logs.iterdir() if re.fullmatch(r"attempt=\d+\.log", f.name))


#: The leaf mart the failure phase breaks: no model, test or task reads it but its own.
FAULTY_MODEL = "hardware_options"
#: A relation that does not exist: dbt compiles the model, DuckDB fails it when it runs.
PLANTED_FAULT = "no_such_relation_planted_by_the_test"


def plant_fault(project: Path) -> str:
    """Break FAULTY_MODEL in the deployment's copy of the dbt project; returns the model's good text."""
    model = next(project.glob(f"models/**/{FAULTY_MODEL}.sql"))
    good = model.read_text()
    assert "ref('stg_sim_efficiency_runs')" in good
    model.write_text(good.replace("{{ ref('stg_sim_efficiency_runs') }}", PLANTED_FAULT, 1))
    return good


def mend_when_up_for_retry(db: Path, project: Path, good: str, run_id: str) -> bool:
    """Mend the broken model once its task waits for its retry; whether it is mended."""
    model = next(project.glob(f"models/**/{FAULTY_MODEL}.sql"))
    if model.read_text() == good:
        return True
    if task_instances(db, "tierlens_transform", run_id).get(f"{FAULTY_MODEL}_build", {}).get("state") == "up_for_retry":
        model.write_text(good)
        return True
    return False


def failed_model_was_retried_on_a_worker(af_home: Path, run_id: str) -> None:
    """The broken model's task went from the triggerer to a worker and failed there (up_for_retry,
    with dbt's error in the build's log); the retry, on a worker, rebuilt that model alone and
    passed; every other model's task passed in the triggerer; the snapshot was published only after
    the retry."""
    tis = task_instances(af_home / "airflow.db", "tierlens_transform", run_id)
    task_id = f"{FAULTY_MODEL}_build"
    run_logs = af_home / "logs" / "dag_id=tierlens_transform" / f"run_id={run_id}"
    task_logs = run_logs / f"task_id={task_id}"
    faulty = tis[task_id]
    # first attempt failed on a worker, the second (the retry) rebuilt the model on a worker
    assert faulty["state"] == "success" and faulty["try_number"] == 2, faulty
    assert worker_attempts(task_logs) == ["attempt=1.log", "attempt=2.log"], sorted(task_logs.iterdir())
    # the build's log has dbt's own error, naming the missing relation; the worker's first
    # attempt names the model that failed; the retry rebuilt it
    build_log = "\n".join(p.read_text(errors="replace") for p in run_logs.glob("task_id=dbt_producer*/*.log*"))
    assert PLANTED_FAULT in build_log, build_log[-3000:]
    first = (task_logs / "attempt=1.log").read_text(errors="replace")
    retry_log = (task_logs / "attempt=2.log").read_text(errors="replace")
    assert FAULTY_MODEL in first, first[-3000:]
    assert FAULTY_MODEL in retry_log, retry_log[-3000:]
    # every other model's task passed in the triggerer: a log of its trigger, none of a worker
    others = [w for w in run_logs.glob("task_id=*_build") if w.name != f"task_id={task_id}"]
    assert len(others) >= 40, others
    on_a_worker = [w.name for w in others if worker_attempts(w)]
    assert on_a_worker == [] and all(list(w.glob("attempt=1.log.trigger.*.log")) for w in others), on_a_worker
    # readers saw this run's snapshot only once the retried model had passed
    publish = tis["publish_snapshot"]
    assert publish["state"] == "success" and _utc(publish["start"]) >= _utc(faulty["end"]), (publish, faulty)


def first_run_due(start_date: datetime, now: datetime) -> datetime:
    """When an hourly schedule from ``start_date`` (catchup off) starts its first run: at once for
    the last whole hour, or at 01:00 when the hour since midnight is not over yet."""
    return max(now, start_date + timedelta(hours=1))


def test_trial_block_is_what_the_test_runs(tmp_path: Path) -> None:
    script = trial_script(tmp_path / "home")
    assert "/opt/tierlens" not in script and "/srv/" not in script
    assert f"export TIERLENS_HOME={tmp_path / 'home'}" in script
    day = datetime(2026, 11, 26, tzinfo=timezone.utc)
    assert first_run_due(day, day + timedelta(minutes=20)) == day + timedelta(hours=1)
    assert first_run_due(day, day + timedelta(hours=13, minutes=20)) == day + timedelta(hours=13, minutes=20)


@pytest.mark.timeout(DEADLINE_S + 3600 + 300)
def test_standalone_script_schedules_ingest_and_triggers_transform(tmp_path: Path) -> None:
    """deploy/airflow/README.md's trial block as written: only TIERLENS_HOME, TIERLENS_SOURCES=synthetic
    and TIERLENS_START_DATE=$(date -u +%F); the test adds free ports, the virtualenvs' paths, a copy
    of the dbt project with one model broken (mended once its task waits for its retry), one retry
    15 s after a failure, and a longer DAG import timeout (a busy CI host)."""
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        pytest.skip(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make test` (or `make airflow-venv`) creates it")
    from tierlens.sources.registry import source
    from tierlens.sources.synthetic.stored import synthetic_options

    home = tmp_path / "tierlens"
    af_home = home / "airflow"  # standalone.sh's default
    project = tmp_path / "dbt"
    shutil.copytree(REPO / "dbt", project, ignore=shutil.ignore_patterns("target", "logs", ".user.yml"))
    api_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIERLENS_"))}
    env.update(
        {
            # a PATH without Airflow's virtualenv: the script must put it there
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "AIRFLOW_VENV": str(AIRFLOW_VENV),
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "TIERLENS_DBT_EXECUTABLE": str(DBT),
            # one retry, soon: the broken model is mended before it
            "TIERLENS_RETRIES": "1",
            "TIERLENS_RETRY_DELAY_MINUTES": "0.25",
            # a copy of the shipped project, so the test can break one model in it
            "TIERLENS_DBT_PROJECT_DIR": str(project),
        }
    )
    if os.environ.get("PYTHONPATH"):  # a worktree's tierlens rather than the one installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    good_model = plant_fault(project)
    log = tmp_path / "standalone.log"
    began = datetime.now(timezone.utc)
    today = began.replace(hour=0, minute=0, second=0, microsecond=0)
    deadline = time.monotonic() + DEADLINE_S + (first_run_due(today, began) - began).total_seconds()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", trial_script(home)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    left: set[int] = set()
    start_date = None
    try:
        # the transform first: an Asset event queues runs of unpaused consumers only
        unpause(env | {"AIRFLOW_HOME": str(af_home)}, "tierlens_transform", log, deadline)
        start_date = started_setting(proc.pid, "TIERLENS_START_DATE")
        unpause(env | {"AIRFLOW_HOME": str(af_home)}, "tierlens_ingest", log, deadline)
        db = af_home / "airflow.db"
        while True:
            runs = dag_runs(db)
            ingest = sorted(
                (r for r in runs if r["dag_id"] == "tierlens_ingest" and r["run_type"] == "scheduled"),
                key=lambda r: r["start"],
            )
            transform = [r for r in runs if r["dag_id"] == "tierlens_transform"]
            mended = all([mend_when_up_for_retry(db, project, good_model, r["run_id"]) for r in transform])
            failed = [r for r in ingest + transform if r["state"] == "failed"]
            assert not failed, f"{failed}\n{tail(log)}"
            if ingest and ingest[0]["state"] == "success" and any(r["state"] == "success" for r in transform):
                assert mended, f"{FAULTY_MODEL}_build never went up for retry: {transform}"
                break
            assert proc.poll() is None, f"standalone.sh exited {proc.returncode}\n{tail(log)}"
            assert time.monotonic() < deadline, f"no scheduled ingest + triggered transform: {runs}\n{tail(log)}"
            time.sleep(5)
        assert "FileNotFoundError" not in log.read_text(errors="replace")
        assert all(r["run_type"] == "asset_triggered" for r in transform), transform
        assert port_open(api_port)
        listening = listening_sockets(started_by(proc.pid))
        assert ("127.0.0.1", api_port) in listening, listening
        assert all(addr in LOOPBACK for addr, _ in listening), f"listening beyond loopback: {listening}"
    finally:
        left = stop(proc)
    assert not left, f"still running after stop: {sorted(left)}"
    assert not port_open(api_port)

    # the README's `date -u +%F`, as the script saw it
    assert start_date == today.strftime("%Y-%m-%d") or start_date == began.strftime("%Y-%m-%d"), start_date
    run = ingest[0]
    start, end = _utc(run["start"]), _utc(run["end"])
    # the hourly default: the last whole hour at the time of switching on, not before start_date
    assert end - start == timedelta(hours=1) and start >= _utc(start_date) and end <= datetime.now(timezone.utc)
    # the synthetic site with the defaults the README leaves in place
    defaults = {name: default for name, (default, _) in source("synthetic").settings.items()}
    assert defaults["synthetic_start"] == ""  # so it starts at start_date
    options = synthetic_options(
        start_date,
        days=float(defaults["synthetic_days"]),
        seed=int(defaults["synthetic_seed"]),
        nodes_per_type=int(defaults["synthetic_nodes_per_type"]),
    )
    expected = synthetic_ending(options, start, end)
    log_text = task_log(af_home, "tierlens_ingest", run["run_id"], "ingest_synthetic")
    con = duckdb.connect(str(home / "published" / "warehouse.duckdb"), read_only=True)
    try:
        jobs = con.execute(
            "SELECT count(*) FROM main.raw_job WHERE end_time >= ? AND end_time < ?", [start, end]
        ).fetchall()[0][0]
        intervals = con.execute(
            "SELECT interval_start, records, outcome, reason FROM main.raw_source_interval "
            "WHERE source = 'synthetic' ORDER BY interval_start"
        ).fetchall()
        nothing = con.execute(
            "SELECT coalesce(sum(numerator), 0) FROM marts.data_completeness "
            "WHERE grain = 'source' AND subject = 'synthetic' AND measure = 'intervals_loaded_nothing'"
        ).fetchall()[0][0]
        # (the first hour's: a later hourly run may have loaded more since the build)
        marts = con.execute(
            "SELECT count(*) FROM marts.job_efficiency WHERE end_time >= ? AND end_time < ?", [start, end]
        ).fetchall()[0][0]
        whole_jobs = con.execute(
            "SELECT count(*) FROM main.raw_job WHERE step_id = '' AND end_time >= ? AND end_time < ?", [start, end]
        ).fetchall()[0][0]
    finally:
        con.close()
    first = [i for i in intervals if _utc(str(i[0])) == start]
    assert len(first) == 1, intervals
    _, records, outcome, reason = first[0]
    # every interval up to the first said what it brought, those that brought nothing are counted
    # (a later hour's record may have come after the build, so it bounds the count from above)
    empty = [_utc(str(i[0])) for i in intervals if i[2] != "loaded"]
    assert sum(1 for s in empty if s <= start) <= nothing <= len(empty), (nothing, intervals)
    assert marts == whole_jobs
    if expected["job"] or expected["file_access"]:
        # the first hour loaded what the site simulates for it, and its log says how much
        print(f"\nfirst scheduled hour [{start:%H:%M}, {end:%H:%M}) UTC loaded {expected} (generator's count)")
        assert jobs == expected["job"] and outcome == "loaded" and reason is None, (jobs, expected, first)
        assert records >= expected["job"] + expected["file_access"], (records, expected)
        for kind, n in expected.items():
            if n:
                assert re.search(rf"\b{n:,} {kind}\b", log_text), (kind, n, log_text[-3000:])
    else:
        # a quiet or out-of-window hour: said in the task log and in data_completeness
        print(f"\nfirst scheduled hour [{start:%H:%M}, {end:%H:%M}) UTC: the generator ends nothing in it")
        assert jobs == 0 and records == 0 and outcome != "loaded" and reason, first
        assert "synthetic loaded nothing for" in log_text, log_text[-3000:]
        assert nothing >= 1

    done = next(r for r in transform if r["state"] == "success")
    failed_model_was_retried_on_a_worker(af_home, done["run_id"])


# ---- systemd units -----------------------------------------------------------------------------
def units() -> list[Path]:
    return sorted(
        p for ext in ("service", "timer", "socket", "path", "target") for p in (REPO / "deploy").rglob(f"*.{ext}")
    )


def verify(unit: Path, tmp_path: Path) -> str:
    """``systemd-analyze verify`` of ``unit`` with /opt/tierlens read as this checkout; its
    complaints (it exits 0 on unknown keys and bad values, so they are read, not the status)."""
    # Beside the units of its own folder, so a service that names its socket unit finds it.
    folder = tmp_path / unit.parent.name
    folder.mkdir(exist_ok=True)
    for sibling in units():
        if sibling.parent == unit.parent:
            (folder / sibling.name).write_text(sibling.read_text().replace(UNIT_CHECKOUT, str(REPO)))
    copy = folder / unit.name
    copy.write_text(unit.read_text().replace(UNIT_CHECKOUT, str(REPO)))
    r = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True, timeout=120
    )
    complaints = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    if r.returncode != 0 and not complaints:
        complaints = [f"exit status {r.returncode}"]
    return "\n".join(complaints)


def test_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze: Debian's systemd package (deploy/ci/system-packages.txt)")
    found = units()
    assert REPO / "deploy" / "airflow" / "tierlens-airflow.service" in found
    for unit in found:
        assert verify(unit, tmp_path) == "", unit
    # the check can fail: a unit with a mistyped key and a missing command is caught
    bad = tmp_path / "bad" / "tierlens-bad.service"
    bad.parent.mkdir()
    bad.write_text("[Service]\nExecStart=/opt/tierlens/no-such-script\nRestart=sometimes\n")
    complaints = verify(bad, tmp_path)
    assert re.search(r"restart specifier", complaints) and re.search(r"no-such-script", complaints)
