"""What makes a file written, renamed or removed survive a crash of the machine, shared by the
collector's journal and the warehouse's published snapshot. Line 0: imports nothing of the package,
so the collector's process takes it without the warehouse (and DuckDB)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Flush ``folder``'s entries: a rename or a new file in it is on disk only once its folder is."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
