"""A full disk under a load: on a size-limited tmpfs mounted by the test, `tierlens load` fails with
one line naming the file it could not write and the batch it was loading, leaves nothing of that
batch in the warehouse and no half-written file beside it, and the same command run again once
space is back loads it whole. The transform's history file, written at the end of every transform,
fails the same way: its path named, the previous file whole, no temporary left. A transform on a
full disk fails in one line naming what it could not write, records no run, and the next one
completes (a one-model dbt project keeps the test to seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.rows import count_rows
from tierlens.records import NODE

pytestmark = pytest.mark.integration

TIERLENS = Path(sys.executable).parent / "tierlens"
ROWS = 100_000


@pytest.fixture()
def small_disk(tmp_path: Path):
    """A 64 MiB tmpfs (tests run as root), unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int = 1 << 20) -> Path:
    """Fill ``disk`` up but ``leave`` bytes; returns the filler to delete."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):  # to the last byte
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def test_a_load_on_a_full_disk_names_the_file_loads_nothing_and_the_next_run_completes(
    small_disk: Path, tmp_path: Path
) -> None:
    from tierlens.warehouse import Warehouse

    wh = small_disk / "home" / "warehouse.duckdb"
    Warehouse(wh).close()
    nodes = tmp_path / "nodes.parquet"  # the input is on another disk: only the warehouse fills
    models = ["Samsung PM9A3 3.84TB"] * 4
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "cluster": "c1",
                    "node": f"wn{i:07d}",
                    "storage_type": "nvme",
                    "job_slots": 64,
                    "device_models": models,
                }
                for i in range(ROWS)
            ],
            schema=NODE,
        ),
        nodes,
    )
    filler = _fill(small_disk)
    load = [str(TIERLENS), "load", "node", str(nodes), "-w", str(wh)]
    r = subprocess.run(load, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr and "disk is full" in said, r.stderr
    assert str(wh) in said and f"node batch parquet:{nodes}" in said  # the file and what was written
    assert "nothing of this batch was loaded" in said and "run it again" in said
    filler.unlink()
    assert count_rows(wh, "raw_node") == 0 and count_rows(wh, "raw_batches") == 0  # no half-loaded batch
    leftovers = {p.name for p in wh.parent.iterdir()} - {wh.name, wh.name + ".lock", wh.name + ".wal"}
    assert not leftovers  # nothing half-written beside it
    r = subprocess.run(load, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert count_rows(wh, "raw_node") == ROWS and count_rows(wh, "raw_batches") == 1


def test_the_transform_history_on_a_full_disk_names_its_file_and_keeps_the_previous_one(small_disk: Path) -> None:
    from tierlens.warehouse.history import RunRecord, load_history, save_history, state_path

    wh = small_disk / "warehouse.duckdb"
    history = load_history(wh)
    history.last_run = RunRecord(kind="hourly", started_at="2026-10-01T00:00:00+00:00")
    save_history(wh, history)
    before = state_path(wh).read_bytes()
    filler = _fill(small_disk, leave=0)
    history.last_run = RunRecord(kind="hourly", started_at="2026-10-01T01:00:00+00:00", failures=["x" * 100_000])
    with pytest.raises(OSError, match=f"could not write the transform history {state_path(wh)}"):
        save_history(wh, history)
    assert state_path(wh).read_bytes() == before
    assert sorted(p.name for p in small_disk.iterdir()) == sorted([filler.name, state_path(wh).name])
    filler.unlink()
    save_history(wh, history)
    assert load_history(wh).last_run.started_at == "2026-10-01T01:00:00+00:00"


TINY_PROJECT = {
    "dbt_project.yml": 'name: tiny\nversion: "1.0"\nconfig-version: 2\nprofile: tiny\n',
    "profiles.yml": (
        "tiny:\n  target: duckdb\n  outputs:\n    duckdb:\n      type: duckdb\n"
        "      path: \"{{ env_var('TIERLENS_WAREHOUSE') }}\"\n      schema: main\n      threads: 1\n"
    ),
    "models/one.sql": "select 1 as x\n",
}


def _tiny_project_and_warehouse(small_disk: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The tiny dbt project written out, and a new warehouse in a tierlens home on the small disk."""
    from tierlens.warehouse import Warehouse

    project = tmp_path / "tiny"
    for name, text in TINY_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    home = small_disk / "home"
    wh = home / "warehouse.duckdb"
    Warehouse(wh).close()
    return project, home, wh


