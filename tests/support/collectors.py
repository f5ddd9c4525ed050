"""The collector as a real process, as systemd runs it: a UDP socket held outside and handed over
with the socket-activation protocol (LISTEN_FDS), the out folder's stats read back, and bounded
waits for what it reports."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TIERLENS = str(Path(sys.executable).parent / "tierlens")


def udp_socket(rcvbuf: int) -> socket.socket:
    if os.geteuid() != 0:
        pytest.skip("needs root: a receive buffer above net.core.rmem_max (SO_RCVBUFFORCE)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)  # SO_RCVBUFFORCE (Linux)
    sock.bind(("127.0.0.1", 0))
    return sock


def listen_command(port: int, out: Path, *extra: str) -> list[str]:
    """The collector's command line when it binds loopback ``port`` itself (no socket handed over)."""
    return [TIERLENS, "collect", "xrootd", "--listen", f"127.0.0.1:{port}", "--out", str(out), *extra]


def start_collector(sock: socket.socket, out: Path, *extra: str) -> subprocess.Popen:
    """The collector with ``sock`` as fd 3 and LISTEN_PID set to its own pid (exec keeps it)."""
    fd = sock.fileno()
    cmd = (
        f'exec 3<&{fd} {fd}<&-; LISTEN_FDS=1 LISTEN_PID=$$ exec "$0" collect xrootd --out "$1" '
        f'--max-seconds 0.5 --cache-grace 1 "${{@:2}}"'
    )
    return subprocess.Popen(
        ["bash", "-c", cmd, TIERLENS, str(out), *extra],
        pass_fds=(fd,),
        stdout=subprocess.DEVNULL,
        stderr=open(out.parent / "collector.log", "a"),
    )


@contextmanager
def running_collector(proc: subprocess.Popen, sock: socket.socket | None = None) -> Iterator[subprocess.Popen]:
    """The running collector; at the end it is stopped as systemd stops the unit (SIGTERM), and
    must drain and exit 0. Killed instead if the test failed first."""
    try:
        yield proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, "the collector did not exit cleanly on SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if sock is not None:
            sock.close()


def collector_stats(out: Path) -> dict:
    try:
        return json.loads((out / "collector-stats.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def wait_until(cond, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
