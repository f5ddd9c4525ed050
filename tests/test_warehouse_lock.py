"""Two writers at once: the warehouse's writer lock (warehouse/lock.py) between real processes.

A transform started while another holds the warehouse waits (bounded by --wait) or refuses naming
the holder; a load beside a transform waits or, from the Airflow task, lands its batches; the lock
of a holder that was SIGKILLed is taken over and said in one line; publish and retention take it
too; the lock file is never created through a symlink.

The holder is a real `tierlens transform` where the test needs one that runs, else a small Python
process holding the lock (as a transform) until it is told to go or killed. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.rows import count_rows
from tierlens.records import NODE

pytestmark = pytest.mark.integration

TIERLENS = Path(sys.executable).parent / "tierlens"

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tierlens.warehouse.lock import warehouse_lock

    warehouse, release = sys.argv[1], Path(sys.argv[2])
    with warehouse_lock(warehouse, "transform", wait=0):
        print("held", flush=True)
        deadline = time.monotonic() + 60  # never outlives a test that forgot it
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    """
)


class Holder:
    """A process holding the writer lock of a warehouse until ``release()`` or ``kill()``."""

    def __init__(self, warehouse: Path, tmp: Path) -> None:
        self.go = tmp / f"release-{time.monotonic_ns()}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(warehouse), str(self.go)], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.go.touch()
        assert self.proc.wait(timeout=20) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _tierlens(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(TIERLENS), *args], env=env or _env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture()
def wh(tmp_path: Path) -> Path:
    from tierlens.warehouse import Warehouse

    path = tmp_path / "home" / "warehouse.duckdb"
    Warehouse(path).close()
    return path


def _nodes(tmp_path: Path, n: int = 3) -> Path:
    table = pa.Table.from_pylist(
        [{"cluster": "c1", "node": f"wn{i:02d}", "storage_type": "nvme", "job_slots": 64} for i in range(n)],
        schema=NODE,
    )
    path = tmp_path / "node.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize(
    "how", [[], ["--backfill", "2026-10-01", "2026-10-02"], ["--full-refresh"]], ids=["plain", "backfill", "full"]
)
def test_a_transform_beside_another_refuses_naming_the_holder(wh: Path, tmp_path: Path, how: list[str]) -> None:
    holder = Holder(wh, tmp_path)
    try:
        started = time.monotonic()
        r = _tierlens("transform", "-w", str(wh), *how, "--wait", "1")
        waited = time.monotonic() - started
    finally:
        holder.release()
    assert r.returncode == 1, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert f"pid {holder.proc.pid} on {socket.gethostname()}" in said
    assert "transform:" in said and "since 20" in said  # what it does, its command, since when
    assert "--wait" in said  # and what to do
    assert "dbt build" not in r.stdout
    assert 1 <= waited < 30


