"""simulator/under_write.py: the probe's reads-under-writes rows into points, and the extra wait
interpolated between them; numbers worked out by hand below."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tierlens.simulator import devices as dv
from tierlens.simulator.under_write import UnderWrite, extra_read_wait, starved_read_wait, under_write_from_probe
from tierlens.sources.synthetic.probe import run_synthetic_probe

MS = 1e-3


def _row(mode: str, target: float, measured: float | None, mean_ms: float, **extra) -> dict:
    return {
        "probe_id": "p",
        "job_name": f"read_under_write_{mode}_{round(target * 100)}",
        "rw": "randread",
        "block_size_bytes": 131072,
        "processes": 4,
        "direct_io": mode == "direct",
        "mean_latency_seconds": mean_ms * MS,
        "p50_latency_seconds": 0.5 * mean_ms * MS,
        "p99_latency_seconds": 3 * mean_ms * MS,
        "p999_latency_seconds": 5 * mean_ms * MS,
        "max_latency_seconds": 9 * mean_ms * MS,
        "write_utilisation_target": target,
        "write_utilisation": measured,
        **extra,
    }


ROWS = [
    # listed out of order on purpose: the points come back by mode, then utilisation
    _row("buffered", 0.5, 0.52, 4.0),
    _row("buffered", 0.0, 0.0, 1.0),
    _row("buffered", 0.75, 0.70, 7.0),
    _row("buffered", 0.25, 0.24, 2.0),
    _row("direct", 0.0, 0.0, 0.5),
    _row("direct", 0.25, None, 0.5),  # writer's rate not measured: the target stands in
    _row("direct", 0.5, 0.5, 3.5),
    # the sustained-write job of the same name stem is not a point
    {**_row("direct", 0.5, 0.5, 99.0), "job_name": "read_under_write", "write_utilisation_target": None},
    {"job_name": "rand_read_128k", "mean_latency_seconds": 0.1, "block_size_bytes": 131072},
]


def test_rows_become_points_by_mode_then_utilisation():
    pts = under_write_from_probe(ROWS)
    assert [(p.mode, p.write_utilisation) for p in pts] == [
        ("buffered", 0.0),
        ("buffered", 0.24),
        ("buffered", 0.52),
        ("buffered", 0.70),
        ("direct", 0.0),
        ("direct", 0.25),
        ("direct", 0.5),
    ]
    p = pts[2]
    assert p == UnderWrite(0.52, "buffered", 4, 131072, 4 * MS, 2 * MS, 12 * MS, 20 * MS, 36 * MS, 0.5)


def test_no_under_write_jobs_is_none():
    assert under_write_from_probe(ROWS[-2:]) is None
    assert under_write_from_probe([]) is None


def test_extra_wait_interpolates_between_measured_points():
    pts = under_write_from_probe(ROWS)
    # on a measured point: its mean minus the unloaded mean
    assert extra_read_wait(pts, 0.52) == pytest.approx(3 * MS)
    # halfway between 0.24 (2 ms) and 0.52 (4 ms): 3 ms, 2 ms above the 1 ms baseline
    assert extra_read_wait(pts, 0.38) == pytest.approx(2 * MS)
    # a tenth of the way from 0 (1 ms) to 0.24 (2 ms): 1.1 ms, 0.1 ms of wait
    assert extra_read_wait(pts, 0.024) == pytest.approx(0.1 * MS)
    assert extra_read_wait(pts, 0.0) == 0.0
    # direct: 0.25 -> 0.5 goes from 0.5 to 3.5 ms; 0.4 is 60 % of the way: 2.3 ms, 1.8 above 0.5
    assert extra_read_wait(pts, 0.4, "direct") == pytest.approx(1.8 * MS)


def test_extra_wait_is_not_extrapolated_past_the_last_point():
    pts = under_write_from_probe(ROWS)
    assert extra_read_wait(pts, 0.9) == pytest.approx(6 * MS)  # held at 0.70's 7 ms
    assert extra_read_wait(pts, 5.0, "direct") == pytest.approx(3 * MS)


def test_noise_below_the_baseline_is_no_wait_and_a_missing_mode_is_an_error():
    pts = under_write_from_probe([_row("direct", 0.0, 0.0, 1.0), _row("direct", 0.5, 0.5, 0.9)])
    assert extra_read_wait(pts, 0.5, "direct") == 0.0
    with pytest.raises(ValueError, match="no buffered"):
        extra_read_wait(pts, 0.5)


def test_from_probe_carries_the_points_and_older_probes_have_none():
    rows = run_synthetic_probe("ssd", 4).to_pylist()
    fig = dv.from_probe(rows)
    assert fig.under_write is not None and len(fig.under_write) == 8
    assert {p.mode for p in fig.under_write} == {"buffered", "direct"}
    # the generator queues reads behind 8 MiB writes: the busier the writer, the longer a read waits
    direct = [p for p in fig.under_write if p.mode == "direct"]
    assert [p.write_utilisation_target for p in direct] == [0.0, 0.25, 0.5, 0.75]
    assert all(a.mean_seconds < b.mean_seconds for a, b in zip(direct, direct[1:]))
    assert extra_read_wait(fig.under_write, 0.5, "direct") > 0
    older = [r for r in rows if not r["job_name"].startswith("read_under_write_")]
    assert dv.from_probe(older).under_write is None


def test_the_buying_guide_shows_the_probes_read_p99_under_half_writes():
    from tierlens.simulator import hardware as hw

    rows = run_synthetic_probe("ssd_consumer", 8).to_pylist()
    half = next(r for r in rows if r["job_name"] == "read_under_write_buffered_50")
    devices = hw.Devices({"ssd": dv.from_probe(rows)}, {}, [], {"ssd": rows})
    catalog = {
        "config_name": "Consumer SSD",
        "storage_type": "ssd",
        "device_model": rows[0]["device_models"][0],
        "devices_per_node": 1,
        "raid_level": None,
        "unit_price": 100.0,
        "currency": "GBP",
        "capacity_bytes": 1e12,
    }
    perf = hw.Performance(0.7, 0.6, 0.8, jobs_per_node=8)
    fig = hw.candidate_figures(catalog, devices)
    r = hw.guide_row(hw.candidate(catalog, "probe"), perf, fig=fig)
    assert r["under_write_read_p99_ms"] == pytest.approx(half["p99_latency_seconds"] * 1e3)
    assert r["under_write_read_p99_ms"] > 0
    assert set(r) <= set(hw.GUIDE_SCHEMA.names)
    # a member's probe composed into an array is not the array's evidence; no figures, no evidence
    pair = dict(
        catalog, config_name="2x Consumer SSD RAID0", storage_type="raid0", devices_per_node=2, raid_level="raid0"
    )
    composed = hw.candidate_figures(pair, devices)
    assert composed.evidence == "probe" and composed.under_write is None
    assert hw.guide_row(hw.candidate(pair, "probe"), perf, fig=composed)["under_write_read_p99_ms"] is None
    assert hw.guide_row(hw.candidate(catalog, "datasheet"), perf)["under_write_read_p99_ms"] is None


def test_starved_wait_is_what_reads_lose_beyond_their_share_of_the_device():
    pts = under_write_from_probe(ROWS)
    # buffered, 1 ms without writes: at 0.24 the readers' share of the device makes 1/0.76 ms,
    # 2 ms measured; at 0.52 1/0.48 ms against 4; at 0.70 1/0.30 ms against 7
    excess = {0.24: 2 - 1 / 0.76, 0.52: 4 - 1 / 0.48, 0.70: 7 - 1 / 0.30}
    for u, ms in excess.items():
        assert starved_read_wait(pts, u) == pytest.approx(ms * MS)
    assert starved_read_wait(pts, 0.38) == pytest.approx((excess[0.24] + excess[0.52]) / 2 * MS)
    assert starved_read_wait(pts, 0.0) == 0.0
    # a device serving reads exactly their share (first come, first served, readers keeping it busy)
    fair = under_write_from_probe([_row("direct", u, u, 2.0 / (1 - u)) for u in (0.0, 0.25, 0.5, 0.75)])
    assert starved_read_wait(fair, 0.6, "direct") == pytest.approx(0.0, abs=1e-12)


def test_service_times_charge_the_starved_wait_per_read_of_the_mix():
    pts = under_write_from_probe(ROWS)
    fig = dv.DeviceFigures("ssd", 1e-4, 500e6, 100e6, under_write=pts)
    theta = np.array([3000.0, 0.5, 1.0])
    plain_read, plain_write = dv.service_times(fig, theta)
    # 52 MB/s written on a device that takes 100 MB/s: the 0.52 point, 3000 reads per GB
    read, write = dv.service_times(fig, theta, node_write_bytes_per_second=52e6)
    assert read - plain_read == pytest.approx(3000 * (4 - 1 / 0.48) * MS)
    assert write == plain_write
    # no points (a datasheet, an older probe), or no write load: nothing added
    assert dv.service_times(fig.__class__("ssd", 1e-4, 500e6, 100e6), theta, None, 52e6)[0] == plain_read
    assert dv.service_times(fig, theta, None, None)[0] == plain_read


def test_the_mapping_fitted_with_measured_waits_recovers_its_parameters_and_predicts_the_wait():
    theta = np.array([3500.0, 0.6, 1.0])
    figs = {st: dv.from_probe(run_synthetic_probe(st, slots=8).to_pylist()) for st in ("hdd", "ssd", "nvme", "raid1")}
    starving = under_write_from_probe(ROWS)
    figs["ssd"] = dataclasses.replace(figs["ssd"], under_write=starving)
    rates = dv.WriteRates(40e6, {"hdd": 45e6, "ssd": 0.52 * figs["ssd"].write_bytes_per_second})
    targets = {st: (*dv.service_times(f, theta, None, rates.of(st)), 0.01) for st, f in figs.items()}
    m = dv.fit_mapping(figs, targets, 0.6, rates)
    assert m.theta == pytest.approx(theta, rel=1e-3)
    assert m.node_write_bytes_per_second == 40e6
    # a device predicted at the site's rate gets its own probe's wait back
    new = dataclasses.replace(figs["nvme"], write_bytes_per_second=80e6, under_write=starving)
    read, _ = m.times(new)
    bare, _ = dv.service_times(dataclasses.replace(new, under_write=None), m.theta)
    assert read - bare == pytest.approx(m.theta[0] * starved_read_wait(starving, 0.5), rel=1e-6)
