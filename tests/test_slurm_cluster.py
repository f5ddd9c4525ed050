"""The SPANK plugin and `tierlens ingest slurm` on a real one-node Slurm cluster.

A session fixture starts munged, MariaDB, slurmdbd, slurmctld and slurmd on loopback from a
private temporary folder (free ports, nothing shared with the host's own daemons), installs the
plugin's .deb with dpkg and loads the .so from its packaged path (tests/slurm_fixtures.py), and
runs real jobs with srun and sbatch (one with an inner srun step, one array) that burn CPU and
write and read known amounts of data. Then:

* the job's environment holds the storage type, the arm, XRD_MONINFO (appended to the user's
  value) and the arm's own variables;
* one spool record per step, root-owned, with the fields the ingest needs;
* `tierlens ingest slurm` rows match what this test reads from sacct itself (--parsable2,
  independently of the ingest's --json), and the job's known I/O;
* ingesting again changes nothing; the parsable2 fallback gives the same rows;
* `dbt build` puts the jobs in the job_efficiency mart with their storage type and arm;
* a broken plugin configuration still lets jobs run.

Skips only when not root (CI=true turns the skip into a failure); needs the Debian packages in
deploy/ci/system-packages.txt.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from slurm_fixtures import ARMS, BROKEN_OPTIONS, PROXY, plugstack_as, plugstack_line, spool_on_a_symlink
from support.localcluster import LocalCluster, wait_array
from tierlens.cli import app
from tierlens.records import job_identity
from tierlens.sources.slurm.spool import arm_for_job

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
MB = 1_000_000
WRITE_MB = 24  # what the I/O jobs write to scratch and read back


def _detect(build: Path, path: str) -> dict:
    r = subprocess.run([str(build / "tl_test"), "detect", "/", path], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


SCRIPT = f"""
env | grep -E '^(TIERLENS_|XRD_|XROOT_|SLURM_JOB_SLUID=)' | sed 's/^/ENV:/'
dd if=/dev/zero of="$TMPDIR/tl.dat" bs=1M count={WRITE_MB} status=none
cat "$TMPDIR/tl.dat" > /dev/null
rm -f "$TMPDIR/tl.dat"
timeout 2 sh -c 'while :; do :; done' || true
"""


def _env(text: str, prefix: str = "ENV:") -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            k, _, v = line[len(prefix) :].partition("=")
            out[k] = v
    return out


@pytest.fixture(scope="session")
def jobs(cluster, work):
    """Run the jobs once; returns what each printed and its raw job ids."""
    shm = Path(tempfile.mkdtemp(prefix="tierlens-scratch-", dir="/dev/shm"))
    disk = work / "scratch"
    disk.mkdir()
    base_env = {"XRD_MONINFO": ""}
    try:
        # srun: a user value of XRD_MONINFO, scratch on tmpfs, 2 cores
        r = cluster.run(
            ["srun", "-n1", "-c2", "bash", "-c", SCRIPT + "echo SRUN:$SLURM_JOB_ID"],
            env={"XRD_MONINFO": "user-tag", "TMPDIR": str(shm)},
        )
        srun_job = r.stdout.split("SRUN:")[1].split()[0]
        out = {"srun": {"id": srun_job, "env": _env(r.stdout), "scratch": str(shm)}}

        # sbatch with an inner srun step; scratch on the disk under /tmp
        batch_out = work / "batch.out"
        r = cluster.run(
            [
                "sbatch",
                "--parsable",
                "-c1",
                "-o",
                str(batch_out),
                "--wrap",
                SCRIPT + "srun -n1 sh -c 'echo STEP:XRD_MONINFO=$XRD_MONINFO'",
            ],
            env={**base_env, "TMPDIR": str(disk)},
        )
        batch_id = r.stdout.strip().split(";")[0]
        # an array of two tasks
        r = cluster.run(
            [
                "sbatch",
                "--parsable",
                "--array=0-1",
                "-o",
                str(work / "array_%a.out"),
                "--wrap",
                "echo ENV:TIERLENS_AB_ARM=$TIERLENS_AB_ARM; echo ENV:XRD_MONINFO=$XRD_MONINFO; "
                "env | grep '^SLURM_JOB_SLUID=' | sed 's/^/ENV:/'",
            ],
            env={**base_env, "TMPDIR": str(disk)},
        )
        array_id = r.stdout.strip().split(";")[0]
        for jid in (srun_job, batch_id):
            cluster.wait_accounted(jid)
        tasks = wait_array(cluster, array_id, 2)
        out["batch"] = {
            "id": batch_id,
            "env": _env(batch_out.read_text()),
            "scratch": str(disk),
            "step_env": _env(batch_out.read_text(), "STEP:"),
        }
        out["array"] = {
            "id": array_id,
            "tasks": tasks,
            "env": [_env((work / f"array_{i}.out").read_text()) for i in (0, 1)],
        }
        yield out
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _sacct_p2(cluster: LocalCluster, ids: list[str]) -> dict[tuple[str, str], dict[str, str]]:
    """sacct's own numbers, read here independently of the ingest (which uses --json)."""
    fields = ["JobIDRaw", "AllocCPUS", "TotalCPU", "ElapsedRaw", "State", "TRESUsageInTot", "TRESUsageOutTot"]
    r = cluster.run(["sacct", "-a", "-P", "-n", "--noconvert", "-j", ",".join(ids), "-o", ",".join(fields)])
    out = {}
    for line in r.stdout.splitlines():
        c = dict(zip(fields, line.split("|")))
        jid, _, step = c["JobIDRaw"].partition(".")
        out[(jid, step)] = c
    return out


