"""The efficiency model: its queueing arithmetic against hand and scipy solutions, calibration
recovering times it was given, and its properties (more sharing never helps, faster never hurts)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq

from tierlens.simulator import efficiency as ef

GB = 1e9
TYPES = ("hdd", "nvme", "ssd")
NT = len(TYPES)


def profiles(n: int, seed: int = 0, storage=None, concurrent=None) -> ef.JobProfiles:
    rng = np.random.default_rng(seed)
    stage = rng.random(n) < 0.5
    size = rng.uniform(2, 20, n) * GB
    read_frac = rng.uniform(0.1, 1.0, n)
    remote = np.zeros((len(ef.ROUTES), n))
    origin = rng.random(n) < 0.5
    # stage-in jobs copy whole files (from an origin or a cache), direct jobs read a fraction
    remote[0] = np.where(stage & origin, size, 0)
    hit = rng.uniform(0, 1, n)  # of a cached job's bytes, the share the cache had
    remote[1] = np.where(stage & ~origin, size * hit, 0)
    remote[2] = np.where(stage & ~origin, size * (1 - hit), 0)
    remote[3] = np.where(~stage & origin, size * read_frac, 0)
    remote[4] = np.where(~stage & ~origin, size * read_frac * hit, 0)
    remote[5] = np.where(~stage & ~origin, size * read_frac * (1 - hit), 0)
    cpu = size * read_frac / GB * rng.uniform(100, 250, n)
    storage_type = np.array(storage if storage is not None else rng.choice(TYPES, n), dtype=object)
    arm = np.where(origin, "A", "B").astype(object)
    # nodes hold one configuration each (storage type x arm), three nodes per configuration
    node = np.array([f"{s}-{a}-{i % 3}" for i, (s, a) in enumerate(zip(storage_type, arm))], dtype=object)
    return ef.JobProfiles(
        storage_type=storage_type,
        arm=arm,
        cores=np.ones(n),
        cpu=cpu,
        wall=np.zeros(n),
        scratch_read=np.where(stage, size * read_frac, 0.0),
        scratch_write=np.where(stage, size, 0.0) + rng.uniform(0.05, 0.4, n) * GB,
        stage_in=np.where(stage, size, 0.0),
        remote=remote,
        concurrent=np.asarray(concurrent if concurrent is not None else rng.uniform(1, 8, n), float),
        job_key=np.array([f"synthetic.t.{i}." for i in range(n)], dtype=object),
        node=node,
    )


#: s/GB: reads (hdd, nvme, ssd), writes (hdd, nvme, ssd), then the six routes in ROUTES order
TRUE_TIMES = np.array([40.0, 0.8, 5.0, 12.0, 1.0, 30.0, 18.0, 2.5, 20.0, 60.0, 2.0, 62.0])


def with_walls(prof: ef.JobProfiles, times=TRUE_TIMES, noise=0.0, seed=1) -> ef.JobProfiles:
    wall = ef.predict_wall(np.log(times), TYPES, prof)
    if noise:
        wall = wall * np.random.default_rng(seed).lognormal(0, noise, len(wall))
    prof.wall = np.maximum(wall, prof.cpu / prof.cores)
    return prof


def test_a_job_alone_waits_exactly_its_demand_plus_remote_time():
    prof = profiles(50, concurrent=np.ones(50))
    t = TRUE_TIMES / GB
    wall = ef.predict_wall(np.log(TRUE_TIMES), TYPES, prof)
    idx = np.array([TYPES.index(s) for s in prof.storage_type])
    demand = prof.scratch_read * t[idx] + prof.scratch_write * t[NT + idx]
    remote = (prof.remote * t[2 * NT :, None]).sum(axis=0)
    staged_remote = (prof.remote[:3] * t[2 * NT : 2 * NT + 3, None]).sum(axis=0)
    overlap = np.minimum(prof.stage_in * t[NT + idx], staged_remote)
    expected = prof.cpu + remote - overlap + demand
    # the overlap's rounded corner is 1 % of (write + read) of the copy at most
    tolerance = 0.01 * (prof.stage_in * t[NT + idx] + staged_remote) + 1e-6
    assert np.all(np.abs(wall - expected) <= tolerance)


def test_identical_jobs_solve_schweitzers_fixed_point():
    n_jobs = 6
    prof = profiles(200, seed=3, storage=["hdd"] * 200, concurrent=np.full(200, float(n_jobs)))
    # make every job the same as the first
    for name in ("cpu", "scratch_read", "scratch_write", "stage_in"):
        getattr(prof, name)[:] = getattr(prof, name)[0]
    prof.remote[:] = prof.remote[:, :1]
    wall = ef.predict_wall(np.log(TRUE_TIMES), TYPES, prof)
    alone = ef.predict_wall(np.log(TRUE_TIMES), TYPES, prof, ef.Scenario(jobs_per_node=1))
    t = TRUE_TIMES / GB
    demand = prof.scratch_read[0] * t[0] + prof.scratch_write[0] * t[NT]
    base = alone[0] - demand
    # R = D (1 + (N - 1) R / (base + R)): each other job is at the device R / wall of its time
    r = brentq(lambda x: x - demand * (1 + (n_jobs - 1) * x / (base + x)), demand, 100 * demand + 1e6)
    assert wall == pytest.approx(np.full(200, base + r), rel=1e-4)


def test_calibration_recovers_the_times_that_made_the_data():
    prof = with_walls(profiles(6000, seed=5), noise=0.02)
    cal = ef.calibrate(prof, "analysis", TYPES, max_jobs=None)
    fitted = np.exp(cal.log_times)
    assert cal.fitted.all()
    # the two flash times are a second or two of a job's hour, so noise of 2 % in its wall time
    # pins them only within a factor of two; everything else within 10 %
    flash = {TYPES.index("nvme"), NT + TYPES.index("nvme")}
    for i, (want, got) in enumerate(zip(TRUE_TIMES, fitted)):
        if i in flash:
            assert want / 2 <= got <= want * 2, cal.names()[i]
        else:
            assert got == pytest.approx(want, rel=0.1), cal.names()[i]
    assert cal.rms_error < 0.03


def test_leave_one_out_predicts_a_configuration_it_never_saw():
    # noise-free data from the model: every configuration is predicted from the others within a
    # point (not exactly: a disk's write time can hide behind slower origin copies, so a held-out
    # configuration may depend on a time the others pin down only loosely)
    prof = with_walls(profiles(3000, seed=8))
    held = ef.validate(prof, "analysis", max_jobs=None)
    assert {(h.storage_type, h.arm) for h in held} == set(ef.cells(prof))
    for h in held:
        assert not h.extrapolated
        assert abs(h.error) < 0.01, h
    # with 2 % noise on every wall time the held-out errors stay within a few points
    noisy = ef.validate(with_walls(profiles(3000, seed=8), noise=0.02), "analysis", max_jobs=None)
    assert np.mean([abs(h.error) for h in noisy]) < 0.03
    assert ef.structural_error(noisy) == pytest.approx(np.sqrt(np.mean([h.error**2 for h in noisy])))


def test_more_jobs_per_node_never_raises_efficiency_and_faster_storage_never_lowers_it():
    prof = profiles(500, seed=9)
    lt = np.log(TRUE_TIMES)
    effs = [
        ef.efficiency_of(prof, ef.predict_wall(lt, TYPES, prof, ef.Scenario("hdd", n))) for n in (1, 2, 4, 8, 16, 32)
    ]
    assert all(a >= b for a, b in zip(effs, effs[1:]))
    for n in (1, 8, 32):
        hdd = ef.efficiency_of(prof, ef.predict_wall(lt, TYPES, prof, ef.Scenario("hdd", n)))
        nvme = ef.efficiency_of(prof, ef.predict_wall(lt, TYPES, prof, ef.Scenario("nvme", n)))
        assert nvme >= hdd


def test_unknown_storage_type_is_refused_and_unfitted_times_are_flagged():
    prof = with_walls(profiles(300, seed=4, storage=["hdd"] * 300))
    cal = ef.calibrate(prof, "analysis", TYPES, max_jobs=None)
    nvme = TYPES.index("nvme")
    assert not cal.fitted[nvme] and cal.fitted[TYPES.index("hdd")]
    assert ef.predict(cal, prof, ef.Scenario("nvme", 8)).extrapolated
    assert not ef.predict(cal, prof, ef.Scenario("hdd", 8)).extrapolated
    lustre = replace(prof.take(np.arange(3)), storage_type=np.array(["lustre"] * 3, dtype=object))
    with pytest.raises(ValueError, match="lustre"):
        ef.predict_wall(cal.log_times, TYPES, lustre)
