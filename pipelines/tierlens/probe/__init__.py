"""Device probes: short, fixed fio jobs that measure a scratch device the way grid jobs use it.

The probe runs on a worker node (or against the demo generator's device model), produces
``device_probe`` records and hands them to the warehouse like any other source; the simulator's
device layer (simulator/devices.py) turns them into service times for storage the site has not
run jobs on.
"""

from .jobs import JOBS, ProbeJob

__all__ = ["JOBS", "ProbeJob"]
