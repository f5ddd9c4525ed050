"""`tierlens doctor`: its checks one by one on files written here, then against the real Slurm test
cluster (tests/slurm_fixtures.py) with the plugin package installed, loaded as `required`, and
removed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tierlens import doctor
from tierlens.cli import app
from tierlens.doctor import Options, Status

from slurm_fixtures import install_package, plugstack_as, plugstack_line, remove_package

REPO = Path(__file__).resolve().parents[1]
SACCT_2205 = REPO / "plugins" / "slurm" / "tests" / "data" / "sacct-22.05-dbv0.0.38.json"


def _by_check(findings) -> dict[tuple[str, str], doctor.Finding]:
    return {(f.area, f.check): f for f in findings}


def _doctor_json(*args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(app, ["doctor", "--json", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, json.loads(r.stdout)


# ---- the checks on files written here -------------------------------------------------------

def _slurm_files(tmp_path: Path, lines: list[str]) -> Path:
    conf = tmp_path / "slurm.conf"
    (tmp_path / "plugstack.conf.d").mkdir()
    conf.write_text(f"ClusterName=t\nPlugStackConfig={tmp_path / 'plugstack.conf'}\n")
    (tmp_path / "plugstack.conf").write_text(f"# site plugins\ninclude {tmp_path / 'plugstack.conf.d'}/*.conf\n")
    (tmp_path / "plugstack.conf.d" / "50-tierlens.conf").write_text("\n".join(lines) + "\n")
    return conf


def test_plugstack_lines_follow_includes_and_a_required_line_fails(tmp_path):
    conf = _slurm_files(tmp_path, ["optional /nonexistent/tierlens_spank.so spool=/x",
                                   "required   /nonexistent/tierlens_spank.so  # twice, on purpose"])
    lines = list(doctor.plugstack_lines(tmp_path / "plugstack.conf"))
    assert [(ln.control, ln.line, ln.args) for ln in lines] == [("optional", 1, ("spool=/x",)), ("required", 2, ())]
    findings = doctor.check_slurm(Options(slurm_conf=conf))
    stack = [f for f in findings if f.check == "plugstack line"]
    assert [f.status for f in stack] == [Status.OK, Status.FAIL]
    assert "50-tierlens.conf:2" in stack[1].detail and "optional" in stack[1].fix
    missing = [f for f in findings if f.check == "plugin installed"]
    assert [f.status for f in missing] == [Status.FAIL, Status.FAIL]


def test_no_tierlens_line_is_a_warning_and_no_slurm_is_no_finding(tmp_path):
    conf = _slurm_files(tmp_path, ["optional /usr/lib/other_spank.so"])
    (f,) = doctor.check_slurm(Options(slurm_conf=conf))
    assert f.status is Status.WARN and "tierlens_spank.so" in f.fix
    (absent,) = doctor.check_slurm(Options(slurm_conf=tmp_path / "absent.conf"))
    assert absent.status is Status.INFO and "absent.conf" in absent.detail
    assert doctor.check_sacct(Options(slurm_conf=tmp_path / "absent.conf")) == []


def test_data_parser_of_a_real_sacct_capture():
    meta = json.loads(SACCT_2205.read_text())["meta"]
    assert doctor.data_parser(meta) == meta["plugin"]["type"].split("/")[1] == "dbv0.0.38"
    assert doctor.data_parser({"plugin": {"type": "openapi/slurmdbd", "data_parser": "v0.0.40"}}) == "v0.0.40"


def _stats(tmp_path: Path, **values) -> Path:
    p = tmp_path / "collector-stats.json"
    p.write_text(json.dumps({"state": "running", "updated_at": time.time(), **values}))
    return p


def test_collector_fresh_stale_drops_and_backlog(tmp_path):
    fresh = _by_check(doctor.check_collector(Options(collector_stats=_stats(
        tmp_path, kernel_drops=0, journal_backlog_bytes=4096))))
    assert fresh[("collector", "running")].status is Status.OK
    assert fresh[("collector", "kernel drops")].status is Status.OK
    assert fresh[("collector", "journal backlog")].status is Status.OK

    lossy = _by_check(doctor.check_collector(Options(collector_stats=_stats(
        tmp_path, kernel_drops=1234, journal_backlog_bytes=doctor.JOURNAL_BACKLOG_WARN_BYTES + 1))))
    assert lossy[("collector", "kernel drops")].status is Status.WARN and "1,234" in lossy[("collector", "kernel drops")].detail
    assert lossy[("collector", "journal backlog")].status is Status.WARN

    stale = _stats(tmp_path, kernel_drops=0)
    data = json.loads(stale.read_text())
    data["updated_at"] -= doctor.STATS_STALE_SECONDS + 5
    stale.write_text(json.dumps(data))
    assert _by_check(doctor.check_collector(Options(collector_stats=stale)))[("collector", "running")].status is Status.FAIL

    assert doctor.check_collector(Options(collector_stats=tmp_path / "none.json"))[0].status is Status.FAIL
    # no collector in this tierlens home: not this host's job, and said so
    assert [f.status for f in doctor.check_collector(Options())] == [Status.INFO]


def test_warehouse_schema_version_or_unversioned(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("CREATE TABLE raw_job (x INT)")
    con.close()
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert f[("warehouse", "readable")].status is Status.OK and "unversioned" in f[("warehouse", "readable")].detail
    assert f[("warehouse", "writable")].status is Status.OK
    con = duckdb.connect(str(wh))
    con.execute("CREATE TABLE raw_schema_migrations (version INT, applied_at TIMESTAMP)")
    con.execute("INSERT INTO raw_schema_migrations VALUES (1, now()), (3, now()), (2, now())")
    con.close()
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert "schema version 3" in f[("warehouse", "readable")].detail
    assert doctor.check_warehouse(Options(warehouse=tmp_path / "no.duckdb"))[0].status is Status.FAIL


def test_a_warehouse_locked_by_a_writer_is_a_warning(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(wh)).close()
    writer = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('open', flush=True); time.sleep(60)", str(wh)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
        assert f[("warehouse", "readable")].status is Status.WARN and "locked" in f[("warehouse", "readable")].detail
    finally:
        writer.kill()
        writer.wait()


def test_dbt_project_and_a_sites_own_project(tmp_path, monkeypatch):
    f = _by_check(doctor.check_dbt(Options()))
    assert f[("dbt", "project")].status is Status.OK
    assert (Path(f[("dbt", "project")].detail) / "dbt_project.yml").is_file()
    monkeypatch.setenv("TIERLENS_DBT_PROJECT_DIR", str(tmp_path))
    assert _by_check(doctor.check_dbt(Options()))[("dbt", "project")].status is Status.FAIL


def test_airflow_variables_through_an_airflow_command(tmp_path):
    """`airflow variables list -o json` as Airflow prints it; unknown tierlens_ names are flagged."""
    fake = tmp_path / "airflow"
    fake.write_text("#!/bin/sh\necho 'some log line'\n"
                    "echo '[{\"key\": \"tierlens_warehouse\"}, {\"key\": \"tierlens_warehose\"}, {\"key\": \"other\"}]'\n")
    fake.chmod(0o755)
    f = _by_check(doctor.check_airflow(Options(airflow=str(fake))))
    assert f[("airflow", "variables")].status is Status.OK and "tierlens_warehouse" in f[("airflow", "variables")].detail
    assert f[("airflow", "unknown variables")].status is Status.WARN
    assert "tierlens_warehose" in f[("airflow", "unknown variables")].detail


def test_cli_exit_status_and_json(tmp_path):
    conf = _slurm_files(tmp_path, ["required /nonexistent/tierlens_spank.so"])
    code, out = _doctor_json("--slurm-conf", str(conf), "--airflow", "/nonexistent/airflow")
    assert code == 1 and out["ok"] is False
    assert any(f["check"] == "plugstack line" and f["status"] == "fail" for f in out["findings"])
    # without Slurm on the "host", nothing fails: the dbt project is found
    code, out = _doctor_json("--slurm-conf", str(tmp_path / "absent.conf"))
    assert [f for f in out["findings"] if f["status"] == "fail"] == [] and code == 0


# ---- against the real cluster ---------------------------------------------------------------

def _built_for_header() -> str:
    text = Path("/usr/include/slurm/slurm_version.h").read_text()
    n = int(re.search(r"SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+)", text).group(1), 16)
    return f"{n >> 16 & 255}.{n >> 8 & 255:02d}.{n & 255}"


def _sacct_data_parser(cluster) -> str:
    meta = json.loads(cluster.run(["sacct", "--json", "-X", "-S", "now-1minutes"]).stdout)["meta"]
    plugin = meta["plugin"]
    return plugin.get("data_parser") or plugin["type"].split("/")[-1]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
# doctor runs on the node it checks: the host's own Slurm (the matrix generations' plugin lives in
# their tree; tests/test_matrix_slurm.py checks the `required` finding there)
@pytest.mark.parametrize("generation", ["host"], indirect=True)
def test_doctor_on_the_cluster_installed_required_and_removed(cluster, work, build):
    conf = str(cluster.conf)
    code, out = _doctor_json("--slurm-conf", conf, "--srun")
    found = {(f["area"], f["check"]): f for f in out["findings"]}
    assert code == 0, [f for f in out["findings"] if f["status"] != "ok"]
    assert found[("slurm", "plugstack line")]["status"] == "ok"
    assert found[("slurm", "plugin installed")]["status"] == "ok"
    assert str(cluster.plugin) in found[("slurm", "plugin installed")]["detail"]
    assert f"built for Slurm {_built_for_header()}" in found[("slurm", "plugin installed")]["detail"]
    assert found[("slurm", "job variables")]["status"] == "ok"
    assert re.search(r"TIERLENS_STORAGE_TYPE=\w+ XRD_MONINFO=slurm\.\S+\.\d+", found[("slurm", "job variables")]["detail"])
    assert found[("slurm", "sacct --json")]["status"] == "ok"
    assert found[("slurm", "sacct --json")]["detail"].endswith(f"data_parser {_sacct_data_parser(cluster)}")

    with plugstack_as(cluster, plugstack_line(cluster.plugin, cluster.spool, control="required")) as plug:
        code, out = _doctor_json("--slurm-conf", conf)
        assert code == 1
        (stack,) = [f for f in out["findings"] if f["check"] == "plugstack line"]
        assert stack["status"] == "fail" and "required" in stack["detail"] and f"{plug}:1" in stack["detail"]

    remove_package()
    try:
        assert not cluster.plugin.exists()
        code, out = _doctor_json("--slurm-conf", conf)
        assert code == 1
        (inst,) = [f for f in out["findings"] if f["check"] == "plugin installed"]
        assert inst["status"] == "fail" and "does not exist" in inst["detail"] and "tierlens-spank" in inst["fix"]
    finally:
        assert install_package(build) == cluster.plugin
    assert subprocess.run(["dpkg", "-s", "tierlens-spank"], capture_output=True).returncode == 0
    assert os.path.exists(cluster.plugin)


def test_warehouse_history_size_oldest_day_retention_last_run_and_a_newer_state_file(tmp_path, monkeypatch):
    from datetime import datetime, timezone

    from tierlens.warehouse import Warehouse
    from tierlens.warehouse.history import History, Retention, RunRecord, save_history, state_path
    from tierlens.warehouse.publish import publish

    wh = tmp_path / "warehouse.duckdb"
    with Warehouse(wh) as w:
        # two file accesses, the older on 2026-03-04: that is the oldest raw day doctor must name
        w.con.execute("""INSERT INTO raw_file_access (server_host, unique_id, file_lfn, server_role, start_time,
                         end_time, close_seen) VALUES
                         ('xrd1', 'a', '/f', 'origin', TIMESTAMPTZ '2026-03-04 10:00:00+00', TIMESTAMPTZ '2026-03-04 10:05:00+00', true),
                         ('xrd1', 'b', '/f', 'origin', TIMESTAMPTZ '2026-05-01 10:00:00+00', TIMESTAMPTZ '2026-05-01 10:05:00+00', true)""")
    publish(wh)
    run = RunRecord(kind="hourly", started_at=datetime(2026, 5, 1, 11, tzinfo=timezone.utc).isoformat(),
                    success=True, seconds=12.0, batches_new=3, rows_new=1234, models=37, tests=500)
    save_history(wh, History(last_run=run, last_success=run,
                             retention=Retention(months=2, pruned_before="2026-03-01T00:00:00+00:00",
                                                 rows_deleted_total=99)))
    monkeypatch.setenv("TIERLENS_RAW_RETENTION_MONTHS", "2")
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert f[("warehouse", "size")].status is Status.INFO and "GB working file" in f[("warehouse", "size")].detail
    assert "oldest raw file access 2026-03-04" in f[("warehouse", "raw history")].detail
    assert "2 months" in f[("warehouse", "retention")].detail and "99 rows" in f[("warehouse", "retention")].detail
    last = f[("warehouse", "last transform")]
    assert last.status is Status.OK and "3 new raw batches, 1,234 rows" in last.detail
    assert "whole copy" in f[("warehouse", "last publish")].detail
    # a state file written by a newer tierlens is not guessed at
    state_path(wh).write_text(json.dumps({"format_version": 99}))
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert f[("warehouse", "history file")].status is Status.FAIL and "format version 99" in f[("warehouse", "history file")].detail
