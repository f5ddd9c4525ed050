"""Job history straight from a running schedd (``htcondor2.Schedd.history``), with a watermark.

``Schedd.history(since=JOB_ID)`` returns the jobs recorded in the history after that job, newest
first. tierlens keeps the newest job id it has loaded in a small watermark file (one per schedd,
under ``$TIERLENS_HOME/state/``) and advances it only after every batch of the run is loaded, so a
run that fails is simply repeated (loading is idempotent). If the watermark job has meanwhile
been rotated out of the history, the schedd returns the whole history again; that reloads rows
that are already there and changes nothing.

Back-fill old history from the files (``tierlens ingest condor /var/lib/condor/spool``) first:
a schedd returns its answer as one list, so the first run without a watermark holds all of it
in memory.

Not tested against a live schedd here (there are no daemons in CI); the watermark logic and the
mapping are tested with a stand-in schedd object (tests/test_condor_history.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ...records import Batch
from ..watermark import Watermark
from .history import BATCH_ADS, ads_to_batches

_JOB_ID = re.compile(r"^\d+\.\d+$")


def watermark_for(state_dir: Path, schedd_name: str) -> Watermark:
    safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", schedd_name or "local")
    return Watermark(state_dir / f"condor-history-{safe}.json")


def locate_schedd(name: str | None = None, pool: str | None = None):
    """The local schedd, or the one called ``name`` in ``pool`` (via its collector)."""
    import htcondor2

    if name is None and pool is None:
        return htcondor2.Schedd()
    collector = htcondor2.Collector(pool) if pool else htcondor2.Collector()
    ad = collector.locate(htcondor2.DaemonType.Schedd, name) if name else collector.locate(htcondor2.DaemonType.Schedd)
    return htcondor2.Schedd(ad)


class ScheddHistory:
    """Batches of the jobs a schedd recorded since the watermark; ``commit()`` advances it."""

    def __init__(
        self, schedd, watermark: Watermark, cluster: str, source: str = "condor-schedd", batch_ads: int = BATCH_ADS
    ) -> None:
        self.schedd = schedd
        self.watermark = watermark
        self.cluster = cluster
        self.source = source
        self.batch_ads = batch_ads
        self.newest: str | None = None
        self.ads = 0

    def since(self) -> str | None:
        """The newest job loaded last time (``ClusterId.ProcId``), None before the first run."""
        value = self.watermark.read().get("since")
        return value if isinstance(value, str) and _JOB_ID.match(value) else None

    def batches(self) -> Iterator[Batch]:
        since = self.since()
        ads = self.schedd.history(constraint=None, projection=[], match=-1, since=since)

        def located():
            for ad in ads:
                cluster_id, proc_id = ad.get("ClusterId"), ad.get("ProcId")
                job = f"{cluster_id}.{proc_id}"
                if self.newest is None and _JOB_ID.match(job):
                    self.newest = job  # newest first: the first ad is the new watermark
                self.ads += 1
                yield f"{self.source}:job {job}", ad

        yield from ads_to_batches(located(), self.source, self.cluster, self.batch_ads)

    def commit(self) -> None:
        """Call after every batch is loaded: the next run starts after the newest job seen."""
        if self.newest is not None:
            self.watermark.write({"since": self.newest})
