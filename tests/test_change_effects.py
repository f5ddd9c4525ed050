"""Site changes: the site_change record and `tierlens change`, and the before/after analysis.

Item by item: changes recorded from the command line and from a site's change log (bad lines
rejected with file and line); the change_effects statistic on arrays with a known effect and with
none over a batch of seeds; and the synthetic site with a change or a job-mix shift, end to end.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import pytest
from typer.testing import CliRunner

from tierlens.cli import app

runner = CliRunner()
UTC = timezone.utc


def _rows(wh, sql):
    con = duckdb.connect(str(wh), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


# --- 1. the record and the command ------------------------------------------------------------

def test_change_add_records_scope_time_and_category(tmp_path):
    wh = tmp_path / "w.duckdb"
    r = runner.invoke(app, ["change", "add", "GPFS pagepool 512MB -> 1GB", "--at", "2026-10-14T09:00Z",
                            "--nodes", "wn01, wn02", "--category", "filesystem", "--by", "ifca",
                            "--warehouse", str(wh)])
    assert r.exit_code == 0, r.output
    got = _rows(wh, "select changed_at, description, category, scope_nodes, scope_storage_type, changed_by, "
                    "change_id from raw_site_change")
    assert len(got) == 1
    at, text, cat, nodes, st, by, cid = got[0]
    assert at == datetime(2026, 10, 14, 9, 0, tzinfo=UTC)
    assert (text, cat, nodes, st, by) == ("GPFS pagepool 512MB -> 1GB", "filesystem", ["wn01", "wn02"], None, "ifca")
    # the same change again is the same row (derived id), not a second one
    r = runner.invoke(app, ["change", "add", "GPFS pagepool 512MB -> 1GB", "--at", "2026-10-14T10:00+01:00",
                            "--nodes", "wn01,wn02", "--category", "filesystem", "--warehouse", str(wh)])
    assert r.exit_code == 0, r.output
    assert _rows(wh, "select count(*), min(change_id) from raw_site_change") == [(1, cid)]
    listed = runner.invoke(app, ["change", "list", "--csv", "--warehouse", str(wh)])
    assert listed.exit_code == 0 and "nodes wn01,wn02" in listed.output and "2026-10-14T09:00Z" in listed.output


def test_change_add_refuses_a_bad_time_and_rejects_an_unknown_category(tmp_path):
    wh = tmp_path / "w.duckdb"
    r = runner.invoke(app, ["change", "add", "x", "--at", "yesterday", "--warehouse", str(wh)])
    assert r.exit_code == 2 and "ISO 8601" in r.output
    r = runner.invoke(app, ["change", "add", "x", "--at", "2026-10-01", "--category", "plumbing",
                            "--warehouse", str(wh)])
    assert r.exit_code == 1
    assert _rows(wh, "select count(*) from raw_site_change") == [(0,)]
    assert _rows(wh, "select field from raw_rejects") == [("category",)]


def test_change_log_csv_and_yaml_load_with_rejects_naming_file_and_line(tmp_path):
    wh = tmp_path / "w.duckdb"
    log_csv = tmp_path / "changes.csv"
    log_csv.write_text(
        "at,description,category,storage_type,by\n"
        "2026-10-02T10:00Z,NIC firmware,network,,alice\n"
        "2026-10-03T10:00Z,\"controller cache\nwrite-back\",plumbing,,bob\n"   # a two-line cell: line 3
        "notatime,whatever,other,,\n"                                          # line 5
        "2026-10-05T10:00,raid1 readahead 4MB,storage,raid1,carol\n"
        "2026-10-06T10:00,tape,storage,floppy,dan\n")                          # line 7
    log_yaml = tmp_path / "changes.yaml"
    log_yaml.write_text(
        "changes:\n"
        "  - at: 2026-10-06T08:00:00Z\n"
        "    what: xcache RAM 64GB\n"
        "    category: cache\n"
        "    arm: B\n"
        "  - at: 2026-10-07\n"          # line 6
        "    description: oops\n"
        "    colour: red\n")
    r = runner.invoke(app, ["change", "load", str(log_csv), str(log_yaml), "--warehouse", str(wh)])
    assert r.exit_code == 0, r.output
    loaded = _rows(wh, "select description, category, scope_storage_type, scope_ab_arm, changed_at "
                       "from raw_site_change order by changed_at")
    assert loaded == [
        ("NIC firmware", "network", None, None, datetime(2026, 10, 2, 10, tzinfo=UTC)),
        ("raid1 readahead 4MB", "storage", "raid1", None, datetime(2026, 10, 5, 10, tzinfo=UTC)),
        ("xcache RAM 64GB", "cache", None, "B", datetime(2026, 10, 6, 8, tzinfo=UTC)),
    ]
    rejects = sorted(_rows(wh, "select location, field from raw_rejects where record_kind = 'site_change'"))
    assert rejects == sorted([
        (f"{log_csv}:line 3", "category"), (f"{log_csv}:line 5", "changed_at"),
        (f"{log_csv}:line 7", "scope_storage_type"), (f"{log_yaml}:line 6", "colour"),
    ])
    # loading the same log again changes nothing
    r = runner.invoke(app, ["change", "load", str(log_csv), str(log_yaml), "--warehouse", str(wh)])
    assert _rows(wh, "select count(*) from raw_site_change") == [(3,)]
    assert _rows(wh, "select count(*) from raw_rejects") == [(4,)]
