"""The deployment path as deploy/airflow/README.md documents it, run for real.

``deploy/airflow/standalone.sh`` is started with a PATH that does not hold Airflow's virtualenv
(as from a login shell or systemd), on free loopback ports, with the synthetic site as the only
source. The DAGs are switched on with ``airflow dags unpause`` as the README says; then the test
waits for the scheduler's own ``tierlens_ingest`` run (daily here, so that exactly one runs) to
succeed and the ``tierlens_transform`` run its Asset triggers to follow (one dbt build, a task per
model watching it), checks the jobs readers see against the synthetic generator run here for its
interval, and stops every process the script started. It then prints how long the scheduled
transform run took beside `tierlens transform` on a copy of the same raw warehouse (a figure for
bench/README.md, not an assertion).

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
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
AIRFLOW_VENV = Path(os.environ.get("TIERLENS_AIRFLOW_VENV", REPO / ".venv-airflow"))
DBT = Path(sys.executable).parent / "dbt"
#: Longest wait for the scheduled ingest and the transform it triggers (a busy 2-core host).
DEADLINE_S = 1500
#: The units name the checkout /opt/tierlens, as the deploy READMEs install it.
UNIT_CHECKOUT = "/opt/tierlens"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---- processes ---------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, session id) of a live process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return (int(fields[1]), int(fields[3])) if fields[0] != "Z" else None


def started_by(root: int) -> set[int]:
    """``root`` and every live process below it or in its session (it leads a new session)."""
    procs = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))}
    found = {pid for pid, (_, sid) in procs.items() if sid == root} | ({root} if root in procs else set())
    grew = True
    while grew:
        below = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        found |= below
        grew = bool(below)
    return found


def stop(proc: subprocess.Popen) -> set[int]:
    """SIGINT to the script's process group (airflow standalone stops its components), then
    SIGTERM and SIGKILL to whatever it started that is still there; returns what was left."""
    pids = started_by(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        pass
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        left = {p for p in pids | started_by(proc.pid) if _stat(p)}
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end and any(_stat(p) for p in left):
            time.sleep(0.5)
    if proc.poll() is None:
        proc.wait(timeout=5)
    return {p for p in pids if _stat(p)}


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
                "start_date, end_date FROM dag_run"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:  # not migrated yet, or busy: ask again
        return []
    return [dict(zip(("dag_id", "run_type", "state", "start", "end", "started", "ended"), r)) for r in rows]


def paused(db: Path, dag_id: str) -> bool | None:
    """Whether the scheduler has ``dag_id`` paused; None while the DAG processor has not stored it."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT is_paused FROM dag WHERE dag_id = ?", [dag_id]).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return bool(rows[0][0]) if rows else None


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


def tail(log: Path, n: int = 6000) -> str:
    return log.read_text(errors="replace")[-n:] if log.exists() else ""


def _utc(text: str) -> datetime:
    t = datetime.fromisoformat(text)
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def synthetic_jobs_ending(options, start: datetime, end: datetime) -> int:
    from tierlens.records import RecordKind
    from tierlens.sources.synthetic import generate

    n = 0
    for b in generate(options):
        if b.kind is RecordKind.JOB:
            col = b.table["end_time"]
            mask = pc.and_(pc.greater_equal(col, start), pc.less(col, end))
            n += pc.sum(pc.fill_null(mask, False).cast("int64")).as_py() or 0
    return n


