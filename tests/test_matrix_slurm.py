"""Jobs of every shape on each generation's real cluster, and real sacct captures of each version.

On the cluster of each generation (tests/slurm_fixtures.py: the host's Slurm, Debian 13's and
Debian unstable's): a failed job, a launch failure (srun of a program that does not exist), a
multi-step job and an array go through `tierlens ingest slurm`; every row must match what this
test reads itself from `sacct --parsable2` of the same jobs (never the ingest's --json).

The captures under tests/data/sacct/real/<slurm version>/ were written by this module from those
real clusters (TIERLENS_SAVE_SACCT=1): `sacct --json` and `--parsable2` of the same jobs, taken a
moment apart. test_real_captures_parse needs no cluster: the --json capture of each version must
give the numbers its own --parsable2 capture gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from slurm_fixtures import BROKEN_OPTIONS, plugstack_as, plugstack_line, spool_on_a_symlink
from support.localcluster import wait_array, wait_for
from tierlens.cli import app
from tierlens.sources.slurm.sacct import parse_json_document

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "tests" / "data" / "sacct" / "real"
P2_FIELDS = [
    "JobIDRaw",
    "JobID",
    "State",
    "ExitCode",
    "AllocCPUS",
    "ElapsedRaw",
    "TotalCPU",
    "UserCPU",
    "SystemCPU",
    "Start",
    "End",
    "NodeList",
]
UNSET = {"", "Unknown", "None"}


def _cpu(s: str) -> float:
    """[D-]HH:MM:SS(.fff) or MM:SS.fff as sacct prints TotalCPU."""
    days, _, rest = s.rpartition("-")
    secs = 0.0
    for part in rest.split(":"):
        secs = secs * 60 + float(part)
    return secs + (int(days) * 86400 if days else 0)


def parse_p2(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """Rows of `sacct -P -n -o P2_FIELDS` keyed by (job id, step), read without tierlens' parser."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        c = dict(zip(P2_FIELDS, line.split("|"), strict=True))
        jid, _, step = c["JobIDRaw"].partition(".")
        out[(jid, step)] = c
    return out


def data_parser(sacct_json: str) -> str:
    plugin = json.loads(sacct_json)["meta"]["plugin"]
    return (plugin.get("data_parser") or plugin["type"]).split("/")[-1]


# Slurm 22.05's --json (dbv0.0.38) gives every job and step `exit_code: {status: SUCCESS,
# return_code: 0}`, even a job that exited 3 (--parsable2 of the same job: ExitCode 3:0).
JSON_WITHOUT_EXIT_CODES = {"dbv0.0.38"}


def compare(rows: list[dict], p2: dict[tuple[str, str], dict[str, str]], exit_codes: bool = True) -> int:
    """Assert each parsed row against sacct's own --parsable2 figures; returns how many compared."""
    seen = 0
    by_key = {(r["job_id"], r["step_id"]): r for r in rows}
    for key, s in p2.items():
        if key not in by_key:
            assert key[1] == "extern" or s["Start"] in UNSET, f"{key} missing from the --json rows"
            continue
        r = by_key[key]
        assert r["state"] == s["State"].split()[0], key
        if exit_codes:
            assert r["exit_code"] == int(s["ExitCode"].split(":")[0]), key
        if s["Start"] not in UNSET:
            assert r["wall_seconds"] == float(s["ElapsedRaw"]), key
            assert int(r["start_time"].timestamp()) == int(s["Start"]), key
        if int(s["AllocCPUS"]):
            assert r["allocated_cores"] == int(s["AllocCPUS"]), key
        cpu = (r["cpu_user_seconds"] or 0) + (r["cpu_system_seconds"] or 0)
        assert cpu == pytest.approx(_cpu(s["TotalCPU"]), abs=0.0015), key
        seen += 1
    return seen


