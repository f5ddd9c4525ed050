"""XRootD monitoring collector: UDP (or a tcpdump capture, or a journal segment) -> file_access batches.

    receiver           socket -> journal (one process per --workers; --allow, kernel drop counters)
    journal            the segment files: layout, writer, reader, sealing after a crash
    datagrams          DatagramBatch / DatagramSink, the hand-off from receiving to decoding
    decoder.Decoder    datagrams -> rows (per-server-instance dictionaries, sequence/loss counting)
    writer.BatchWriter rows -> Parquet batches, atomic; quarantine JSONL
    service            journals -> decoder -> committed batches + checkpoint; replays
    metrics            --metrics: Prometheus text metrics (prometheus_client)
    osg.osg_batches    OSG collector JSON records -> Batches
    batches            the committed file_access batches as a source (`tierlens ingest xrootd`, the DAG)
(the commands, `tierlens collect xrootd` and `tierlens ingest xrootd | xrootd-osg`, are in tierlens.cli)
"""
