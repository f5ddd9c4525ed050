"""Damaged state: what a warehouse keeps between runs, truncated, corrupted or gone, then the next step.

Each case either recovers by itself (rebuilds what it needs, and the run's record in the history
says so) with every intermediate table and mart equal to a full refresh of the same records, or
stops, exit 2, in one line naming the file and what to run; never a wrong mart. One small
warehouse (tests/support/small_site.py: a day and a half of the synthetic site, hours of it loaded
and not yet transformed) is built once for the file; each case damages a copy of it. A dbt run
costs most of the time, so the two runs that recover share them: a damaged saved parse with a
missing int_job_match_state, and a damaged history followed (as its message says) by a run with
int_job_match_changes missing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from support.processes import read_twice
from support.small_site import SmallSite, build_small_site, copy_warehouse, tierlens
from support.warehouse_compare import differences
from tierlens.transform import RECOVERED
from tierlens.warehouse.history import load_history, state_path
from tierlens.warehouse.publish import (
    INDEX_SUFFIX,
    SLOTS_DIR,
    STATE_FILE,
    _blocks,
    _digest,
    last_publish,
    publish,
    publish_with_stats,
    published_path,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> SmallSite:
    return build_small_site(tmp_path_factory.mktemp("damaged-state"))


@pytest.fixture()
def pending(site: SmallSite, tmp_path: Path) -> Path:
    """A copy of the warehouse with hours loaded and not yet transformed."""
    return copy_warehouse(site.pending, tmp_path / "home")


def _drop(wh: Path, table: str) -> None:
    con = duckdb.connect(str(wh))
    try:
        con.execute(f"DROP TABLE {table}")
    finally:
        con.close()


def _recovered(wh: Path) -> list[str]:
    last = load_history(wh).last_run
    assert last is not None and last.success, last
    return [f for f in last.failures if f.startswith(RECOVERED)]


def _one_line(r: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    return " ".join(r.stderr.split())


def test_a_damaged_saved_parse_and_a_missing_match_state_are_rebuilt_and_recorded(
    site: SmallSite, pending: Path
) -> None:
    saved_parse = pending.parent / "dbt" / "target" / "partial_parse.msgpack"
    size = saved_parse.stat().st_size
    with open(saved_parse, "r+b") as f:
        f.truncate(size // 2)  # a crash mid-write, or a full disk
    _drop(pending, "intermediate.int_job_match_state")
    r = tierlens("transform", "-w", str(pending), home=pending.parent)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recovered = _recovered(pending)
    assert any(f"dbt's saved parse {saved_parse} was damaged" in f for f in recovered), recovered
    assert any("intermediate.int_job_match_state was missing" in f for f in recovered), recovered
    assert saved_parse.stat().st_size > size // 2  # dbt wrote a whole one again
    assert differences(pending, site.reference) == {}
    assert differences(published_path(pending), site.reference) == {}  # and readers see it


def test_a_damaged_history_stops_in_one_line_and_what_it_says_to_run_recovers(site: SmallSite, pending: Path) -> None:
    history = state_path(pending)
    whole = history.read_bytes()
    history.write_bytes(whole[: len(whole) // 2])
    r = tierlens("transform", "-w", str(pending), home=pending.parent)
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
    said = _one_line(r)
    assert f"the transform history {history} is damaged (not JSON" in said and "nothing was run" in said, said
    assert f"mv {history} {history}.damaged" in said and "run the transform again" in said
    assert "dbt build" not in r.stdout and history.read_bytes() == whole[: len(whole) // 2]
    history.rename(f"{history}.damaged")  # as the message says
    # and a state table gone too: the run after it rebuilds what that table would have spared
    _drop(pending, "intermediate.int_job_match_changes")
    r = tierlens("transform", "-w", str(pending), home=pending.parent)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recovered = _recovered(pending)
    assert any("intermediate.int_job_match_changes was missing" in f for f in recovered), recovered
    assert differences(pending, site.reference) == {}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: "", id="empty"),
        pytest.param(lambda text: "\x00\xff" * 40, id="garbage"),
        pytest.param(lambda text: "[1, 2]", id="a-list"),
        pytest.param(lambda text: text.replace('"started_at"', '"started_on"', 1), id="a-field-renamed"),
        pytest.param(lambda text: text.replace('"failures": [', '"failures": 7, "x": [', 1), id="a-field-retyped"),
        pytest.param(
            lambda text: json.dumps({**json.loads(text), "retention": {"pruned_before": "last May"}}),
            id="a-bad-date",
        ),
    ],
)
def test_a_history_of_the_right_version_but_damaged_stops_in_one_line(site: SmallSite, tmp_path: Path, damage) -> None:
    wh = copy_warehouse(site.transformed, tmp_path / "home")
    history = state_path(wh)
    damaged = damage(history.read_text())
    history.write_text(damaged)
    r = tierlens("transform", "-w", str(wh), home=wh.parent)
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
    said = _one_line(r)
    assert f"the transform history {history} is damaged" in said and f"mv {history}" in said, said
    assert history.read_text() == damaged  # left as it was, for the admin to read


def test_a_damaged_publish_record_reads_as_none_and_the_next_publish_writes_it_whole(pending: Path) -> None:
    publish(pending)
    record = published_path(pending).parent / SLOTS_DIR / STATE_FILE
    whole = record.read_text()
    for damaged in (whole[: len(whole) // 2], "[]", json.dumps({"format_version": 2})):
        record.write_text(damaged)
        assert last_publish(pending) is None  # damaged: no record, and no exception for the doctor
        publish(pending)
        assert last_publish(pending) is not None and json.loads(record.read_text())["file_bytes"] > 0


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _change(wh: Path) -> None:
    """A change of the working file the publish must carry (a raw batch's row, as a load adds)."""
    con = duckdb.connect(str(wh))
    try:
        con.execute("UPDATE raw_batches SET rows_loaded = rows_loaded + 1")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def test_a_block_index_whose_digests_were_damaged_is_not_trusted(site: SmallSite, pending: Path) -> None:
    publish_with_stats(pending, clone=False)
    publish_with_stats(pending, clone=False)  # the first slot is now the spare, with its block index
    spare = published_path(pending).parent / SLOTS_DIR / f"{pending.name}.0"
    index = spare.with_name(spare.name + INDEX_SUFFIX)
    _change(pending)
    # damage that says every block of the spare is already the working file's: the header intact
    header, _ = index.read_bytes().split(b"\n", 1)
    data = pending.read_bytes()
    index.write_bytes(header + b"\n" + b"".join(_digest(data[o : o + n]) for o, n in _blocks(len(data))))
    snapshot, stats = publish_with_stats(pending, clone=False)
    assert stats.compared_by == "bytes" and stats.bytes_written > 0
    assert _sha(snapshot) == _sha(pending)


READER_QUERY = "SELECT sum(rows_loaded), (SELECT count(*) FROM marts.job_efficiency) FROM raw_batches"


def test_a_snapshot_deleted_under_its_reader_is_published_again_and_the_reader_keeps_its_own(pending: Path) -> None:
    snapshot = publish(pending)
    slot = published_path(pending).parent / SLOTS_DIR / f"{pending.name}.0"
    reader = read_twice(snapshot, READER_QUERY)
    try:
        seen = reader.stdout.readline()
        assert seen, reader.stderr.read()
        before = _sha(slot)
        snapshot.unlink()  # an admin cleaning up, under a reader's session
        _change(pending)
        publish_with_stats(pending, clone=False)
        assert _sha(published_path(pending)) == _sha(pending)  # published again, whole
        assert not slot.exists() or _sha(slot) == before  # the reader's slot never rewritten
        out, errs = reader.communicate("\n", timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, errs
    assert out.strip() == seen.strip()  # the reader's session saw the snapshot it opened, to the end
