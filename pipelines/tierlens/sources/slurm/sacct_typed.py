"""sacct ``--json`` jobs decoded into typed structs holding only the fields tierlens maps, and
turned into JOB row tuples without a dict per job.

The structs accept the layouts of 22.05 (dbv0.0.38: plain numbers, state strings) and of 23.02 to
25.x (data_parser v0.0.39+: ``{set, infinite, number}`` wrappers, state and status lists, step
ids "JOB.STEP"). They are strict on purpose: a value of a type the generic path would treat
specially (a number written as a string, a boolean, a wrapper nested in a wrapper) fails the typed
decode, and that job goes to the generic path in json_job.py, which rejects it or maps it exactly as
before. What the structs accept, ``job_rows`` maps to the same values as ``json_job.json_job``
(tests/test_slurm_sacct.py compares the two row for row).

Times are integer microseconds since the epoch (the JOB record's timestamp unit), so the Arrow
columns are built from plain integers.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import lru_cache

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ...records import job_identity, valid_sluid
from .values import SENTINELS as _SENTINELS, first_node, to_job_order

#: the last second datetime can hold (9999-12-31T23:59:59); later epochs are rejected generically
_MAX_EPOCH = 253_402_300_799
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)


class Fallback(Exception):
    """This job needs the generic path (a value it treats in its own way)."""


class Number(Struct):
    """A {set, infinite, number} wrapper (v0.0.39+) or a {seconds, microseconds} CPU time: one
    struct for both, since a field may hold either and msgspec takes one object type per field."""

    set: bool = True
    infinite: bool = False
    number: int | float | None = None
    seconds: int | float | None | UnsetType = UNSET
    microseconds: int | float | None = None


Num = int | float | Number | None


class Tres(Struct):
    type: str | None = None
    name: str | None = None
    count: Num = None


class StateObj(Struct):
    current: str | list[str] | None = None


State = str | list[str] | StateObj | None


class ExitCode(Struct):
    return_code: Num = None


class StepId(Struct):
    id: int | str | None | UnsetType = UNSET
    name: int | str | None = None


class StepNodes(Struct):
    range: str | None = None
    hosts: list[str] | None = msgspec.field(default=None, name="list")


class TresTotals(Struct):
    total: list[Tres] | None = None


class StepTres(Struct):
    allocated: list[Tres] | None = None
    requested: TresTotals | None = None
    consumed: TresTotals | None = None


class Times(Struct):
    start: Num = None
    end: Num = None
    submission: Num = None
    elapsed: Num = None
    user: Num = None
    system: Num = None


class Step(Struct):
    step: StepId
    nodes: StepNodes | None = None
    tres: StepTres | None = None
    time: Times | None = None
    state: State = None
    exit_code: ExitCode | None = None


class JobTres(Struct):
    allocated: list[Tres] | None = None
    requested: list[Tres] | None = None


class Job(Struct):
    job_id: int | str
    cluster: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    nodes: str | None = None
    time: Times | None = None
    tres: JobTres | None = None
    steps: list[Step] | None = None
    state: State = None
    exit_code: ExitCode | None = None
    sluid: str | None = None


decoder = msgspec.json.Decoder(Job)
#: errors of a typed decode that send the job to the generic path
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError)


# ---- values, as sacct's _num / _ts / _secs / _state / _exit / _tres_count --------------------
def _plain(v: int | float | None) -> int | float | None:
    if v is None or v in _SENTINELS:
        return None
    return v


def _num(v: Num) -> int | float | None:
    if type(v) is Number:
        if not v.set or v.infinite:
            return None
        v = v.number
    return _plain(v)  # type: ignore[arg-type]


#: below the smallest sentinel (NO_VAL): a plain integer that is a quantity as it stands
_NO_VAL = 0xFFFFFFFE


def _us(v: Num) -> int | None:
    """A time in microseconds since the epoch; 0, negative and sentinels are no time."""
    if type(v) is int and 0 < v < _NO_VAL:
        return v * 1_000_000
    n = _num(v)
    if not n or n <= 0:
        return None
    if type(n) is int:
        if n > _MAX_EPOCH:
            raise Fallback
        return n * 1_000_000
    try:  # a fractional epoch: rounded exactly as datetime.fromtimestamp rounds it
        return (datetime.fromtimestamp(n, tz=timezone.utc) - _EPOCH) // _ONE_US
    except (ValueError, OverflowError, OSError) as e:
        raise Fallback from e


def _secs(v: Num) -> float | None:
    if type(v) is Number and v.seconds is not UNSET:
        s, us = v.seconds, v.microseconds
        if type(s) is int and type(us) is int and s < _NO_VAL and us < _NO_VAL:
            return s + us / 1e6
        s, us = _plain(s) or 0, _plain(us) or 0  # type: ignore[arg-type]
        return float(s) + float(us) / 1e6
    if type(v) is int and v < _NO_VAL:
        return float(v)
    if v is None:
        return None
    n = _num(v)
    return None if n is None else float(n)


def _state(v: State) -> str | None:
    if type(v) is StateObj:
        v = v.current
    if type(v) is list:
        v = v[0] if v else None
    return v.upper() if v else None  # type: ignore[union-attr]


def _exit(v: ExitCode | None) -> int | None:
    if v is None:
        return None
    n = v.return_code
    if type(n) is int and n < _NO_VAL:
        return n
    n = _num(n)
    return None if n is None else int(n)


def _tres(items: list[Tres] | None, type_: str, name: str | None = None) -> int | float | None:
    if items is None:
        return None
    for t in items:
        if t.type == type_ and (name is None or t.name == name):
            n = t.count
            if type(n) is int and 0 <= n < _NO_VAL:
                return n
            n = _num(n)
            if n is not None and n >= 0:
                return n
    return None


def _step_id(s: StepId) -> str:
    raw = s.name if s.id is UNSET else s.id
    text = str(raw)
    return text.split(".", 1)[1] if "." in text else text


#: host lists repeat across jobs: their first host is looked up once
_first_node = lru_cache(maxsize=1 << 16)(first_node)


def _int(v: int | float | None) -> int | None:
    return int(v) if v else None


_EMPTY_TIMES = Times()
_NONE = None

#: The fields of the tuples ``job_rows`` builds, in the order it writes them. Each position is
#: looked up by name below; when records.JOB gains or reorders a field, ``_to_job`` moves every
#: value to its JOB position (the new field null) until this order and the tuples follow it.
BUILT = (
    "batch_system",
    "cluster",
    "job_id",
    "step_id",
    "job_identity",
    "user_name",
    "account",
    "vo",
    "job_class",
    "partition",
    "node",
    "node_list",
    "submit_time",
    "start_time",
    "end_time",
    "allocated_cores",
    "cpu_user_seconds",
    "cpu_system_seconds",
    "wall_seconds",
    "state",
    "exit_code",
    "bytes_read",
    "bytes_written",
    "sluid",
)
_to_job = to_job_order(BUILT)
_CPU_USER, _CPU_SYSTEM = BUILT.index("cpu_user_seconds"), BUILT.index("cpu_system_seconds")
_BYTES_READ, _BYTES_WRITTEN = BUILT.index("bytes_read"), BUILT.index("bytes_written")


def job_rows(j: Job) -> list[tuple]:
    """The job's row and its steps' rows as tuples in JOB's column order (built in BUILT's); []
    for a pending job.

    Raises Fallback for a value only the generic path maps (it also rejects what is wrong)."""
    jid = j.job_id
    if type(jid) is not int:
        if jid == "":
            raise Fallback
    jid = str(jid)
    t = j.time or _EMPTY_TIMES
    start, end = _us(t.start), _us(t.end)
    if start is None and end is None:
        return []  # pending: nothing to account yet
    cluster = j.cluster or ""
    sluid = valid_sluid(j.sluid)
    ident = job_identity("slurm", cluster, jid, sluid)
    nodes = j.nodes
    # The columns after the step id that the job's row and each of its steps' rows hold alike
    # (identity, user, account, no vo or job class from sacct, partition): made once per job.
    owner = (ident, j.user, j.account, _NONE, _NONE, j.partition)
    submit = _us(t.submission)
    tres = j.tres
    cores = _tres(tres.allocated, "cpu") if tres is not None else None
    if cores is None and start is None and tres is not None:
        cores = _tres(tres.requested, "cpu")  # a launch failure: the cores it asked for
    job_cores = _int(cores)
    steps: list[tuple] = []
    for s in j.steps or ():
        sid = _step_id(s.step)
        sn = s.nodes
        s_range = sn.range if sn is not None else None
        s_list = sn.hosts if sn is not None else None
        st = s.tres
        if st is not None:
            s_cores = _tres(st.allocated, "cpu")
            rin = _tres(st.requested.total, "fs", "disk") if st.requested is not None else None
            rout = _tres(st.consumed.total, "fs", "disk") if st.consumed is not None else None
        else:
            s_cores = rin = rout = None
        tt = s.time or _EMPTY_TIMES
        steps.append(
            (
                "slurm",
                cluster,
                jid,
                sid,
                *owner,
                s_list[0] if s_list else _first_node(s_range or nodes),
                s_range or nodes,
                submit,
                _us(tt.start),
                _us(tt.end),
                int(s_cores) if s_cores else job_cores,
                _secs(tt.user),
                _secs(tt.system),
                _secs(tt.elapsed),
                _state(s.state),
                _exit(s.exit_code),
                int(rin) if rin is not None else None,
                int(rout) if rout is not None else None,
                sluid,
            )
        )
    if steps:
        # sacct's TotalCPU of a job is the sum over its steps; 22.05 leaves the job's own at 0
        cpu_user, cpu_system = _total(steps, _CPU_USER), _total(steps, _CPU_SYSTEM)
    else:
        cpu_user, cpu_system = _secs(t.user) or 0.0, _secs(t.system) or 0.0
    job = (
        "slurm",
        cluster,
        jid,
        "",
        *owner,
        _first_node(nodes),
        nodes,
        submit,
        start,
        end,
        job_cores,
        cpu_user,
        cpu_system,
        _secs(t.elapsed) if start is not None else 0.0,
        _state(j.state),
        _exit(j.exit_code),
        _total(steps, _BYTES_READ),
        _total(steps, _BYTES_WRITTEN),
        sluid,
    )
    if _to_job is not None:
        return [_to_job(job), *map(_to_job, steps)]
    return [job, *steps]


def _total(rows: list[tuple], col: int) -> float | int | None:
    if len(rows) == 1:
        v = rows[0][col]
        return None if v is None else 0 + v  # as sum(): -0.0 becomes 0.0
    vals = [r[col] for r in rows if r[col] is not None]
    return sum(vals) if vals else None