def test_a_transform_waits_for_the_holder_then_runs(wh: Path, tmp_path: Path) -> None:
    holder = Holder(wh, tmp_path)
    proc = subprocess.Popen(
        [str(TIERLENS), "transform", "-w", str(wh), "--full-refresh", "--wait", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2)
    assert proc.poll() is None  # still waiting: it neither refused nor went ahead
    holder.release()
    out, errs = proc.communicate(timeout=120)
    # it went ahead once the lock was free: an empty warehouse has nothing to refresh
    assert proc.returncode == 2, out + errs
    assert "holds no jobs or file accesses" in " ".join(errs.split())
    assert "busy" not in errs and "took over" not in errs


def test_the_lock_of_a_sigkilled_transform_is_taken_over_in_one_line(wh: Path, tmp_path: Path) -> None:
    from tierlens.warehouse.lock import lock_path, read_holder

    first = subprocess.Popen(
        [str(TIERLENS), "transform", "-w", str(wh), "--wait", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: the kill takes its dbt with it, as a scheduler's would
    )
    try:
        deadline = time.monotonic() + 60
        while (held := read_holder(lock_path(wh))) is None and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held is not None and held.pid == first.pid and held.purpose == "transform"
        assert "transform" in held.command
        second = _tierlens("transform", "-w", str(wh), "--wait", "0")
        assert second.returncode == 1 and f"pid {first.pid}" in second.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=20)
    started = time.monotonic()
    r = _tierlens("transform", "-w", str(wh), "--backfill", "2026-10-02", "2026-10-01", "--wait", "30")
    assert time.monotonic() - started < 25  # no wait for the dead holder
    took = [line for line in r.stderr.splitlines() if "took over" in line]
    assert len(took) == 1 and f"pid {first.pid}" in took[0] and "killed or crashed" in took[0], r.stderr
    # then it went ahead: the back-fill range is refused for itself, not for the lock
    assert r.returncode == 2 and "must be after its start" in r.stderr
    assert read_holder(lock_path(wh)) is None  # released cleanly: no record left behind


def test_a_load_beside_a_transform_waits_or_refuses_and_loads_nothing(wh: Path, tmp_path: Path) -> None:
    nodes = _nodes(tmp_path)
    holder = Holder(wh, tmp_path)
    try:
        r = _tierlens("load", "node", str(nodes), "-w", str(wh), env=_env(TIERLENS_LOCK_WAIT_SECONDS="1"))
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"pid {holder.proc.pid}" in " ".join(r.stderr.split())
        assert count_rows(wh, "raw_node") == 0 and count_rows(wh, "raw_batches") == 0
        waiting = subprocess.Popen(
            [str(TIERLENS), "load", "node", str(nodes), "-w", str(wh)],
            env=_env(TIERLENS_LOCK_WAIT_SECONDS="60"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)
        assert waiting.poll() is None
    finally:
        holder.release()
    out, errs = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, out + errs
    assert count_rows(wh, "raw_node") == 3


def test_the_airflow_load_lands_its_batches_while_a_transform_holds_the_warehouse(wh: Path, tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from tierlens.ingest.interval import load_interval
    from tierlens.orchestration import tasks
    from tierlens.pipeline import parquet_batches
    from tierlens.records import RecordKind
    from tierlens.warehouse.landing import landed_files

    start, end = datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 10, 1, 1, tzinfo=timezone.utc)
    holder = Holder(wh, tmp_path)
    try:
        started = time.monotonic()
        result = load_interval("nodes", parquet_batches(RecordKind.NODE, [_nodes(tmp_path)]), wh, start, end)
        assert time.monotonic() - started < 10  # it did not wait for the transform
        assert result["landed"] == 1 and "busy" in result["warehouse_busy"]
        assert len(landed_files(wh)) == 1 and count_rows(wh, "raw_node") == 0
    finally:
        holder.release()
    assert tasks.load_landed(wh) == {"files": 1, "rows_loaded": 3}
    assert count_rows(wh, "raw_node") == 3 and not landed_files(wh)


def test_publish_and_retention_wait_for_the_writer_lock(wh: Path, tmp_path: Path, monkeypatch) -> None:
    from tierlens.warehouse.history import apply_retention
    from tierlens.warehouse.lock import WarehouseLocked
    from tierlens.warehouse.publish import publish, published_path

    monkeypatch.setenv("TIERLENS_LOCK_WAIT_SECONDS", "0.5")
    holder = Holder(wh, tmp_path)
    try:
        with pytest.raises(WarehouseLocked, match=f"pid {holder.proc.pid}"):
            publish(wh)
        with pytest.raises(WarehouseLocked, match="retention waited"):
            apply_retention(wh, 3)
        assert not published_path(wh).exists()
    finally:
        holder.release()
    assert publish(wh) == published_path(wh)
    assert apply_retention(wh, 3).months == 3


def test_the_lock_file_is_never_created_through_a_symlink(wh: Path, tmp_path: Path) -> None:
    from tierlens.warehouse.lock import lock_path

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    lock_path(wh).symlink_to(victim)
    r = _tierlens("transform", "-w", str(wh), "--wait", "0")
    assert r.returncode != 0
    assert "symlink" in r.stderr
    assert victim.read_text() == "precious\n"


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    out = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                cmdline = (stat_file.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append((int(stat_file.parent.name), cmdline))
        except (OSError, IndexError, ValueError):
            continue
    return out


def test_a_transform_killed_alone_keeps_the_lock_while_its_dbt_runs(wh: Path, tmp_path: Path) -> None:
    from tierlens.warehouse.lock import warehouse_lock

    first = subprocess.Popen(
        [str(TIERLENS), "transform", "-w", str(wh), "--wait", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not (dbt := [c for c in _children(first.pid) if "dbt" in c[1]]) and time.monotonic() < deadline:
            assert first.poll() is None, "the transform ended before its dbt started"
            time.sleep(0.1)
        assert dbt, "no dbt child within 90 s"
        first.send_signal(signal.SIGKILL)  # the transform alone: its dbt keeps running
        first.wait(timeout=20)
        r = _tierlens("transform", "-w", str(wh), "--wait", "0")
        said = " ".join(r.stderr.split())
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"pid {first.pid} has ended, but a process it started (its dbt) still runs" in said
    finally:
        os.killpg(first.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid, _ in dbt) and time.monotonic() < deadline:
        time.sleep(0.1)
    said: list[str] = []
    with warehouse_lock(wh, "transform", wait=10, say=said.append):
        pass  # free once that dbt has ended, and taken over from the killed transform
    assert len(said) == 1 and f"pid {first.pid}" in said[0]