def _total_cpu(s: str) -> float:
    parts = s.replace("-", ":").split(":")
    mult = [1, 60, 3600, 86400]
    return sum(float(p) * m for p, m in zip(reversed(parts), mult))


def _q(wh: Path, sql: str, params=None) -> list[tuple]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="session")
def ingested(cluster, jobs, work):
    wh = work / "home" / "warehouse.duckdb"
    r = CliRunner().invoke(
        app,
        ["ingest", "slurm", "-w", str(wh), "--spool", str(cluster.spool), "--first-hours", "2"],
        env=cluster.client_env,
    )
    assert r.exit_code == 0, r.output + repr(r.exception)
    assert "sacct format: json" in r.output
    print(r.output)  # shown beside any test of this module that fails
    return wh


def _all_ids(jobs) -> list[str]:
    return [jobs["srun"]["id"], jobs["batch"]["id"], *jobs["array"]["tasks"]]


# ---- in the job ------------------------------------------------------------------------------
def test_job_environment(cluster, jobs, build):
    for name in ("srun", "batch"):
        j = jobs[name]
        env, jid = j["env"], j["id"]
        arm = arm_for_job(jid, ARMS)
        # Slurm 26.05+ names the run by a SLUID, which then ends the identity (before: None)
        ident = job_identity("slurm", cluster.cluster_name, jid, env.get("SLURM_JOB_SLUID"))
        assert env["TIERLENS_STORAGE_TYPE"] == _detect(build, j["scratch"])["storage_type"], name
        assert env["TIERLENS_AB_ARM"] == arm
        assert env["TIERLENS_SCRATCH"] == j["scratch"]
        assert env["TIERLENS_JOB_IDENTITY"] == ident
        if arm == "B":
            assert env["XROOT_PROXY"] == PROXY and "TIERLENS_TEST_DIRECT" not in env
            assert env["TIERLENS_CACHE_ROUTE"] == "cache:xcache.test:1094"
        else:
            assert env["TIERLENS_TEST_DIRECT"] == "1" and "XROOT_PROXY" not in env
            assert env["TIERLENS_CACHE_ROUTE"] == "direct"
    srun_ident = job_identity(
        "slurm", cluster.cluster_name, jobs["srun"]["id"], jobs["srun"]["env"].get("SLURM_JOB_SLUID")
    )
    assert jobs["srun"]["env"]["XRD_MONINFO"] == f"user-tag,{srun_ident}"  # appended, not replaced
    assert jobs["srun"]["env"]["TIERLENS_STORAGE_TYPE"] == "tmpfs"  # /dev/shm
    batch_ident = job_identity(
        "slurm", cluster.cluster_name, jobs["batch"]["id"], jobs["batch"]["env"].get("SLURM_JOB_SLUID")
    )
    assert jobs["batch"]["env"]["XRD_MONINFO"] == batch_ident
    assert jobs["batch"]["step_env"]["XRD_MONINFO"] == batch_ident  # not appended twice
    for task, env in zip(jobs["array"]["tasks"], jobs["array"]["env"]):
        assert env["XRD_MONINFO"] == job_identity("slurm", cluster.cluster_name, task, env.get("SLURM_JOB_SLUID"))
        assert env["TIERLENS_AB_ARM"] == arm_for_job(task, ARMS)


