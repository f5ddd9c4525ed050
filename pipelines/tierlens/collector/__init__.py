"""XRootD monitoring collector: UDP (or a tcpdump capture) -> file_access batches.

    decoder.Decoder   packets -> rows (per-server-instance dictionaries, sequence/loss counting)
    writer.BatchWriter rows -> Parquet batches, atomic and rotated; quarantine JSONL
    service.listen / service.replay   live socket or capture, SIGTERM/SIGINT flush
    osg.osg_batches   OSG collector JSON records -> Batches
    command.register  `tierlens collect xrootd`, `tierlens ingest xrootd-osg`
"""
