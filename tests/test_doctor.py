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

from slurm_fixtures import install_package, plugstack_as, plugstack_line, remove_package
from support.airflow import AIRFLOW_EXE
from tierlens import doctor
from tierlens.cli import app
from tierlens.doctor import Options, Status

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
    conf = _slurm_files(
        tmp_path,
        [
            "optional /nonexistent/tierlens_spank.so spool=/x",
            "required   /nonexistent/tierlens_spank.so  # twice, on purpose",
        ],
    )
    lines = list(doctor.plugstack_lines(tmp_path / "plugstack.conf"))
    assert [(ln.control, ln.line, ln.args) for ln in lines] == [("optional", 1, ("spool=/x",)), ("required", 2, ())]
    findings = doctor.check_slurm(Options(slurm_conf=conf))
    stack = [f for f in findings if f.check == "plugstack line"]
    assert [f.status for f in stack] == [Status.OK, Status.FAIL]
    assert "50-tierlens.conf:2" in stack[1].detail and "optional" in stack[1].fix
    missing = [f for f in findings if f.check == "plugin installed"]
    assert [f.status for f in missing] == [Status.FAIL, Status.FAIL]


def test_no_tierlens_line_is_a_warning_and_a_named_slurm_conf_that_is_missing_fails(tmp_path):
    conf = _slurm_files(tmp_path, ["optional /usr/lib/other_spank.so"])
    (f,) = doctor.check_slurm(Options(slurm_conf=conf))
    assert f.status is Status.WARN and "tierlens_spank.so" in f.fix
    (absent,) = doctor.check_slurm(Options(slurm_conf=tmp_path / "absent.conf"))
    assert absent.status is Status.FAIL and "absent.conf" in absent.detail and "--slurm-conf" in absent.fix
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
    fresh = _by_check(
        doctor.check_collector(Options(collector_stats=_stats(tmp_path, kernel_drops=0, journal_backlog_bytes=4096)))
    )
    assert fresh[("collector", "running")].status is Status.OK
    assert fresh[("collector", "kernel drops")].status is Status.OK
    assert fresh[("collector", "journal backlog")].status is Status.OK

    lossy = _by_check(
        doctor.check_collector(
            Options(
                collector_stats=_stats(
                    tmp_path, kernel_drops=1234, journal_backlog_bytes=doctor.JOURNAL_BACKLOG_WARN_BYTES + 1
                )
            )
        )
    )
    assert (
        lossy[("collector", "kernel drops")].status is Status.WARN
        and "1,234" in lossy[("collector", "kernel drops")].detail
    )
    assert lossy[("collector", "journal backlog")].status is Status.WARN

    stale = _stats(tmp_path, kernel_drops=0)
    data = json.loads(stale.read_text())
    data["updated_at"] -= doctor.STATS_STALE_SECONDS + 5
    stale.write_text(json.dumps(data))
    assert (
        _by_check(doctor.check_collector(Options(collector_stats=stale)))[("collector", "running")].status
        is Status.FAIL
    )

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
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('open', flush=True); time.sleep(60)",
            str(wh),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
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


def test_airflow_variables_through_an_airflow_command(tmp_path, monkeypatch):
    """`airflow variables list -o json` as Airflow prints it; unknown tierlens_ names are flagged."""
    monkeypatch.delenv("AIRFLOW_CONFIG", raising=False)
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    (tmp_path / "airflow.cfg").write_text("[core]\n")  # a deployment: doctor asks only where one is
    fake = tmp_path / "airflow"
    fake.write_text(
        "#!/bin/sh\necho 'some log line'\n"
        'echo \'[{"key": "tierlens_warehouse"}, {"key": "tierlens_warehose"}, {"key": "other"}]\'\n'
    )
    fake.chmod(0o755)
    f = _by_check(doctor.check_airflow(Options(airflow=str(fake))))
    assert (
        f[("airflow", "variables")].status is Status.OK and "tierlens_warehouse" in f[("airflow", "variables")].detail
    )
    assert f[("airflow", "unknown variables")].status is Status.WARN
    assert "tierlens_warehose" in f[("airflow", "unknown variables")].detail


