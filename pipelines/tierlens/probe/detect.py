"""The storage detector, imported from the startd cron script that runs on the execution points.

There is one implementation: ``plugins/htcondor/tierlens_startd_cron.py`` (standard library only,
so it runs on any EP). This module loads it from the clone, or from the copy
a wheel bundles (resources.py), so the package and its tests use exactly the code that is deployed.
It lives with the probe, which names the storage under the path it measures; nothing here
imports a source.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from ..resources import shipped

CRON_SCRIPT = shipped("plugins/htcondor/tierlens_startd_cron.py")
_MODULE_NAME = "tierlens_startd_cron"


def _load() -> ModuleType:
    if _MODULE_NAME in sys.modules:
        return sys.modules[_MODULE_NAME]
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, CRON_SCRIPT)
    if spec is None or spec.loader is None:  # pragma: no cover - a broken checkout
        raise ImportError(f"cannot load the startd cron script {CRON_SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module  # namedtuple pickling and logging look the module up
    spec.loader.exec_module(module)
    return module


cron = _load()
Detection = cron.Detection
detect = cron.detect
detect_volume_group = cron.detect_volume_group
detect_job_scratch = cron.detect_job_scratch
job_scratch_dir = cron.job_scratch_dir
classad_lines = cron.classad_lines

__all__ = [
    "CRON_SCRIPT",
    "Detection",
    "classad_lines",
    "cron",
    "detect",
    "detect_job_scratch",
    "detect_volume_group",
    "job_scratch_dir",
]
