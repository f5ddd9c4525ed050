"""Peak resident memory of a child process and everything it starts, sampled from /proc.

A dbt build or a tierlens step forks helpers (Spark's JVM, dbt's threads, receivers), so the
child's own getrusage misses most of it; the benches sample the whole tree instead.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path


def tree_rss_kib(pid: int) -> int:
    """Resident KiB of ``pid`` and all its descendants now (0 for processes already gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


class PeakSampler:
    """``with PeakSampler(proc) as s: proc.wait()`` then ``s.peak_mib``: the tree's peak RSS."""

    def __init__(self, proc: subprocess.Popen, every: float = 0.1) -> None:
        self.proc, self.every, self.peak_kib = proc, every, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.proc.pid))
            time.sleep(self.every)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024
