"""Slurm: accounting from `sacct` and job tags from the tierlens SPANK plugin's spool.

* ``sacct``  - run sacct over bounded time windows (``--json``, ``--parsable2`` as a fallback)
  and turn its jobs and steps into canonical ``job`` rows;
* ``spool``  - read the plugin's spool records (one JSON line per job step) into ``job_tag`` rows;
* ``source`` - ``batches()``: sacct windows then spool tags, for ``tierlens ingest slurm`` and the
  ingest DAG; the watermark and the checkpoints that advance it only past loaded batches.
"""

from .sacct import SacctError, parse_json_document, parse_parsable2, sacct_batches
from .spool import arm_for_job, spool_batches

__all__ = ["SacctError", "arm_for_job", "parse_json_document", "parse_parsable2", "sacct_batches", "spool_batches"]