def test_detector_agrees_with_the_python_detector(jobs, build):
    """The C detector in the job and the HTCondor side's Python detector on the live node."""
    from tierlens.probe.detect import detect

    for name in ("srun", "batch"):
        assert detect(jobs[name]["scratch"], "/").storage_type == _detect(build, jobs[name]["scratch"])["storage_type"]


def test_spool_records(cluster, jobs, build):
    spool = cluster.spool
    st = spool.stat()
    assert st.st_uid == 0 and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    assert not [p for p in spool.iterdir() if p.name.startswith(".tmp")]
    expected = {(jobs["srun"]["id"], "0"), (jobs["batch"]["id"], "batch"), (jobs["batch"]["id"], "0")}
    expected |= {(t, "batch") for t in jobs["array"]["tasks"]}
    records = {}
    for p in spool.glob("*.json"):
        assert p.stat().st_uid == 0 and stat.S_IMODE(p.stat().st_mode) == 0o644
        lines = p.read_text().splitlines()
        assert len(lines) == 1 and len(lines[0]) < 16384
        rec = json.loads(lines[0])
        records[(rec["job_id"], rec["step_id"])] = rec
        assert p.name == f"{rec['job_id']}.{rec['step_id']}.{rec['node']}.json"
    assert expected <= set(records)
    for (jid, step), rec in records.items():
        if (jid, step) not in expected:
            continue
        assert rec["node"] == cluster.node and rec["cluster"] == cluster.cluster_name
        # the SLUID where slurmstepd had it at user_init (srun steps on 26.05+), as the record says
        assert rec["job_identity"] == job_identity("slurm", cluster.cluster_name, jid, rec.get("sluid"))
        assert rec["ab_arm"] == arm_for_job(jid, ARMS)
        assert rec["task_pids"] and all(isinstance(x, int) and x > 1 for x in rec["task_pids"])
        assert rec["start_time"] <= rec["end_time"]
        assert rec["truncated"] is False
    srun_rec = records[(jobs["srun"]["id"], "0")]
    assert srun_rec["storage_type"] == "tmpfs" and srun_rec["scratch_path"] == jobs["srun"]["scratch"]
    batch_rec = records[(jobs["batch"]["id"], "batch")]
    d = _detect(build, jobs["batch"]["scratch"])
    assert batch_rec["storage_type"] == d["storage_type"] and batch_rec["device_models"] == d["device_models"]
    # the array's tasks carry their array job id
    for i, task in enumerate(jobs["array"]["tasks"]):
        rec = records[(task, "batch")]
        assert rec["array_job_id"] == jobs["array"]["id"] and rec["array_task_id"] == str(i)


# ---- sacct and the ingest ----------------------------------------------------------------------
def test_sacct_shows_the_jobs(cluster, jobs):
    p2 = _sacct_p2(cluster, _all_ids(jobs))
    for jid in _all_ids(jobs):
        assert p2[(jid, "")]["State"] == "COMPLETED"
    assert (jobs["batch"]["id"], "batch") in p2 and (jobs["batch"]["id"], "0") in p2


