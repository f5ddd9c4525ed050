"""One decoded `sacct --json` job to its JOB rows (the generic path): the job's row, then one row
per step. Every layout from openapi dbv0.0.38 (22.05) to v0.0.45 (26.05) is read here; a value
that cannot be read raises FieldError naming the field."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ...records import job_identity, valid_sluid
from .rows import job_row
from .values import SENTINELS, first_node


class FieldError(ValueError):
    """A field of a job (or of the whole document) that cannot be read: its name, where in the
    output it was, and the raw text kept with the reject."""

    def __init__(self, field: str, msg: str, offset: int = 0, raw: str = "") -> None:
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.offset = offset
        self.raw = raw


def _num(v: Any) -> float | None:
    """A number from 0.0.38 (plain) or 0.0.39+ ({"set", "infinite", "number"}) layouts."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return None if v in SENTINELS else v
    if isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v.strip()):
        n = float(v) if "." in v else int(v)
        return None if n in SENTINELS else n
    raise ValueError(f"not a number: {v!r}")


def _ts(v: Any) -> datetime | None:
    n = _num(v)
    if not n or n <= 0:
        return None
    return datetime.fromtimestamp(n, tz=timezone.utc)


def _secs(v: Any) -> float | None:
    """{"seconds", "microseconds"} (CPU times) or a plain number."""
    if v is None:
        return None
    if isinstance(v, dict) and "seconds" in v:
        s, us = _num(v.get("seconds")) or 0, _num(v.get("microseconds")) or 0
        return float(s) + float(us) / 1e6
    n = _num(v)
    return None if n is None else float(n)


def _state(v: Any) -> str | None:
    if isinstance(v, dict):
        v = v.get("current")
    if isinstance(v, list):
        v = v[0] if v else None
    return str(v).upper() if v else None


def _exit(v: Any) -> int | None:
    if isinstance(v, dict):
        rc = v.get("return_code")
        n = _num(rc)
        return None if n is None else int(n)
    return None


def _tres_count(items: Any, type_: str, name: str | None = None) -> float | None:
    if not isinstance(items, list):
        return None
    for t in items:
        if isinstance(t, dict) and t.get("type") == type_ and (name is None or t.get("name") == name):
            n = _num(t.get("count"))
            if n is not None and n >= 0:
                return n
    return None


def _step_id(raw: Any) -> str:
    s = str(raw)
    return s.split(".", 1)[1] if "." in s else s


def _get(d: dict, field: str, conv, *path: str) -> Any:
    v: Any = d
    for p in path:
        v = v.get(p) if isinstance(v, dict) else None
    try:
        return conv(v)
    except (ValueError, TypeError) as e:
        raise FieldError(field, str(e)) from e


def json_job(job: dict) -> Iterator[tuple[int | None, dict]]:
    if not isinstance(job, dict):
        raise FieldError("job", "not an object")
    jid = job.get("job_id")
    if not isinstance(jid, (int, str)) or str(jid) == "":
        raise FieldError("job_id", f"missing or not an id: {jid!r}")
    jid = str(jid)
    cluster = job.get("cluster") or ""
    start = _get(job, "start_time", _ts, "time", "start")
    end = _get(job, "end_time", _ts, "time", "end")
    if start is None and end is None:
        return  # pending: nothing to account yet
    # v0.0.45 (26.05): the run's SLUID ('' or null when unset; earlier layouts have none)
    sluid = valid_sluid(job.get("sluid"))
    common = dict(
        batch_system="slurm",
        cluster=cluster,
        job_id=jid,
        job_identity=job_identity("slurm", cluster, jid, sluid),
        sluid=sluid,
        user_name=job.get("user"),
        account=job.get("account"),
        partition=job.get("partition"),
        submit_time=_get(job, "submit_time", _ts, "time", "submission"),
    )
    cores = _get(job, "allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "allocated")
    if cores is None and start is None:
        # a launch failure may have no allocation; its wall is 0, so the cores it asked for
        # change no efficiency and keep the job countable
        cores = _get(job, "allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "requested")
    nodes = job.get("nodes") if isinstance(job.get("nodes"), str) else None
    steps = job.get("steps") or []
    if not isinstance(steps, list):
        raise FieldError("steps", "not a list")
    step_rows: list[tuple[int, dict]] = []
    for k, s in enumerate(steps):
        if not isinstance(s, dict):
            raise FieldError(f"steps[{k}]", "not an object")
        sid = _step_id((s.get("step") or {}).get("id", s.get("step", {}).get("name")))
        s_nodes = s.get("nodes") or {}
        s_range = s_nodes.get("range") if isinstance(s_nodes, dict) else None
        s_list = s_nodes.get("list") if isinstance(s_nodes, dict) else None
        s_cores = _get(s, f"steps[{k}].allocated_cores", lambda t: _tres_count(t, "cpu"), "tres", "allocated")
        user = _get(s, f"steps[{k}].cpu_user_seconds", _secs, "time", "user")
        system = _get(s, f"steps[{k}].cpu_system_seconds", _secs, "time", "system")
        rin = _get(s, f"steps[{k}].bytes_read", lambda t: _tres_count(t, "fs", "disk"), "tres", "requested", "total")
        rout = _get(s, f"steps[{k}].bytes_written", lambda t: _tres_count(t, "fs", "disk"), "tres", "consumed", "total")
        step_rows.append(
            (
                k,
                job_row(
                    **common,
                    step_id=sid,
                    node=(s_list[0] if s_list else first_node(s_range or nodes)),
                    node_list=s_range or nodes,
                    start_time=_get(s, f"steps[{k}].start_time", _ts, "time", "start"),
                    end_time=_get(s, f"steps[{k}].end_time", _ts, "time", "end"),
                    allocated_cores=int(s_cores) if s_cores else (int(cores) if cores else None),
                    cpu_user_seconds=user,
                    cpu_system_seconds=system,
                    wall_seconds=_get(s, f"steps[{k}].wall_seconds", _secs, "time", "elapsed"),
                    state=_state(s.get("state")),
                    exit_code=_exit(s.get("exit_code")),
                    bytes_read=int(rin) if rin is not None else None,
                    bytes_written=int(rout) if rout is not None else None,
                ),
            )
        )

    def total(col: str) -> float | int | None:
        vals = [r[col] for _, r in step_rows if r[col] is not None]
        return sum(vals) if vals else None

    user_job = _get(job, "cpu_user_seconds", _secs, "time", "user") or 0.0
    sys_job = _get(job, "cpu_system_seconds", _secs, "time", "system") or 0.0
    yield (
        None,
        job_row(
            **common,
            step_id="",
            node=first_node(nodes),
            node_list=nodes,
            start_time=start,
            end_time=end,
            allocated_cores=int(cores) if cores else None,
            # sacct's TotalCPU of a job is the sum over its steps; 22.05 leaves the job's own at 0
            cpu_user_seconds=total("cpu_user_seconds") if step_rows else user_job,
            cpu_system_seconds=total("cpu_system_seconds") if step_rows else sys_job,
            wall_seconds=_get(job, "wall_seconds", _secs, "time", "elapsed") if start is not None else 0.0,
            state=_state(job.get("state")),
            exit_code=_exit(job.get("exit_code")),
            bytes_read=total("bytes_read"),
            bytes_written=total("bytes_written"),
        ),
    )
    yield from step_rows
