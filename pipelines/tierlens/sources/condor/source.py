"""The HTCondor source as the command line and the ingest DAG both use it: one ``batches()`` entry.

History files (incl. rotated ``history.*``; a folder means its history files) are read whole; with
no files, a schedd's history is read from its watermark on, which ``commit()`` advances once every
batch is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...records import Batch
from .history import BATCH_ADS, history_batches
from .schedd import ScheddHistory


@dataclass
class CondorSource:
    cluster: str
    paths: Sequence[Path] = ()
    reader: ScheddHistory | None = None
    batch_ads: int = BATCH_ADS

    @classmethod
    def open(
        cls,
        cluster: str,
        paths: Sequence[Path] = (),
        schedd: str | None = None,
        pool: str | None = None,
        state_dir: Path | None = None,
        batch_ads: int = BATCH_ADS,
    ) -> CondorSource:
        """Files when ``paths`` are given, else the schedd ``schedd`` ('local' or None: this host's),
        located now so that an unreachable one fails before anything is loaded."""
        paths = [Path(p) for p in paths]
        if paths:
            return cls(cluster, paths, batch_ads=batch_ads)
        from . import schedd as sd  # looked up at call time: tests stand a schedd in for locate_schedd

        name = None if schedd in (None, "local") else schedd
        if state_dir is None:
            raise ValueError("condor source: a schedd's watermark needs a state folder")
        handle = sd.locate_schedd(name, pool)
        reader = ScheddHistory(
            handle,
            sd.watermark_for(state_dir, name or "local"),
            cluster,
            source=f"condor-schedd:{name or 'local'}",
            batch_ads=batch_ads,
        )
        return cls(cluster, reader=reader, batch_ads=batch_ads)

    @property
    def what(self) -> str:
        return (
            f"condor history ({len(self.paths)} path(s))"
            if self.reader is None
            else f"schedd {self.reader.source.removeprefix('condor-schedd:')} history"
        )

    def batches(self) -> Iterator[Batch]:
        if self.reader is not None:
            return self.reader.batches()
        return history_batches(self.paths, self.cluster, self.batch_ads)

    def commit(self) -> None:
        """Call once every batch is loaded: a schedd's next run starts after the newest job seen."""
        if self.reader is not None:
            self.reader.commit()


def configured_cluster() -> str | None:
    """TIERLENS_CLUSTER from the local HTCondor configuration, when there is one."""
    if not os.environ.get("CONDOR_CONFIG") and not Path("/etc/condor/condor_config").exists():
        return None
    try:
        import htcondor2

        return htcondor2.param.get("TIERLENS_CLUSTER") or None
    except Exception:  # noqa: BLE001 - no usable configuration: fall back
        return None