def test_a_transform_on_a_full_disk_names_what_it_could_not_write_and_the_next_run_completes(
    small_disk: Path, tmp_path: Path
) -> None:
    from tierlens.warehouse.history import load_history, state_path

    project, home, wh = _tiny_project_and_warehouse(small_disk, tmp_path)
    env = {**os.environ, "TIERLENS_HOME": str(home)}
    transform = [str(TIERLENS), "transform", "-w", str(wh), "--project-dir", str(project), "--wait", "5"]
    filler = _fill(small_disk, leave=0)
    r = subprocess.run(transform, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr and "transform failed: the disk is full: could not write" in said, r.stderr
    assert str(home) in said and "run the transform again" in said
    assert not [p for p in home.rglob("*") if p.name.endswith(".tmp")]  # nothing half-written left
    assert not state_path(wh).exists()  # no run recorded as done
    filler.unlink()
    r = subprocess.run(transform, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dbt build: 1 models" in r.stdout
    assert load_history(wh).last_success is not None


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _grow(wh: Path, rows: int) -> None:
    """``rows`` more rows of random doubles in the working file (8 bytes each: random, they do not compress)."""
    con = duckdb.connect(str(wh))
    try:
        con.execute("CREATE TABLE IF NOT EXISTS filler (x DOUBLE)")
        con.execute(f"INSERT INTO filler SELECT random() FROM range({rows})")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def test_a_publish_on_a_full_disk_names_the_snapshot_keeps_the_previous_one_and_the_next_completes(
    small_disk: Path,
) -> None:
    from tierlens.warehouse import Warehouse
    from tierlens.warehouse.publish import publish, published_path

    wh = small_disk / "warehouse.duckdb"
    Warehouse(wh).close()
    _grow(wh, 1_000_000)
    snapshot = publish(wh)
    before, slots = _sha(snapshot), snapshot.parent / ".slots"
    slots_before = sorted(p.name for p in slots.iterdir())
    _grow(wh, 1_000_000)  # the next publish has ~16 MB to write: a new slot, the old one being published
    filler = _fill(small_disk, leave=2 << 20)
    with pytest.raises(OSError) as failed:
        publish(wh)
    said = str(failed.value)
    assert failed.value.errno == 28 and "could not write the snapshot" in said, said
    assert str(slots) in said and f"a copy of {wh}" in said  # the file, and what was being written
    assert _sha(published_path(wh)) == before  # readers keep the previous snapshot
    assert sorted(p.name for p in slots.iterdir()) == slots_before  # no half-written slot or index left
    assert not [p for p in small_disk.rglob("*") if p.name.endswith(".tmp")]
    filler.unlink()
    publish(wh)
    assert _sha(published_path(wh)) == _sha(wh)  # the next one completes: the working file, byte for byte


def test_the_collector_journal_on_a_full_disk_names_its_segment_keeps_what_it_holds_and_goes_on(
    small_disk: Path,
) -> None:
    from tierlens.collector import journal as jr

    folder = small_disk / "journal" / "w0"
    folder.mkdir(parents=True)
    filler = _fill(small_disk, leave=6 << 20)
    writer = jr.JournalWriter(folder, worker=0, segment_bytes=4 << 20)  # its first 4 MiB fit
    payloads = [bytes([i % 251]) * 1000 for i in range(10_000)]
    written = 0
    with pytest.raises(OSError) as failed:
        for p in payloads:
            writer.append(p, 1_700_000_000.0 + written, ("192.0.2.7", 1094))
            written += 1
    said = str(failed.value)
    second = jr.segment_path(folder, 2)
    assert failed.value.errno == 28 and f"could not make the collector journal's next segment {second}" in said, said
    assert 3_000 < written < len(payloads)  # it failed at the rotation, not before
    assert [p.name for p in folder.iterdir()] == [jr.segment_path(folder, 1).name]  # no half-made segment
    filler.unlink()
    for p in payloads[written:]:  # the receiver goes on with the datagram it could not write
        writer.append(p, 1_700_000_000.0 + written, ("192.0.2.7", 1094))
        written += 1
    writer.close()
    got, torn = [], []
    for _, path in jr.segments(folder):
        for batch, _, messages in jr.read_file(path):
            got += [bytes(d) for _, _, d in batch]
            torn += messages
    assert [n for n, _ in jr.segments(folder)][:2] == [1, 2]  # numbered on, no gap
    assert torn == [] and got == payloads  # every datagram once, in order, none torn


def test_a_transform_whose_publish_finds_the_disk_full_says_the_run_is_recorded_and_the_next_publishes(
    small_disk: Path, tmp_path: Path
) -> None:
    from tierlens.warehouse.history import load_history
    from tierlens.warehouse.publish import published_path

    project, home, wh = _tiny_project_and_warehouse(small_disk, tmp_path)
    _grow(wh, 1_000_000)
    env = {**os.environ, "TIERLENS_HOME": str(home)}
    transform = [str(TIERLENS), "transform", "-w", str(wh), "--project-dir", str(project), "--wait", "5"]
    r = subprocess.run(transform, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    before = _sha(published_path(wh))
    _grow(wh, 1_000_000)  # ~16 MB to publish next, the build itself a few kB
    filler = _fill(small_disk, leave=6 << 20)
    r = subprocess.run(transform, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr and "publish failed: the disk is full: could not write the snapshot" in said
    assert str(published_path(wh).parent) in said and "The run is recorded" in said, said
    assert "dbt build: 1 models" in r.stdout and load_history(wh).last_run.success  # the run itself was done
    assert _sha(published_path(wh)) == before
    assert not [p for p in small_disk.rglob("*") if p.name.endswith(".tmp")]
    filler.unlink()
    r = subprocess.run(transform, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _sha(published_path(wh)) == _sha(wh)
