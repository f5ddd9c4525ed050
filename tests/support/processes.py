"""Processes and ports of the services the tests start (Airflow standalone, Slurm, Spark): a free
loopback port, whether one listens, every process a service started (below it or in its session,
read from /proc), and a log's tail for a failure message."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    """A loopback port nothing listens on now (the service started next takes it a moment later);
    ``kind`` SOCK_DGRAM for a UDP one."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_session(script: str, *args: str) -> subprocess.Popen:
    """``script`` run by this Python in its own process with stdin, stdout and stderr piped as
    text, so that a test drives it line by line (a reader's session held open across a change)."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_READ_TWICE = r"""
import duckdb, json, sys
con = duckdb.connect(sys.argv[1], read_only=True)
print(json.dumps(list(con.execute(sys.argv[2]).fetchone())), flush=True)
sys.stdin.readline()
print(json.dumps(list(con.execute(sys.argv[2]).fetchone())), flush=True)
"""


def read_twice(db: Path, query: str) -> subprocess.Popen:
    """A reader's session on the DuckDB file ``db`` in its own process: it prints ``query``'s row
    as JSON, waits for a line on stdin, then prints it again from the same session."""
    return python_session(_READ_TWICE, str(db), query)


def port_open(port: int) -> bool:
    """Whether something accepts connections on the loopback ``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def process_state(pid: int) -> tuple[int, int] | None:
    """(parent pid, session id) of a live process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return (int(fields[1]), int(fields[3])) if fields[0] != "Z" else None


def started_by(root: int) -> set[int]:
    """``root`` and every live process below it or in its session (it leads a new session)."""
    procs = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := process_state(int(p.name)))}
    found = {pid for pid, (_, sid) in procs.items() if sid == root} | ({root} if root in procs else set())
    grew = True
    while grew:
        below = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        found |= below
        grew = bool(below)
    return found


def tail(log: Path, n: int = 6000) -> str:
    """The last ``n`` characters of ``log``, '' before it exists."""
    return log.read_text(errors="replace")[-n:] if log.exists() else ""