def _no_slurm_here(tmp_path: Path, monkeypatch) -> None:
    """This test host has Slurm installed; doctor's default slurm.conf is pointed where there is none."""
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setattr(doctor.slurm, "DEFAULT_SLURM_CONF", tmp_path / "no-slurm" / "slurm.conf")


def test_cli_exit_status_and_json(tmp_path, monkeypatch):
    conf = _slurm_files(tmp_path, ["required /nonexistent/tierlens_spank.so"])
    code, out = _doctor_json("--slurm-conf", str(conf), "--airflow", "/nonexistent/airflow")
    assert code == 1 and out["ok"] is False
    assert any(f["check"] == "plugstack line" and f["status"] == "fail" for f in out["findings"])
    # without Slurm on the "host", nothing fails: the dbt project is found
    _no_slurm_here(tmp_path, monkeypatch)
    code, out = _doctor_json()
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
    assert re.search(
        r"TIERLENS_STORAGE_TYPE=\w+ XRD_MONINFO=slurm\.\S+\.\d+", found[("slurm", "job variables")]["detail"]
    )
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
    run = RunRecord(
        kind="hourly",
        started_at=datetime(2026, 5, 1, 11, tzinfo=timezone.utc).isoformat(),
        success=True,
        seconds=12.0,
        batches_new=3,
        rows_new=1234,
        models=37,
        tests=500,
    )
    save_history(
        wh,
        History(
            last_run=run,
            last_success=run,
            retention=Retention(months=2, pruned_before="2026-03-01T00:00:00+00:00", rows_deleted_total=99),
        ),
    )
    monkeypatch.setenv("TIERLENS_RAW_RETENTION_MONTHS", "2")
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert f[("warehouse", "size")].status is Status.OK and "GB working file" in f[("warehouse", "size")].detail
    assert "oldest raw file access 2026-03-04" in f[("warehouse", "raw history")].detail
    assert "2 months" in f[("warehouse", "retention")].detail and "99 rows" in f[("warehouse", "retention")].detail
    last = f[("warehouse", "last transform")]
    assert last.status is Status.OK and "3 new raw batches, 1,234 rows" in last.detail
    assert "whole copy" in f[("warehouse", "last publish")].detail
    assert "XFS with reflink" in f[("warehouse", "last publish")].fix  # tmp_path is on ext4 here
    # a state file written by a newer tierlens is not guessed at
    state_path(wh).write_text(json.dumps({"format_version": 99}))
    f = _by_check(doctor.check_warehouse(Options(warehouse=wh)))
    assert (
        f[("warehouse", "history file")].status is Status.FAIL
        and "format version 99" in f[("warehouse", "history file")].detail
    )


# ---- findings an admin can act on; doctor changes nothing ------------------------------------


def _not_ok(findings) -> list[doctor.Finding]:
    return [f for f in findings if f.status is not Status.OK]


