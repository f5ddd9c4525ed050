"""HTCondor: do the startds publish the tags of the startd cron?"""

from __future__ import annotations

import shutil
import subprocess

from .findings import Finding, Options, Status, last_line, not_here, run


def check_htcondor(opts: Options) -> list[Finding]:
    if not shutil.which("condor_status"):
        return not_here(
            "htcondor",
            "no condor_status on PATH",
            "on an HTCondor access point or EP, put condor_status on PATH; elsewhere nothing to do",
        )
    area = "htcondor"
    try:
        proc = run(["condor_status", "-af", "Name", "TierlensStorageType"], opts.timeout)
    except subprocess.TimeoutExpired:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                "condor_status did not answer",
                "check CONDOR_HOST and the collector",
            )
        ]
    if proc.returncode != 0:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                f"condor_status failed: {last_line(proc.stderr)}",
                "check CONDOR_HOST and the collector",
            )
        ]
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    untagged = [r[0] for r in rows if len(r) < 2 or r[1] == "undefined"]
    if not rows:
        return [
            Finding(
                area,
                "startd attributes",
                Status.WARN,
                "condor_status lists no slots",
                "check that the EPs' startds report to this collector (condor_status -any)",
            )
        ]
    if untagged:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                f"{len(untagged)} of {len(rows)} slots have no TierlensStorageType (e.g. {untagged[0]})",
                "install tierlens-condor-cron on those EPs and condor_reconfig them",
            )
        ]
    return [Finding(area, "startd attributes", Status.OK, f"all {len(rows)} slots publish TierlensStorageType")]