# ---- live, on every generation --------------------------------------------------------------------
@pytest.fixture(scope="session")
def shaped_jobs(cluster, work) -> dict[str, list[str]]:
    """Job ids by shape, once slurmdbd has them all finished."""
    out = work / "shaped"
    out.mkdir()
    sb = ["sbatch", "--parsable", "-o", str(out / "%j.out")]
    failed = cluster.run([*sb, "--wrap", "timeout 1 sh -c 'while :; do :; done'; exit 3"]).stdout.strip()
    r = cluster.run(["srun", "-n1", "-J", "tl-launch-failure", "/nonexistent/tierlens-no-such-program"], check=False)
    assert r.returncode != 0
    # slurmdbd may learn of the job a moment after srun returns
    launch = wait_for(
        "the launch failure in sacct",
        lambda: cluster.run(
            ["sacct", "-X", "-n", "-P", "-o", "JobIDRaw", "-S", "now-10minutes", "--name", "tl-launch-failure"]
        ).stdout.split(),
        60,
        interval=1.0,
    )
    multi = cluster.run(
        [
            *sb,
            "--wrap",
            "srun -n1 true; srun -n1 sh -c 'dd if=/dev/zero bs=1M count=4 "
            "status=none > /dev/null'; srun -n1 sh -c 'exit 2'; true",
        ]
    ).stdout.strip()
    array = cluster.run([*sb, "--array=0-2", "--wrap", "test $SLURM_ARRAY_TASK_ID != 1"]).stdout.strip()
    ids = {"failed": [failed], "launch": launch[-1:], "multi": [multi]}
    for jid in (failed, multi):
        cluster.wait_accounted(jid)
    cluster.wait_accounted(launch[-1])
    ids["array"] = wait_array(cluster, array, 3)
    return ids


def _capture(cluster, ids: list[str]) -> tuple[str, str]:
    env = {"SLURM_TIME_FORMAT": "%s"}
    js = cluster.run(["sacct", "--json", "-a", "-j", ",".join(ids)]).stdout
    p2 = cluster.run(
        ["sacct", "-a", "-P", "-n", "--noconvert", "-j", ",".join(ids), "-o", ",".join(P2_FIELDS)], env=env
    ).stdout
    return js, p2


def _slurm_version(cluster) -> str:
    return cluster.run(["sinfo", "--version"]).stdout.split()[-1]


@pytest.mark.integration
@pytest.mark.slow
def test_shapes_through_the_ingest(cluster, shaped_jobs, work):
    ids = [j for v in shaped_jobs.values() for j in v]
    js, p2_text = _capture(cluster, ids)
    p2 = parse_p2(p2_text)
    # the shapes are what they claim, by sacct's own account
    assert p2[(shaped_jobs["failed"][0], "")]["State"] == "FAILED"
    assert p2[(shaped_jobs["failed"][0], "")]["ExitCode"] == "3:0"
    assert p2[(shaped_jobs["launch"][0], "")]["State"] == "FAILED"
    multi = shaped_jobs["multi"][0]
    assert {k[1] for k in p2 if k[0] == multi} >= {"", "batch", "0", "1", "2"}
    assert p2[(multi, "2")]["ExitCode"] == "2:0" and p2[(multi, "")]["State"] == "COMPLETED"
    states = [p2[(t, "")]["State"] for t in shaped_jobs["array"]]
    assert states == ["COMPLETED", "FAILED", "COMPLETED"]

    rows, _, rejects = parse_json_document(js, "sacct --json")
    assert rejects == []
    exit_codes = data_parser(js) not in JSON_WITHOUT_EXIT_CODES
    assert compare(rows, p2, exit_codes) >= len(ids) + 4

    wh = work / "home-shapes" / "warehouse.duckdb"
    r = CliRunner().invoke(app, ["ingest", "slurm", "-w", str(wh), "--first-hours", "2"], env=cluster.client_env)
    assert r.exit_code == 0, r.output + repr(r.exception)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        cols = [
            "job_id",
            "step_id",
            "state",
            "exit_code",
            "wall_seconds",
            "allocated_cores",
            "cpu_user_seconds",
            "cpu_system_seconds",
            "start_time",
        ]
        got = [dict(zip(cols, t)) for t in con.execute(f"SELECT {', '.join(cols)} FROM raw_job").fetchall()]
        assert con.execute("SELECT count(*) FROM raw_rejects").fetchone() == (0,)
    finally:
        con.close()
    wanted = {k: v for k, v in p2.items() if k[0] in ids}
    assert compare([g for g in got if g["job_id"] in ids], wanted, exit_codes) >= len(ids) + 4

    if os.environ.get("TIERLENS_SAVE_SACCT"):
        d = CAPTURES / _slurm_version(cluster)
        d.mkdir(parents=True, exist_ok=True)
        (d / "sacct.json").write_text(js)
        (d / "parsable2.txt").write_text(p2_text)
        (d / "capture.json").write_text(
            json.dumps(
                {
                    "format": 1,
                    "generation": cluster.generation,
                    "slurm": _slurm_version(cluster),
                    "data_parser": data_parser(js),
                    "parsable2_fields": P2_FIELDS,
                    "jobs": shaped_jobs,
                },
                indent=1,
            )
            + "\n"
        )