def test_ingest_matches_sacct(cluster, jobs, ingested, build):
    p2 = _sacct_p2(cluster, _all_ids(jobs))
    rows = {
        (r[0], r[1]): r
        for r in _q(
            ingested,
            """
        SELECT job_id, step_id, allocated_cores, cpu_user_seconds + cpu_system_seconds, wall_seconds,
               state, bytes_read, bytes_written, job_identity, cluster, node, sluid
        FROM raw_job""",
        )
    }
    for key, s in p2.items():
        if key[1] == "extern":
            continue
        assert key in rows, key
        _, _, cores, cpu, wall, state, rd, wr, ident, cl, node, sluid = rows[key]
        assert cores == int(s["AllocCPUS"]), key
        assert cpu == pytest.approx(_total_cpu(s["TotalCPU"]), abs=0.0015), key
        assert wall == float(s["ElapsedRaw"]), key
        assert state == s["State"].split()[0]
        assert ident == job_identity("slurm", cluster.cluster_name, key[0], sluid) and cl == cluster.cluster_name
        if key in ((jobs["srun"]["id"], ""), (jobs["batch"]["id"], "")):
            # what the plugin handed the job is what the ingest computed: the join key
            name = "srun" if key[0] == jobs["srun"]["id"] else "batch"
            assert ident == jobs[name]["env"]["TIERLENS_JOB_IDENTITY"], key
        if key[1] == "" and key[0] in jobs["array"]["tasks"]:
            task_env = jobs["array"]["env"][jobs["array"]["tasks"].index(key[0])]
            assert ident == task_env["XRD_MONINFO"], key
        assert node == cluster.node
        if key[1]:  # steps: fs/disk of TRESUsageInTot / OutTot, absent when nothing was measured
            for got, col in ((rd, "TRESUsageInTot"), (wr, "TRESUsageOutTot")):
                disk = dict(x.split("=") for x in s[col].split(",") if "=" in x).get("fs/disk")
                assert got == (int(disk) if disk is not None else None), (key, col)
    srun = jobs["srun"]["id"]
    assert rows[(srun, "")][2] == 2  # -c2
    assert rows[(srun, "")][3] > 0  # it burned CPU
    # it wrote WRITE_MB and read them back (fs/disk counts rchar/wchar)
    assert rows[(srun, "0")][7] >= WRITE_MB * 1024 * 1024 and rows[(srun, "0")][6] >= WRITE_MB * 1024 * 1024
    assert rows[(jobs["batch"]["id"], "batch")][7] >= WRITE_MB * 1024 * 1024
    # tags: what the detector gives for each job's scratch, the hashed arm, job and step level
    tags = {
        (r[0], r[1]): r[2:]
        for r in _q(
            ingested, "SELECT job_id, step_id, storage_type, ab_arm, scratch_path, device_models FROM raw_job_tag"
        )
    }
    for name in ("srun", "batch"):
        jid = jobs[name]["id"]
        d = _detect(build, jobs[name]["scratch"])
        assert tags[(jid, "")][:3] == (d["storage_type"], arm_for_job(jid, ARMS), jobs[name]["scratch"])
        assert list(tags[(jid, "")][3]) == d["device_models"]
    assert tags[(jobs["batch"]["id"], "0")][0] == _detect(build, jobs["batch"]["scratch"])["storage_type"]
    for t in jobs["array"]["tasks"]:
        assert (t, "") in rows and (t, "") in tags
    assert _q(ingested, "SELECT count(*) FROM raw_rejects") == [(0,)]


def test_ingest_again_changes_nothing(cluster, ingested):
    before = _q(ingested, "SELECT count(*), sum(cpu_user_seconds) FROM raw_job")
    r = CliRunner().invoke(
        app, ["ingest", "slurm", "-w", str(ingested), "--spool", str(cluster.spool)], env=cluster.client_env
    )
    assert r.exit_code == 0, r.output
    assert _q(ingested, "SELECT count(*), sum(cpu_user_seconds) FROM raw_job") == before
    assert _q(
        ingested, "SELECT count(*) FROM (SELECT job_id, step_id FROM raw_job GROUP BY ALL HAVING count(*) > 1)"
    ) == [(0,)]
    state = json.loads((ingested.parent / "warehouse.slurm-state.json").read_text())["default"]
    assert state["unfinished"] == [] and state["format"] == "json"


