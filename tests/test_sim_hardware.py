"""The device layer (probe or datasheet figures → service times for a storage type nobody ran jobs
on), its validation by leaving whole storage types out on the demo site, and the buying guide."""

from __future__ import annotations

import numpy as np
import pytest

from tierlens.probe.synthetic import run_synthetic_probe
from tierlens.simulator import devices as dv
from tierlens.simulator import efficiency as ef
from tierlens.sources.synthetic.site import GB, SCRATCH


# --------------------------------------------------------------------------- device figures

@pytest.mark.parametrize("st", ["hdd", "ssd", "nvme", "raid1"])
def test_probe_figures_recover_the_generators_device(st):
    fig = dv.from_probe(run_synthetic_probe(st, slots=8).to_pylist())
    d = SCRATCH[st].device
    assert fig.access_seconds == pytest.approx(d.access_seconds, rel=1e-6)
    assert fig.read_bytes_per_second == pytest.approx(d.read_bytes_per_second, rel=1e-6)
    assert fig.write_bytes_per_second == pytest.approx(d.write_bytes_per_second, rel=1e-6)
    assert fig.read_channels == pytest.approx(min(SCRATCH[st].members * d.queues, 8), rel=1e-3)
    # a mirror writes everything on every member: no more write channels than one device has
    assert fig.write_channels == pytest.approx(min(d.queues, 8), rel=1e-3)


def test_raid_is_composed_from_its_members():
    disk = dv.DeviceFigures("hdd", 0.01, 100e6, 90e6, 1.0, 1.0, "datasheet", "disk")
    r0, r1, r10 = disk.composed("raid0", 2), disk.composed("raid1", 2), disk.composed("raid10", 4)
    assert (r0.read_bytes_per_second, r0.write_bytes_per_second, r0.read_channels) == (200e6, 180e6, 1.0)
    assert (r1.read_bytes_per_second, r1.write_bytes_per_second, r1.read_channels, r1.write_channels) == \
        (100e6, 90e6, 2.0, 1.0)
    assert (r10.read_bytes_per_second, r10.write_bytes_per_second, r10.read_channels) == (200e6, 180e6, 2.0)
    assert disk.composed("none", 1) == disk and r0.access_seconds == disk.access_seconds
    theta = np.array([3000.0, 1.0, 1.0])
    # striping halves the transfer; mirroring halves reads under load and leaves writes alone
    assert dv.service_times(r0, theta)[1] == pytest.approx(dv.service_times(disk, theta)[1] / 2)
    assert dv.service_times(r0, theta)[0] == pytest.approx(3000 * 0.01 + GB / 200e6)
    assert dv.service_times(r1, theta) == pytest.approx((dv.service_times(disk, theta)[0] / 2,
                                                         dv.service_times(disk, theta)[1]))


def test_datasheet_figures_and_a_row_without_them():
    row = {"config_name": "x", "storage_type": "raid0", "device_model": "d", "devices_per_node": 2,
           "seq_read_mb_per_s": 125.0, "seq_write_mb_per_s": 100.0, "rand_read_iops_4k": 80.0, "raid_level": "raid0"}
    fig = dv.from_datasheet(row)
    assert fig.read_bytes_per_second == 250e6 and fig.write_bytes_per_second == 200e6
    assert fig.access_seconds == pytest.approx(1 / 80 - 4096 / 125e6)
    assert fig.evidence == "datasheet" and fig.storage_type == "raid0"
    assert dv.from_datasheet(dict(row, rand_read_iops_4k=None)) is None


def test_the_mapping_recovers_the_parameters_that_made_the_times():
    theta = np.array([3500.0, 0.6, 1.3])
    figs = {st: dv.from_probe(run_synthetic_probe(st, slots=8).to_pylist()) for st in ("hdd", "ssd", "nvme", "raid1", "nfs")}
    targets = {st: (*dv.service_times(f, theta), 0.01) for st, f in figs.items()}
    m = dv.fit_mapping(figs, targets, read_fraction=0.6)
    assert m.theta == pytest.approx(theta, rel=1e-3)
    assert m.rms_log_error < 1e-6
    with pytest.raises(ValueError, match="at least two"):
        dv.fit_mapping({"hdd": figs["hdd"]}, targets, 0.6)


def test_derived_types_extend_the_calibration_without_touching_the_fitted_times():
    types = ("hdd", "ssd")
    lt = np.log(np.arange(1.0, 2 * len(types) + len(ef.ROUTES) + 1))
    cal = ef.Calibration("analysis", types, lt, np.eye(len(lt)) * 0.01, np.ones(len(lt), bool), 100, 0.01)
    ext = ef.with_derived_types(cal, {"nvme": (0.5, 0.7)}, {"nvme": "probe"})
    t = ext.times()
    for (p, k), v in cal.times().items():
        assert t[(p, k)] == pytest.approx(v)
    assert t[("scratch_read_s_per_gb", "nvme")] == pytest.approx(0.5)
    assert t[("scratch_write_s_per_gb", "nvme")] == pytest.approx(0.7)
    i = ext.storage_types.index("nvme")
    assert not ext.fitted[i] and ext.derived[i] and ext.determined[i]
    assert ext.type_evidence("nvme") == "probe" and ext.type_evidence("hdd") == "jobs"
    assert ext.covariance[i, i] == 0.0
    # the queueing core is unchanged: the same jobs on hdd get the same walls from either calibration
    n = 20
    prof = ef.JobProfiles(np.array(["hdd"] * n, dtype=object), np.array([""] * n, dtype=object), np.ones(n),
                          np.full(n, 3600.0), np.zeros(n), np.full(n, 2 * GB), np.full(n, GB), np.full(n, GB),
                          np.zeros((len(ef.ROUTES), n)), np.full(n, 4.0),
                          np.array([str(i) for i in range(n)], dtype=object), np.array(["n"] * n, dtype=object))
    assert ef.predict_wall(ext.log_times, ext.storage_types, prof) == pytest.approx(
        ef.predict_wall(cal.log_times, cal.storage_types, prof))
