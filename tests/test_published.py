"""Readers never block the pipeline: they open the published snapshot, not the working file.

The commands run as a site would run them, each in its own process: `tierlens load` and
`tierlens transform` (the pipeline) while another process holds a read-only session open on the
published file, and `tierlens sql` meanwhile. Expected counts come from the Parquet files loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from support.processes import python_session, read_twice
from tierlens.warehouse.publish import publish, published_path, reader_path

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TIERLENS = Path(sys.executable).parent / "tierlens"

READER = r"""
import duckdb, json, sys
def counts(con):
    return {"raw_job": con.execute("SELECT count(*) FROM main.raw_job").fetchall()[0][0],
            "stg_job": con.execute("SELECT count(*) FROM staging.stg_job").fetchall()[0][0],
            "job_efficiency": con.execute("SELECT count(*) FROM marts.job_efficiency").fetchall()[0][0]}
con = duckdb.connect(sys.argv[1], read_only=True)
print(json.dumps(counts(con)), flush=True)
sys.stdin.readline()                       # the pipeline runs meanwhile
print(json.dumps(counts(con)), flush=True)  # same session: still the snapshot it opened
con.close()
con = duckdb.connect(sys.argv[1], read_only=True)
print(json.dumps(counts(con)), flush=True)  # next open: the new snapshot
"""


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    r = subprocess.run([str(TIERLENS), *args], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"tierlens {' '.join(args)}: {r.stdout[-3000:]}{r.stderr[-3000:]}"
    return r


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    """Half a day of the synthetic site as Parquet, one file per record; the jobs in two parts."""
    from tierlens.orchestration import synthetic_options, synthetic_site_files

    folder = synthetic_site_files(synthetic_options("2026-10-01", days=0.5, nodes_per_type=1), tmp_path / "syn")
    jobs = pq.read_table(folder / "job.parquet")
    split = jobs.num_rows * 2 // 3
    out = {kind: folder / f"{kind}.parquet" for kind in ("node", "job_tag", "file_access")}
    out["jobs_a"], out["jobs_b"] = tmp_path / "jobs_a.parquet", tmp_path / "jobs_b.parquet"
    pq.write_table(jobs.slice(0, split), out["jobs_a"])
    pq.write_table(jobs.slice(split), out["jobs_b"])
    return out


@pytest.mark.timeout(1200)
def test_reader_session_on_published_file_blocks_neither_load_nor_transform(site, tmp_path: Path) -> None:
    home = tmp_path / "home"
    wh = home / "warehouse.duckdb"
    env = dict(os.environ, TIERLENS_HOME=str(home), DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    n_a = pq.ParquetFile(site["jobs_a"]).metadata.num_rows
    n_b = pq.ParquetFile(site["jobs_b"]).metadata.num_rows
    for kind in ("node", "job_tag", "file_access"):
        run("load", kind, str(site[kind]), "-w", str(wh), env=env)
    run("load", "job", str(site["jobs_a"]), "-w", str(wh), env=env)
    run("transform", "-w", str(wh), env=env)
    published = published_path(wh)
    assert published == home / "published" / "warehouse.duckdb" and published.is_file()

    reader = python_session(READER, str(published))
    try:
        first = json.loads(reader.stdout.readline() or "null")
        assert first is not None, reader.stderr.read()
        assert first["raw_job"] == first["stg_job"] == n_a
        # the pipeline, while that session stays open
        run("load", "job", str(site["jobs_b"]), "-w", str(wh), env=env)
        run("transform", "-w", str(wh), env=env)
        query = tmp_path / "jobs.sql"
        query.write_text("-- How many jobs?\nSELECT count(*) AS jobs FROM main.raw_job;\n")
        sql = run("sql", str(query), "-w", str(wh), "--csv", env=env)
        assert sql.stdout.splitlines() == ["jobs", str(n_a + n_b)]
        out, err = reader.communicate("go\n", timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    same_session, reopened = (json.loads(line) for line in out.splitlines())
    assert same_session == first
    assert reopened["raw_job"] == reopened["stg_job"] == n_a + n_b
    con = duckdb.connect(str(wh), read_only=True)  # the pipeline is done: its file is free again
    try:
        assert reopened["job_efficiency"] == con.execute("SELECT count(*) FROM marts.job_efficiency").fetchall()[0][0]
        assert reopened["job_efficiency"] > first["job_efficiency"]
    finally:
        con.close()


def test_publish_swaps_in_a_whole_copy_and_never_writes_through_a_symlink(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(1000)")
    con.close()
    assert reader_path(wh) == wh  # nothing published yet: readers get the working file
    target = publish(wh)
    assert reader_path(wh) == target
    elsewhere = tmp_path / "elsewhere.duckdb"
    elsewhere.write_text("not to be touched")
    target.unlink()
    target.symlink_to(elsewhere)
    publish(wh)
    assert elsewhere.read_text() == "not to be touched" and not target.is_symlink()
    ro = duckdb.connect(str(target), read_only=True)
    assert ro.execute("SELECT count(*), sum(x) FROM t").fetchall() == [(1000, sum(range(1000)))]
    ro.close()
    assert sorted(p.name for p in target.parent.iterdir()) == [".slots", "warehouse.duckdb"]  # no temporary left
    shutil.rmtree(target.parent)
    target.parent.symlink_to(tmp_path / "other", target_is_directory=True)
    (tmp_path / "other").mkdir()
    with pytest.raises(ValueError, match="not a plain folder"):
        publish(wh)


def _big_and_hourly(wh: Path, big: str) -> None:
    """A warehouse with a large table ``big`` (``big`` is its SELECT) and a one-row ``hourly``."""
    con = duckdb.connect(str(wh))
    con.execute(f"CREATE TABLE big AS {big}")
    con.execute("CREATE TABLE hourly AS SELECT 1 AS hour")
    con.close()


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_publish_writes_what_changed_and_never_rewrites_a_snapshot_a_reader_has_open(tmp_path: Path) -> None:
    from tierlens.warehouse.publish import last_publish, publish_with_stats

    wh = tmp_path / "warehouse.duckdb"
    # 2 M rows in many row groups: a change to one more small table leaves them byte-identical
    _big_and_hourly(wh, "SELECT range AS x, range * 7 % 1000 AS y FROM range(2000000)")
    target, first = publish_with_stats(wh, clone=False)
    assert not first.reused_slot and first.bytes_written == wh.stat().st_size == first.file_bytes
    assert _sha(target) == _sha(wh)

    def add_hour(h: int) -> None:
        c = duckdb.connect(str(wh))
        c.execute(f"INSERT INTO hourly VALUES ({h})")
        c.close()

    # a reader session on the first snapshot, in its own process
    reader = read_twice(target, BIG_QUERY)
    try:
        assert reader.stdout.readline().strip() == "[2000000, 1]", reader.stderr.read()
        add_hour(2)
        _, second = publish_with_stats(wh, clone=False)  # no spare slot yet: a whole copy
        assert not second.reused_slot and _sha(target) == _sha(wh)
        add_hour(3)
        _, third = publish_with_stats(wh, clone=False)  # the spare is the reader's snapshot: left alone, a new slot
        assert not third.reused_slot and _sha(target) == _sha(wh)
        out, err = reader.communicate("go\n", timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    assert out.splitlines()[-1] == "[2000000, 1]"  # its session still read the rows it opened with
    add_hour(4)
    _, fourth = publish_with_stats(wh, clone=False)  # nobody holds the spare now: only changed blocks written
    assert fourth.reused_slot
    assert _sha(target) == _sha(wh)
    size = wh.stat().st_size
    assert fourth.file_bytes == size and 0 < fourth.bytes_written < size / 4
    assert last_publish(wh) == fourth
    ro = duckdb.connect(str(target), read_only=True)
    assert ro.execute("SELECT count(*), sum(x) FROM big").fetchall() == [(2000000, sum(range(2000000)))]
    assert ro.execute("SELECT list(hour ORDER BY hour) FROM hourly").fetchall() == [([1, 2, 3, 4],)]
    ro.close()
    slots = sorted(p.name for p in (target.parent / ".slots").iterdir())
    # current and spare only, each with its block index
    assert slots == [
        "state.json",
        "warehouse.duckdb.1",
        "warehouse.duckdb.1.blocks",
        "warehouse.duckdb.2",
        "warehouse.duckdb.2.blocks",
    ]


def _spare(target: Path) -> Path:
    """The slot the next publish rewrites: the one that is not the published file."""
    current = os.stat(target).st_ino
    slots = [p for p in (target.parent / ".slots").iterdir() if p.name.split(".")[-1].isdigit()]
    (spare,) = [p for p in slots if os.stat(p).st_ino != current]
    return spare


def _damage_version(index: Path, spare: Path) -> None:
    head, _, body = index.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["format_version"] = 999
    index.write_bytes(json.dumps(header).encode() + b"\n" + body)


def _truncate(index: Path, spare: Path) -> None:
    index.write_bytes(index.read_bytes()[:-7])


def _flip_a_digest(index: Path, spare: Path) -> None:
    data = bytearray(index.read_bytes())
    data[-3] ^= 0xFF
    index.write_bytes(bytes(data))


def _write_the_slot_behind_it(index: Path, spare: Path) -> None:
    # the spare's bytes change, its index does not: only the slot's own state can tell
    with open(spare, "r+b") as f:
        f.seek(spare.stat().st_size // 2)
        f.write(b"\xa5" * 4096)


def _replace_the_slot(index: Path, spare: Path) -> None:
    data = bytearray(spare.read_bytes())
    data[len(data) // 3] ^= 0xFF
    spare.unlink()
    spare.write_bytes(bytes(data))  # a new inode with different bytes


@pytest.mark.parametrize(
    "damage", [_damage_version, _truncate, _flip_a_digest, _write_the_slot_behind_it, _replace_the_slot]
)
def test_a_block_index_that_no_longer_describes_its_slot_falls_back_to_reading_it(tmp_path: Path, damage) -> None:
    from tierlens.warehouse.publish import publish_with_stats

    wh = tmp_path / "warehouse.duckdb"
    _big_and_hourly(wh, "SELECT range AS x, range * 7 % 1000 AS y FROM range(2000000)")

    def add_hour(h: int) -> None:
        c = duckdb.connect(str(wh))
        c.execute(f"INSERT INTO hourly VALUES ({h})")
        c.close()

    target, _ = publish_with_stats(wh, clone=False)
    add_hour(2)
    publish_with_stats(wh, clone=False)  # the second slot: from here on every publish reuses the spare
    add_hour(3)
    _, by_index = publish_with_stats(wh, clone=False)
    assert by_index.reused_slot and by_index.compared_by == "index" and by_index.slot_bytes_read == 0
    assert 0 < by_index.bytes_written < wh.stat().st_size / 4
    assert _sha(target) == _sha(wh)

    spare = _spare(target)
    damage(spare.with_name(spare.name + ".blocks"), spare)
    add_hour(4)
    _, after = publish_with_stats(wh, clone=False)
    assert after.compared_by == "bytes" and after.slot_bytes_read > 0
    assert _sha(target) == _sha(wh)  # the published snapshot is the working file, byte for byte
    ro = duckdb.connect(str(target), read_only=True)
    assert ro.execute("SELECT list(hour ORDER BY hour) FROM hourly").fetchall() == [([1, 2, 3, 4],)]
    ro.close()
    # and the index written by that publish is trusted again by the next
    add_hour(5)
    _, again = publish_with_stats(wh, clone=False)
    assert again.compared_by == "index" and _sha(target) == _sha(wh)


def test_a_block_digest_sees_words_swapped_within_the_block() -> None:
    """Why the index does not reuse DuckDB's own block checksums: they are blind to a block whose
    8-byte words were only reordered (rows written back in another order), the digest is not."""
    import struct

    from tierlens.warehouse.publish import CHUNK, _digest

    words = list(range(CHUNK // 8))
    block = struct.pack(f"<{len(words)}Q", *words)
    swapped = struct.pack(f"<{len(words)}Q", *([words[1], words[0]] + words[2:]))
    assert sorted(struct.iter_unpack("<Q", block)) == sorted(struct.iter_unpack("<Q", swapped))
    assert block != swapped and _digest(block) != _digest(swapped)
    assert _digest(memoryview(bytearray(block))) == _digest(block)


BIG_QUERY = "SELECT count(*), (SELECT max(hour) FROM hourly) FROM big"


@pytest.fixture
def cloning_folder(tmp_path: Path):
    """A folder on a real XFS with reflink (mkfs.xfs' default on EL8/EL9), loop-mounted: a
    filesystem whose files can share blocks, as an analytics host's may be."""
    if os.geteuid() != 0:
        pytest.skip("mounting an XFS image needs root")
    image, mount = tmp_path / "xfs.img", tmp_path / "xfs"
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True, timeout=120)
    mount.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True, timeout=120)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True, timeout=120)  # also frees the loop device


