"""Where an incremental source has got to, so that the next run starts there.

One small JSON file, replaced atomically (written aside, then renamed) and never written through
a symlink. A file may hold one stream's mark (an HTCondor schedd: ``{"since": "123.0"}``) or one
per key (Slurm: one entry per ``--clusters``, beside the warehouse it describes). A file that is
missing or unreadable reads as no mark: the source then starts from its default window, and the
warehouse's upsert by natural key makes anything loaded twice change nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Watermark:
    path: Path
    key: str | None = None

    def _file(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def read(self) -> dict:
        """The mark, or {} when there is none."""
        data = self._file()
        value = data if self.key is None else data.get(self.key)
        return value if isinstance(value, dict) else {}

    def write(self, value: dict) -> None:
        """Replace the mark (other keys of a shared file are kept)."""
        whole = value if self.key is None else self._file() | {self.key: value}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(whole, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
