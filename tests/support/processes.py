"""Processes and ports of the services the tests start (Airflow standalone, Slurm, Spark): a free
loopback port, whether one listens, every process a service started (below it or in its session,
read from /proc), and a log's tail for a failure message."""

from __future__ import annotations

import socket
from pathlib import Path


def free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    """A loopback port nothing listens on now (the service started next takes it a moment later);
    ``kind`` SOCK_DGRAM for a UDP one."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