def test_jobs_tagged_but_missed_by_every_window_are_asked_for_by_id(cluster, jobs, ingested, work):
    """A run whose window lies after the jobs (as when slurmdbd lists them in windows late) loads
    their spool tags, then asks sacct for those jobs by id in the same run (tagged up to an hour
    before the window) and loads them; a rerun changes nothing."""
    wh = work / "home" / "missed.duckdb"
    (last_end,) = _q(ingested, "SELECT epoch(max(end_time))::BIGINT FROM raw_job")[0]
    # every tag more than an hour before the window
    window = ["--start", str(last_end + 3601), "--end", str(last_end + 3602), "--clusters", cluster.cluster_name]
    base = ["ingest", "slurm", "-w", str(wh), "--spool", str(cluster.spool), *window]
    r = CliRunner().invoke(app, base, env=cluster.client_env)
    assert r.exit_code == 0, r.output + repr(r.exception)
    assert "tagged jobs no time window had returned" in r.output
    ids = set(_all_ids(jobs))
    assert ids <= {j for (j,) in _q(wh, "SELECT DISTINCT job_id FROM raw_job_tag")}
    # the rows sacct gives by id are the ones the windows gave the first ingest
    cols = "job_id, step_id, allocated_cores, wall_seconds, state, node, start_time, end_time"
    where = f"WHERE job_id IN ({', '.join(repr(j) for j in sorted(ids))})"
    got = _q(wh, f"SELECT {cols} FROM raw_job {where} ORDER BY ALL")
    assert got and got == _q(ingested, f"SELECT {cols} FROM raw_job {where} ORDER BY ALL")
    counts = "SELECT (SELECT count(*) FROM raw_job), (SELECT count(*) FROM raw_job_tag)"
    before = _q(wh, counts)
    r = CliRunner().invoke(app, base, env=cluster.client_env)
    assert r.exit_code == 0, r.output + repr(r.exception)
    assert _q(wh, counts) == before


def test_the_ingest_dag_asks_by_id_for_tagged_jobs_no_window_returned(cluster, jobs, ingested, work, monkeypatch):
    """The DAG's task for an interval that lies after the jobs (their windows missed them) finds
    their tags in the spool with no job row, asks sacct for them by id and loads the rows and
    tags a window ingest gives; a rerun of the interval changes nothing."""
    from datetime import datetime, timedelta, timezone

    from tierlens.ingest.slurm import SlurmOptions, load_interval

    for name, value in cluster.client_env.items():
        monkeypatch.setenv(name, value)
    wh = work / "home" / "dag-missed.duckdb"
    (last_end,) = _q(ingested, "SELECT epoch(max(end_time))::BIGINT FROM raw_job")[0]
    start = datetime.fromtimestamp(last_end + 3601, tz=timezone.utc)  # every tag an hour before it

    def run() -> dict:
        options = SlurmOptions(clusters=cluster.cluster_name, spool=(str(cluster.spool),))
        return load_interval(wh, start, start + timedelta(minutes=1), options)

    ids = sorted(_all_ids(jobs))
    result = run()
    # the spool may hold other tests' jobs too: at least these came back
    assert result["tagged_asked_by_id"] >= result["tagged_came_back"] >= len(ids), result
    where = f"WHERE job_id IN ({', '.join(repr(j) for j in ids)})"
    cols = "job_id, step_id, allocated_cores, wall_seconds, cpu_user_seconds, state, node, start_time, end_time"
    got = _q(wh, f"SELECT {cols} FROM raw_job {where} ORDER BY ALL")
    assert got and got == _q(ingested, f"SELECT {cols} FROM raw_job {where} ORDER BY ALL")
    tags = f"SELECT job_id, step_id, storage_type, ab_arm, tagged_at FROM raw_job_tag {where} ORDER BY ALL"
    assert _q(wh, tags) and _q(wh, tags) == _q(ingested, tags)
    counts = "SELECT (SELECT count(*) FROM raw_job), (SELECT count(*) FROM raw_job_tag)"
    before = _q(wh, counts)
    assert run()["tagged_came_back"] == 0 and _q(wh, counts) == before


