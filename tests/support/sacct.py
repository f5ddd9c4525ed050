"""`sacct` as the tests feed it: jobs in the layouts of the Slurm versions tierlens reads (22.05's
capture is a file; 23.02+'s wrapped numbers; 24.11's data_parser v0.0.42 with its sentinels), the
plugin's spool records, and a stand-in sacct executable that prints what a test wrote and logs
every call."""

from __future__ import annotations

import json
import stat
import sys

import pytest

T0 = 1_795_000_000


def new_layout_job(job_id: int, end: int = T0 + 100, state: str = "COMPLETED") -> dict:
    """A job as 23.02+ print it (data_parser v0.0.39 / v0.0.40): wrapped numbers, state lists."""

    def n(v):
        return {"set": True, "infinite": False, "number": v}

    return {
        "job_id": job_id,
        "cluster": "c1",
        "user": "alice",
        "account": "atlas",
        "partition": "prod",
        "nodes": "wn[07-08]",
        "array": {"job_id": 40, "task_id": n(3)},
        "state": {"current": [state], "reason": "None"},
        "exit_code": {"status": ["SUCCESS"], "return_code": n(0)},
        "time": {
            "submission": T0 - 10,
            "start": T0,
            "end": end,
            "elapsed": max(end - T0, 50),
            "user": {"seconds": 0, "microseconds": 0},
            "system": {"seconds": 0, "microseconds": 0},
        },
        "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 8}]},
        "steps": [
            {
                "step": {"id": f"{job_id}.batch", "name": "batch"},
                "nodes": {"count": 1, "range": "wn07", "list": ["wn07"]},
                "state": [state],
                "exit_code": {"status": ["SUCCESS"], "return_code": n(0)},
                "time": {
                    "start": n(T0),
                    "end": n(end),
                    "elapsed": max(end - T0, 50),
                    "user": {"seconds": 500, "microseconds": 250000},
                    "system": {"seconds": 20, "microseconds": 0},
                },
                "tres": {
                    "allocated": [{"type": "cpu", "name": "", "id": 1, "count": 8}],
                    "requested": {"total": [{"type": "fs", "name": "disk", "id": 6, "count": 1000}]},
                    "consumed": {"total": [{"type": "fs", "name": "disk", "id": 6, "count": 300}]},
                },
            }
        ],
    }


def sacct_doc(*jobs: dict) -> str:
    return json.dumps(
        {
            "meta": {"plugin": {"type": "openapi/slurmdbd", "data_parser": "v0.0.40"}},
            "errors": [],
            "warnings": [],
            "jobs": list(jobs),
        },
        indent=1,
    )


def spool_record(job: str, step: str, node: str = "wn01", **kw) -> str:
    rec = {
        "v": 1,
        "tagger": "slurm-spank",
        "cluster": "c1",
        "job_id": job,
        "step_id": step,
        "node": node,
        "job_identity": f"slurm.c1.{job}",
        "storage_type": "raid0",
        "scratch_path": "/scratch",
        "ab_arm": "B",
        "cache_route": "cache:x:1094",
        "start_time": T0,
        "end_time": T0 + 5,
        "device_models": ["ST1", "ST2"],
        "task_pids": [1],
    }
    rec.update(kw)
    return json.dumps(rec) + "\n"


FAKE_SACCT = r"""#!PYTHON
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_SACCT_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
with open(os.environ["FAKE_SACCT_LOG"]) as f:
    call = sum(1 for _ in f)
# FAKE_SACCT_BREAK="N:cut" prints call N's output up to FAKE_SACCT_CUT characters and exits 0;
# "N:exit" prints all of it and exits 2
broken, _, how = os.environ.get("FAKE_SACCT_BREAK", "0:").partition(":")
if "--json" in args:
    if os.environ.get("FAKE_SACCT_NO_JSON"):
        print("sacct: unrecognized option '--json'", file=sys.stderr)
        sys.exit(1)
    out = open(os.environ["FAKE_SACCT_JSON"]).read()
else:
    out = open(os.environ["FAKE_SACCT_P2"]).read()
if call == int(broken) and how == "cut":
    out = out[:int(os.environ["FAKE_SACCT_CUT"])]
sys.stdout.write(out)
if call == int(broken) and how == "exit":
    print("sacct: error: Problem talking to the database: Connection refused", file=sys.stderr)
    sys.exit(2)
"""