# ---- the plugin never fails a job --------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.slow
def test_required_with_a_broken_configuration_still_runs_jobs(cluster, work):
    """Loaded as `required`, any error the plugin returned would fail the step (Slurm 23.11 and
    later fail it even for `optional`): a spool on a symlink, unknown and malformed options and a
    scratch that does not exist must leave srun, sbatch and an inner step all successful."""
    link, target = spool_on_a_symlink(work, "required")
    with plugstack_as(cluster, plugstack_line(cluster.plugin, link, BROKEN_OPTIONS, control="required")):
        r = cluster.run(["srun", "-n1", "sh", "-c", "echo TYPE=$TIERLENS_STORAGE_TYPE"], check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "TYPE=" in r.stdout and "TYPE=\n" not in r.stdout
        out = work / "required-batch.out"
        jid = cluster.run(["sbatch", "--parsable", "-o", str(out), "--wrap", "srun -n1 true; echo done"]).stdout.strip()
        job = cluster.wait_accounted(jid)
        p2 = parse_p2(
            cluster.run(
                ["sacct", "-a", "-P", "-n", "--noconvert", "-j", jid, "-o", ",".join(P2_FIELDS)],
                env={"SLURM_TIME_FORMAT": "%s"},
            ).stdout
        )
        assert {k[1]: v["State"] for k, v in p2.items()} == {"": "COMPLETED", "batch": "COMPLETED", "0": "COMPLETED"}
        assert "done" in out.read_text().splitlines() and job
        assert list(target.iterdir()) == []
    log = (cluster.workdir / "log" / "slurmd.log").read_text()
    assert "symlinks are refused" in log


@pytest.mark.integration
@pytest.mark.slow
def test_doctor_catches_required(cluster):
    with plugstack_as(cluster, plugstack_line(cluster.plugin, cluster.spool, control="required")) as plug:
        r = CliRunner().invoke(app, ["doctor", "--json", "--slurm-conf", str(cluster.conf)], env=cluster.client_env)
        assert r.exit_code == 1, r.output
        (stack,) = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "plugstack line"]
        assert stack["status"] == "fail" and "required" in stack["detail"] and f"{plug}:1" in stack["detail"]


# ---- saved captures, no cluster ----------------------------------------------------------------
@pytest.mark.parametrize("version", sorted(p.name for p in CAPTURES.glob("*") if (p / "sacct.json").exists()))
def test_real_captures_parse(version):
    d = CAPTURES / version
    meta = json.loads((d / "capture.json").read_text())
    assert meta["parsable2_fields"] == P2_FIELDS
    text = (d / "sacct.json").read_text()
    rows, _, rejects = parse_json_document(text, str(d / "sacct.json"))
    assert rejects == []
    p2 = parse_p2((d / "parsable2.txt").read_text())
    n_jobs = sum(len(v) for v in meta["jobs"].values())
    assert compare(rows, p2, data_parser(text) not in JSON_WITHOUT_EXIT_CODES) >= n_jobs + 4