def test_parsable2_fallback_gives_the_same_rows(cluster, ingested, work):
    wh2 = work / "home" / "p2.duckdb"
    r = CliRunner().invoke(
        app, ["ingest", "slurm", "-w", str(wh2), "--format", "parsable2", "--first-hours", "2"], env=cluster.client_env
    )
    assert r.exit_code == 0, r.output
    cols = (
        "job_id, step_id, allocated_cores, wall_seconds, state, bytes_read, bytes_written, node, start_time, end_time"
    )
    a = _q(ingested, f"SELECT {cols} FROM raw_job ORDER BY ALL")
    b = _q(wh2, f"SELECT {cols} FROM raw_job ORDER BY ALL")
    assert a == b
    # CPU times: parsable2 prints milliseconds (UserCPU 00:01.035), JSON microseconds; rounding
    # both to hundredths can land on either side of .xx5, so compare them to the millisecond
    cpu = "SELECT job_id, step_id, cpu_user_seconds, cpu_system_seconds FROM raw_job ORDER BY job_id, step_id"
    json_cpu, p2_cpu = _q(ingested, cpu), _q(wh2, cpu)
    assert [r[:2] for r in json_cpu] == [r[:2] for r in p2_cpu]

    def close(x: float | None, y: float | None) -> bool:
        return x == y or (x is not None and y is not None and abs(x - y) <= 0.0015)

    for j, p in zip(json_cpu, p2_cpu):
        assert close(j[2], p[2]) and close(j[3], p[3]), (j, p)


def test_dbt_marts_pick_up_the_jobs(cluster, jobs, ingested, work, build):
    from tierlens.transform import run_dbt

    # the mart and what it reads, no tests: the project's own tests run in test_dbt_project; what
    # differs between Slurm generations is what sacct gave, which reaches the mart through these
    result = run_dbt(ingested, work / "home" / "dbt", "run", ["--select", "+job_efficiency"])
    assert result.success, result.failures
    p2 = _sacct_p2(cluster, _all_ids(jobs))
    for name in ("srun", "batch"):
        jid = jobs[name]["id"]
        (row,) = _q(
            ingested,
            "SELECT storage_type, ab_arm, efficiency FROM marts.job_efficiency "
            "WHERE batch_system = 'slurm' AND job_id = ? AND step_id = ''",
            [jid],
        )
        s = p2[(jid, "")]
        expected_eff = _total_cpu(s["TotalCPU"]) / (float(s["ElapsedRaw"]) * int(s["AllocCPUS"]))
        assert row[0] == _detect(build, jobs[name]["scratch"])["storage_type"]
        assert row[1] == arm_for_job(jid, ARMS)
        assert row[2] == pytest.approx(expected_eff, abs=0.001)


def test_a_broken_configuration_never_fails_a_job(cluster, work, build):
    """Spool on a symlink, unknown and malformed options: the job runs, tagged, errors logged."""
    link, target = spool_on_a_symlink(work, "optional")
    with plugstack_as(cluster, plugstack_line(cluster.plugin, link, BROKEN_OPTIONS)):
        r = cluster.run(["srun", "-n1", "sh", "-c", "echo ENV:TIERLENS_STORAGE_TYPE=$TIERLENS_STORAGE_TYPE"])
        assert r.returncode == 0
        assert _env(r.stdout)["TIERLENS_STORAGE_TYPE"] == _detect(build, "/nonexistent/dir")["storage_type"]
        assert list(target.iterdir()) == []
    log = (cluster.workdir / "log" / "slurmd.log").read_text()
    assert "tierlens: ignoring plugstack argument 'bogus' (want key=value)" in log
    assert "tierlens: ignoring 'arm_env=B'" in log and "tierlens: max_record=1 out of" in log
    assert "spool record not written" in log and "symlinks are refused" in log