def test_every_finding_that_is_not_ok_has_a_fix(tmp_path, monkeypatch):
    """An empty host (nothing installed), then every part pointed at a path that is not there."""
    _no_slurm_here(tmp_path, monkeypatch)
    monkeypatch.delenv("AIRFLOW_HOME", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no airflow, no condor_status
    empty = _not_ok(doctor.run_checks(Options()))
    assert {f.area for f in empty} >= {"slurm", "collector", "warehouse"}
    missing = tmp_path / "missing"
    named = _not_ok(
        doctor.run_checks(
            Options(
                slurm_conf=missing / "slurm.conf",
                collector_stats=missing / "collector-stats.json",
                warehouse=missing / "warehouse.duckdb",
                airflow=str(missing / "airflow"),
            )
        )
    )
    for f in empty + named:
        assert f.fix.strip(), f"{f.area}/{f.check} ({f.status.value}) has no fix: {f.detail}"
    # a path the admin named and that is missing fails alike for every part; a default that is
    # missing is "not checked", alike for every part
    assert {f.area: f.status for f in named if f.area not in ("dbt", "htcondor")} == {
        "slurm": Status.FAIL,
        "collector": Status.FAIL,
        "warehouse": Status.FAIL,
        "airflow": Status.FAIL,
    }
    assert {f.area: f.status for f in empty if f.area in ("slurm", "collector", "warehouse")} == {
        "slurm": Status.INFO,
        "collector": Status.INFO,
        "warehouse": Status.INFO,
    }
    for f in named:
        if f.area not in ("dbt", "htcondor"):  # those two take no path
            assert str(missing) in f.detail


@pytest.mark.parametrize(
    "text, field",
    [
        ("{not json", "line 1"),
        ("[1, 2]", "list"),
        ('{"state": "running", "updated_at": "yesterday"}', "updated_at"),
        ('{"state": "running", "updated_at": 1.5e9, "kernel_drops": "many"}', "kernel_drops"),
        ('{"state": "running"}', "updated_at"),
        ("\xff\xfe", "decode"),
    ],
    ids=["not-json", "a-list", "text-time", "text-drops", "no-time", "not-utf8"],
)
def test_a_malformed_collector_stats_file_is_a_finding_naming_the_field(tmp_path, text, field):
    p = tmp_path / "collector-stats.json"
    p.write_bytes(text.encode("latin-1"))
    found = [f for f in doctor.run_checks(Options(collector_stats=p)) if f.area == "collector"]
    assert [(f.check, f.status) for f in found] == [("running", Status.FAIL)]
    assert str(p) in found[0].detail and field in found[0].detail and found[0].fix
    assert "the check itself failed" not in found[0].detail


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root`` with its size and modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


def _airflow_exe() -> Path:
    if AIRFLOW_EXE.exists():
        return AIRFLOW_EXE
    pytest.skip("no Airflow virtualenv (make airflow-venv)")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_doctor_changes_nothing_even_with_a_read_only_home_and_airflow_unconfigured(tmp_path):
    """`tierlens doctor --airflow` without AIRFLOW_HOME: the real airflow command would create
    ~/airflow; doctor must not ask it, must write nothing anywhere, and must not crash when HOME
    cannot be written (a read-only bind mount in a private mount namespace)."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a read-only HOME needs root and unshare (a private mount namespace)")
    home, tl_home, cwd = tmp_path / "home", tmp_path / "tierlens-home", tmp_path / "cwd"
    for d in (home, tl_home, cwd):
        d.mkdir()
    (home / ".profile").write_text("# a user's file\n")
    stats = tl_home / "collector-stats.json"
    stats.write_text("{broken")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        HOME=str(home),
        TIERLENS_HOME=str(tl_home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        COLUMNS="80",
        PYTHONPATH=os.pathsep.join([str(REPO / "pipelines"), env.get("PYTHONPATH", "")]),
    )
    argv = [
        sys.executable,
        "-c",
        "from tierlens.cli import app; app()",
        "doctor",
        "--airflow",
        str(_airflow_exe()),
        "--collector-stats",
        str(stats),
    ]
    before = {d: _tree(d) for d in (home, tl_home, cwd)}
    mount = f'mount --bind "{home}" "{home}" && mount -o remount,ro,bind "{home}" && exec "$@"'
    runs = {"read-only, table": ["unshare", "-m", "sh", "-c", mount, "sh", *argv], "writable, json": [*argv, "--json"]}
    for name, command in runs.items():
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 1, f"{name}: {proc.stdout}{proc.stderr}"  # the broken stats file fails
        assert "Traceback" not in proc.stdout + proc.stderr, name
        assert "…" not in proc.stdout, f"{name}: a cut-off cell:\n{proc.stdout}"
        assert {d: _tree(d) for d in (home, tl_home, cwd)} == before, f"{name}: doctor wrote to the host"
    assert not (home / "airflow").exists()
    found = {(f["area"], f["check"]): f for f in json.loads(proc.stdout)["findings"]}
    assert "AIRFLOW_HOME" in found[("airflow", "variables")]["detail"] and found[("airflow", "variables")]["fix"]
    assert str(stats) in found[("collector", "running")]["detail"]
