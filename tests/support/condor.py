"""deploy/htcondor/50-tierlens.conf's job transforms applied to a job ClassAd the way the schedd
does (HTCondor's documented semantics, evaluated by classad2): the condor tests read the config
through htcondor2.param and apply its transforms here."""

from __future__ import annotations

from pathlib import Path

import classad2

CONF = Path(__file__).resolve().parents[2] / "deploy" / "htcondor" / "50-tierlens.conf"


def transform(p, name: str) -> classad2.ClassAd:
    return classad2.ClassAd(p[f"JOB_TRANSFORM_{name}"])


def apply(p, job: classad2.ClassAd, names=None) -> list[str]:
    """Apply the configured transforms in JOB_TRANSFORM_NAMES order; returns those that applied."""
    applied = []
    for name in names or p["JOB_TRANSFORM_NAMES"].replace(",", " ").split():
        xf = transform(p, name)
        req = xf.lookup("Requirements") if "Requirements" in xf else None
        if req is not None and req.eval(scope=job) is not True:
            continue
        keys = list(xf.keys())
        for key in keys:
            if key.lower().startswith("copy_"):
                job[xf[key]] = job.lookup(key[5:])
        for key in keys:
            if key.lower().startswith("set_"):
                job[key[4:]] = xf.lookup(key)
        for key in keys:
            if key.lower().startswith("eval_set_"):
                job[key[9:]] = xf.lookup(key).eval(scope=job)
        applied.append(name)
    return applied
