"""HTCondor: the startd-cron storage tags and the job history source (`tierlens ingest condor`).

* ``detect``  — the storage detector, loaded from plugins/htcondor/tierlens_startd_cron.py (one
  implementation, Python standard library only, shipped to the execution points);
* ``history`` — history files (incl. rotated ``history.*``) → canonical job and job_tag batches;
* ``fast``    — the history files' fast path: a block at a time as arrays, classad2 only where needed;
* ``schedd``  — the same from ``htcondor2.Schedd.history`` with a watermark, when a schedd answers;
* ``source``  — ``CondorSource``: files or a schedd behind one ``batches()``, for `tierlens ingest condor`
  and the ingest DAG.
"""
