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


# --------------------------------------------------------------------------- the demo site

DAYS, SEED = 3.0, 11
#: Leave-one-type-out tolerance for probe-derived predictions, in efficiency points. Chosen from
#: the data: on the demo site (3 days, nodes_per_type 1) the largest error over the six storage
#: types was 3.7 points with seed 11 and 5.1 with seed 5 (RMS 2.9 and 3.0 points); 6 points leaves
#: room for other seeds without hiding a broken mapping (datasheet-only errors reach 17-26 points).
PROBE_TOLERANCE = 0.06


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A small demo site in a warehouse: generated, ingested, job_io_profile built, every
    storage type probed through the generator's device model."""
    import duckdb  # noqa: F401 - the warehouse's engine, imported where used below
    from collections import defaultdict

    import pyarrow as pa

    from tierlens.pipeline import ingest
    from tierlens.records import Batch, RecordKind
    from tierlens.sources.synthetic import SyntheticOptions, demo_site, generate
    from tierlens.transform import run_dbt

    home = tmp_path_factory.mktemp("hwdemo")
    wh = home / "warehouse.duckdb"
    parts = defaultdict(list)

    def keep(batches):
        for b in batches:
            parts[b.kind].append(b.table)
            yield b

    ingest(keep(generate(SyntheticOptions(days=DAYS, seed=SEED, site=demo_site(nodes_per_type=1)))), wh)
    probes = [run_synthetic_probe(st, slots=8) for st in SCRATCH]
    ingest([Batch(RecordKind.DEVICE_PROBE, t, f"probe:synthetic:{t['storage_type'][0]}") for t in probes], wh)
    result = run_dbt(wh, home / "dbt", "build", ["--select", "+job_io_profile", "+int_file_access_by_job",
                                                  "+stg_storage_catalog", "--exclude", "test_type:singular"])
    assert result.success, result.failures
    return wh, {k: pa.concat_tables(v) for k, v in parts.items()}


def _measured_by_type(generated) -> dict[str, float]:
    """The generator's measured efficiency of completed analysis jobs per storage type, from the records."""
    from collections import defaultdict

    from tierlens.records import RecordKind

    tags = {r["job_id"]: r["storage_type"] for r in generated[RecordKind.JOB_TAG].to_pylist()}
    cpu, core_wall = defaultdict(float), defaultdict(float)
    for j in generated[RecordKind.JOB].to_pylist():
        busy = j["cpu_user_seconds"] + j["cpu_system_seconds"]
        if j["job_class"] != "analysis" or j["state"] != "COMPLETED" or busy <= 0 or j["wall_seconds"] <= 0:
            continue
        cpu[tags[j["job_id"]]] += busy
        core_wall[tags[j["job_id"]]] += j["wall_seconds"] * j["allocated_cores"]
    return {k: cpu[k] / core_wall[k] for k in cpu}


@pytest.fixture(scope="module")
def type_loo(demo):
    import duckdb

    from tierlens.simulator import hardware as hw
    from tierlens.simulator.whatif import staged_read_fraction

    wh, _ = demo
    con = duckdb.connect(str(wh), read_only=True)
    prof = ef.load_profiles(con, "analysis")
    devices = hw.load_devices(con)
    con.close()
    return hw.validate_types(prof, "analysis", devices, staged_read_fraction(prof))


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_every_type_left_out_is_predicted_from_its_probe(demo, type_loo):
    _, generated = demo
    measured = _measured_by_type(generated)
    probe = {h.storage_type: h for h in type_loo if h.evidence == "probe"}
    assert set(probe) == set(SCRATCH) == set(measured)
    for st, h in probe.items():
        assert h.measured == pytest.approx(measured[st], rel=1e-9), st
        assert abs(h.predicted - measured[st]) <= PROBE_TOLERANCE, (st, h.predicted, measured[st])


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_datasheet_only_predictions_carry_their_own_larger_error(type_loo):
    from tierlens.simulator import hardware as hw

    errors = hw.type_errors(type_loo)
    sheet = {h.storage_type for h in type_loo if h.evidence == "datasheet"}
    # the catalog has datasheet figures for the devices one can buy, not for the NFS share
    assert sheet == set(SCRATCH) - {"nfs"}
    assert errors["datasheet"] > errors["probe"]
    rms = np.sqrt(np.mean([h.error ** 2 for h in type_loo if h.evidence == "probe"]))
    assert errors["probe"] == pytest.approx(rms)