@pytest.fixture
def fake_sacct(tmp_path, monkeypatch):
    exe = tmp_path / "sacct"
    exe.write_text(FAKE_SACCT.replace("PYTHON", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_SACCT_LOG", str(log))
    monkeypatch.setenv("FAKE_SACCT_JSON", str(tmp_path / "out.json"))
    monkeypatch.setenv("FAKE_SACCT_P2", str(tmp_path / "out.p2"))

    def calls() -> list[list[str]]:
        out = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        return out

    return exe, calls


NO_VAL, INFINITE, NO_VAL64, INFINITE64 = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF


def wrapped(v: int | None, infinite: bool = False) -> dict:
    return {"set": v is not None, "infinite": infinite, "number": 0 if v is None else v}


def job_2411(
    job_id: int,
    *,
    start: int = T0,
    end: int = T0 + 100,
    state: str = "COMPLETED",
    steps: bool = True,
    cluster: str = "prod",
) -> dict:
    """A job in the layout `sacct --json` of 24.11 prints (openapi/slurmdbd, data_parser v0.0.42):
    job times are plain epochs, limits and codes are {set, infinite, number} wrappers."""
    elapsed = max(end - start, 0) if start and start != NO_VAL and end else 0
    step = {
        "time": {
            "elapsed": elapsed,
            "end": wrapped(end),
            "start": wrapped(start),
            "suspended": 0,
            "system": {"seconds": 3, "microseconds": 500000},
            "limit": wrapped(None, infinite=True),
            "total": {"seconds": 83, "microseconds": 500000},
            "user": {"seconds": 80, "microseconds": 0},
        },
        "exit_code": {"status": ["SUCCESS"], "return_code": wrapped(0), "signal": {"id": wrapped(None), "name": ""}},
        "nodes": {"count": 1, "range": "wn12", "list": ["wn12"]},
        "tasks": {"count": 1},
        "pid": "",
        "CPU": {"requested_frequency": {"min": wrapped(None), "max": wrapped(None)}, "governor": ""},
        "kill_request_user": "",
        "state": [state],
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": wrapped(NO_VAL64)}},
        "step": {"id": f"{job_id}.batch", "name": "batch"},
        "task": {"distribution": "Cyclic"},
        "tres": {
            "requested": {
                "max": [],
                "min": [],
                "average": [],
                "total": [{"type": "fs", "name": "disk", "id": 6, "count": 4096}],
            },
            "consumed": {
                "max": [],
                "min": [],
                "average": [],
                "total": [
                    {"type": "fs", "name": "disk", "id": 6, "count": 1024},
                    {"type": "energy", "name": "", "id": 3, "count": NO_VAL64},
                ],
            },
            "allocated": [{"type": "cpu", "name": "", "id": 1, "count": 4}],
        },
    }
    return {
        "account": "atlas",
        "comment": {"administrator": "", "job": "", "system": ""},
        "allocation_nodes": 1,
        "array": {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}, "task_id": wrapped(None), "task": ""},
        "association": {"account": "atlas", "cluster": cluster, "partition": "", "user": "prdatl", "id": 77},
        "block": "",
        "cluster": cluster,
        "constraints": "",
        "container": "",
        "derived_exit_code": {
            "status": ["SUCCESS"],
            "return_code": wrapped(0),
            "signal": {"id": wrapped(None), "name": ""},
        },
        "time": {
            "elapsed": elapsed,
            "eligible": T0 - 5,
            "end": end,
            "planned": wrapped(5),
            "start": start,
            "submission": T0 - 10,
            "suspended": 0,
            "system": {"seconds": 0, "microseconds": 0},
            "limit": wrapped(2880),
            "total": {"seconds": 0, "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
        },
        "exit_code": {
            "status": ["FAILED" if state == "FAILED" else "SUCCESS"],
            "return_code": wrapped(1 if state == "FAILED" else 0),
            "signal": {"id": wrapped(None), "name": ""},
        },
        "extra": "",
        "failed_node": "",
        "flags": ["STARTED_ON_BACKFILL"] if steps else [],
        "group": "atlas",
        "het": {"job_id": 0, "job_offset": wrapped(None)},
        "job_id": job_id,
        "name": "pilot",
        "licenses": "",
        "mcs": {"label": ""},
        "nodes": "wn12" if steps else "None assigned",
        "partition": "grid",
        "hold": False,
        "priority": wrapped(INFINITE, infinite=False) if not steps else wrapped(1000),
        "qos": "normal",
        "qosreq": "",
        "required": {"CPUs": 4, "memory_per_cpu": wrapped(None), "memory_per_node": wrapped(8000)},
        "kill_request_user": "",
        "restart_cnt": 0,
        "reservation": {"id": 0, "name": ""},
        "script": "",
        "stdin_expanded": "",
        "stdout_expanded": "",
        "stderr_expanded": "",
        "stdout": "",
        "stderr": "",
        "stdin": "",
        "state": {"current": [state], "reason": "None" if steps else "launch failed requeued held"},
        "steps": [step] if steps else [],
        "submit_line": "sbatch pilot.sh",
        "tres": {
            "allocated": [{"type": "cpu", "name": "", "id": 1, "count": 4}] if steps else [],
            "requested": [
                {"type": "cpu", "name": "", "id": 1, "count": 4},
                {"type": "mem", "name": "", "id": 2, "count": 8000},
            ],
        },
        "used_gres": "",
        "user": "prdatl",
        "wckey": {"wckey": "", "flags": []},
        "working_directory": "/home/prdatl",
    }


def doc_2411(*jobs: dict) -> str:
    return json.dumps(
        {
            "jobs": list(jobs),
            "meta": {
                "plugin": {
                    "type": "openapi/slurmdbd",
                    "name": "Slurm OpenAPI slurmdbd",
                    "data_parser": "data_parser/v0.0.42",
                    "accounting_storage": "accounting_storage/slurmdbd",
                },
                "client": {"source": "/dev/pts/0", "user": "root", "group": "root"},
                "command": ["sacct", "--json"],
                "slurm": {
                    "version": {"major": "24", "micro": "5", "minor": "11"},
                    "release": "24.11.5",
                    "cluster": "prod",
                },
            },
            "errors": [],
            "warnings": [],
        },
        indent=2,
    )
