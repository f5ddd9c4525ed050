"""Ingest: every source's records into the warehouse, for the command line and the ingest DAG alike.

    <source>.py   one per built-in source (synthetic, slurm, condor, xrootd): its options dataclass
                  (whose defaults are the only ones) and its ``load_interval(warehouse, start, end,
                  options)``; slurm.py also runs `tierlens ingest slurm` from its watermark
    interval      loading one interval: cut to it, landed while a transform holds the warehouse,
                  its source_interval record (what it brought, or why nothing)
    intervals     which rows belong to an interval (what makes every load idempotent)
    tagged        the one rule for jobs the plugin tagged that no sacct window returned

The sources' readers (sacct, history files, spool, collector batches) are in sources/; the
registry of sources (sources/registry.py) names each module here. cli/ingest.py and the ingest
DAG's tasks only turn options or settings into these calls.

Nothing is imported here: the settings read the options' defaults while Airflow parses a DAG file.
"""