def _extent_flags(path: Path) -> list[str]:
    """The flags of each extent of ``path`` as the kernel's FIEMAP reports them (filefrag)."""
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()[:1].isdigit() and ":" in line]


def _used_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def test_publish_on_a_filesystem_that_shares_blocks_clones_and_never_changes_a_snapshot(cloning_folder: Path) -> None:
    from tierlens.warehouse.publish import CHUNK, last_publish, publish_with_stats

    wh = cloning_folder / "warehouse.duckdb"
    # hashes do not compress: tens of MB of blocks whose copying the filesystem's own count would show
    _big_and_hourly(wh, "SELECT range AS x, hash(range) AS y FROM range(4000000)")
    size = wh.stat().st_size
    assert size > 30e6
    used = _used_bytes(cloning_folder)
    target, first = publish_with_stats(wh)
    assert (first.compared_by, first.bytes_written, first.slot_bytes_read) == ("clone", 0, 0)
    assert _sha(target) == _sha(wh)
    assert _used_bytes(cloning_folder) - used < size / 20  # no copy of the data: the filesystem's own count
    assert _extent_flags(target) and all("shared" in flags for flags in _extent_flags(target))
    first_digest = _sha(target)

    reader = read_twice(target, BIG_QUERY)
    held = os.open(target, os.O_RDONLY)  # the first snapshot, whatever names it later
    try:
        assert reader.stdout.readline().strip() == "[4000000, 1]", reader.stderr.read()
        # rewrite most of the working file: the freed blocks, shared with the snapshot, are reused
        c = duckdb.connect(str(wh))
        c.execute("DROP TABLE big")
        c.execute("CHECKPOINT")
        c.execute("CREATE TABLE big AS SELECT range AS x, hash(range + 1) AS y FROM range(3000000)")
        c.execute("INSERT INTO hourly VALUES (2)")
        c.close()
        with os.fdopen(os.dup(held), "rb") as old, open(wh, "rb") as now:
            old.seek(0)
            blocks = [(old.read(CHUNK), now.read(CHUNK)) for _ in range(size // CHUNK)]
        overwritten = sum(a != b for a, b in blocks)
        assert overwritten > len(blocks) / 2  # the working file was rewritten in place, over shared blocks
        _, second = publish_with_stats(wh)
        assert second.compared_by == "clone" and _sha(target) == _sha(wh)
        out, err = reader.communicate("go\n", timeout=120)
        with os.fdopen(os.dup(held), "rb") as f:
            f.seek(0)  # a dup shares the offset the read above moved
            assert hashlib.sha256(f.read()).hexdigest() == first_digest  # not a byte of it changed
    finally:
        os.close(held)
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    assert out.splitlines()[-1] == "[4000000, 1]"
    ro = duckdb.connect(str(target), read_only=True)
    assert ro.execute("SELECT count(*), max(hour) FROM big, (SELECT max(hour) AS hour FROM hourly)").fetchall() == [
        (3000000, 2)
    ]
    ro.close()
    assert last_publish(wh) == second
    from tierlens import doctor

    found = {f.check: f for f in doctor.check_warehouse(doctor.Options(warehouse=wh)) if f.area == "warehouse"}
    assert "a clone sharing the working file's blocks" in found["last publish"].detail
    assert not found["last publish"].fix and "(a clone)" in found["size"].detail
    # one slot, no block index: a clone needs no spare
    assert sorted(p.name for p in (target.parent / ".slots").iterdir()) == ["state.json", "warehouse.duckdb.1"]

    # asked not to clone, the same filesystem gets the block diff
    c = duckdb.connect(str(wh))
    c.execute("INSERT INTO hourly VALUES (3)")
    c.close()
    _, diffed = publish_with_stats(wh, clone=False)
    assert diffed.compared_by == "bytes" and diffed.bytes_written == wh.stat().st_size
    assert _sha(target) == _sha(wh)