@pytest.mark.timeout(DEADLINE_S + 300)
def test_standalone_script_schedules_ingest_and_triggers_transform(tmp_path: Path) -> None:
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        pytest.skip(f"no Airflow virtualenv at {AIRFLOW_VENV}: `make test` (or `make airflow-venv`) creates it")
    from tierlens.orchestration import synthetic_options

    now = datetime.now(timezone.utc)
    # Daily at this hour: the first scheduled run loads the 24 hours to the last whole hour, and
    # no second run comes while the test waits (an hourly one would at the next hour).
    schedule = f"0 {now.hour} * * *"
    # two synthetic days that hold those 24 hours
    syn_start = (now - timedelta(days=1)).strftime("%Y-%m-%d")
    home, af_home = tmp_path / "tierlens", tmp_path / "airflow"
    api_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIERLENS_"))}
    env.update(
        {
            # a PATH without Airflow's virtualenv: the script must put it there
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "AIRFLOW_VENV": str(AIRFLOW_VENV),
            "AIRFLOW_HOME": str(af_home),
            "TIERLENS_HOME": str(home),
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "TIERLENS_INGEST_SCHEDULE": schedule,
            "TIERLENS_SOURCES": "synthetic",
            "TIERLENS_SYNTHETIC_START": syn_start,
            "TIERLENS_SYNTHETIC_DAYS": "2",
            "TIERLENS_SYNTHETIC_NODES_PER_TYPE": "1",
            "TIERLENS_SYNTHETIC_SEED": "7",
            "TIERLENS_START_DATE": (now - timedelta(days=3)).strftime("%Y-%m-%d"),
            "TIERLENS_DBT_EXECUTABLE": str(DBT),
            "TIERLENS_RETRIES": "0",
        }
    )
    if os.environ.get("PYTHONPATH"):  # a worktree's tierlens rather than the one installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    log = tmp_path / "standalone.log"
    deadline = time.monotonic() + DEADLINE_S
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", str(REPO / "deploy" / "airflow" / "standalone.sh")],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    left: set[int] = set()
    try:
        # the transform first: an Asset event queues runs of unpaused consumers only
        unpause(env, "tierlens_transform", log, deadline)
        unpause(env, "tierlens_ingest", log, deadline)
        db = af_home / "airflow.db"
        while True:
            runs = dag_runs(db)
            ingest = [r for r in runs if r["dag_id"] == "tierlens_ingest" and r["run_type"] == "scheduled"]
            transform = [r for r in runs if r["dag_id"] == "tierlens_transform"]
            failed = [r for r in ingest + transform if r["state"] == "failed"]
            assert not failed, f"{failed}\n{tail(log)}"
            if any(r["state"] == "success" for r in ingest) and any(r["state"] == "success" for r in transform):
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

    run = next(r for r in ingest if r["state"] == "success")
    start, end = _utc(run["start"]), _utc(run["end"])
    assert end - start == timedelta(days=1) and end <= now and len(ingest) == 1
    options = synthetic_options(syn_start, days=2, seed=7, nodes_per_type=1)
    expected = synthetic_jobs_ending(options, start, end)
    assert expected > 0, "the synthetic day holds jobs"
    con = duckdb.connect(str(home / "published" / "warehouse.duckdb"), read_only=True)
    try:
        raw = con.execute("SELECT count(*) FROM main.raw_job").fetchall()[0][0]
        # no interval passes silently: the scheduled one says what it brought
        intervals = con.execute(
            "SELECT source, interval_start, interval_end, records, outcome, reason FROM main.raw_source_interval"
        ).fetchall()
        marts = con.execute("SELECT count(*) FROM marts.job_efficiency").fetchall()[0][0]
        whole_jobs = con.execute("SELECT count(*) FROM main.raw_job WHERE step_id = ''").fetchall()[0][0]
    finally:
        con.close()
    assert raw == expected and marts == whole_jobs > 0
    assert [(i[0], _utc(str(i[1])), _utc(str(i[2])), i[4]) for i in intervals] == [
        ("synthetic", start, end, "loaded")
    ], intervals
    assert intervals[0][3] >= expected

    # the same transform by hand on the same raw tables (the run built the models from nothing)
    done = next(r for r in transform if r["state"] == "success")
    dag_seconds = (_utc(done["ended"]) - _utc(done["started"])).total_seconds()
    copy = tmp_path / "by-hand" / "warehouse.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(home / "warehouse.duckdb", copy)
    con = duckdb.connect(str(copy))
    try:
        for schema in ("marts", "intermediate", "staging", "seeds"):
            con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        con.close()
    by_hand_env = {k: v for k, v in os.environ.items() if not k.startswith("TIERLENS_")}
    by_hand_env["TIERLENS_HOME"] = str(copy.parent)
    t0 = time.monotonic()
    r = subprocess.run(
        [str(Path(sys.executable).parent / "tierlens"), "transform", "-w", str(copy)],
        env=by_hand_env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    by_hand = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(
        f"\nscheduled tierlens_transform run: {dag_seconds:.1f} s; `tierlens transform` on a copy of the "
        f"same raw warehouse: {by_hand:.1f} s; ratio {dag_seconds / by_hand:.2f}; load {os.getloadavg()}"
    )


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
