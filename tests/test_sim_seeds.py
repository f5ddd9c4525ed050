"""The seed scoreboard: tierlens' predictions of the seed studies' figures hold the orderings the
studies report, and each figure lies within the tolerance written next to it (with its reason).

The predictions come from the studies' own hardware and workload descriptions (simulator/seeds.py),
never from a fit to the figure asserted; the expected values here are the studies' published
numbers, typed from the papers, not anything the code computed.

Rows the model misses by more than their tolerance are strict xfails with the reason: if a change
makes one pass, the run fails until bench/seeds.md and this list are updated.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tierlens.simulator import devices as dv, seeds as sd

#: Published figures, typed from the seed papers (not read from seeds.py).
PUBLISHED = {
    "glasgow_t1_hdd_8": 0.75,
    "glasgow_t1_raid1_8": 0.83,
    "glasgow_t1_raid0_8": 0.90,
    "glasgow_t1_intel_8": 0.80,
    "glasgow_t1_kingston_8": 0.60,
    "glasgow_t1_intel_24": 0.50,
    "glasgow_t1_raid0_24": 0.86,
    "glasgow_t3_intel_8": 0.78,
    "glasgow_t3_raid0_8": 0.88,
}
#: Rows outside their tolerance with the registered inputs, and why (bench/seeds.md explains each).
KNOWN_MISSES = {
    "glasgow_t1_raid0_8": "RAID0 serves each 180 kB read on both members (64 KiB chunks): 83 %, published 90 %",
    "glasgow_t1_kingston_8": "the Kingston's read-behind-write waits give 69 %, published 60 %",
    "glasgow_t1_intel_24": "the Magny-Cours node: 66 %, published 50 %",
    "glasgow_t1_raid0_24": "24 jobs saturate two disks at the 8-core node's read rate per CPU second (41 %, "
    "published 86 %): the node's page cache or a lighter real read rate is outside the model",
    "glasgow_t3_intel_8": "the Intel at 8 jobs: 84 %, published 78 %",
}
#: Registered orderings the model does not reproduce with the registered inputs.
KNOWN_ORDERING_MISSES = {
    "intel_below_raid0_8": "Intel 84.0 % against RAID0 83.0 %: RAID0's striped reads",
    "intel_below_raid0_real": "as at 8 jobs in Table 1",
    "intel_below_raid0_24": "RAID0 saturates at 24 jobs (41 %)",
    "ssd_standing_not_rising": "follows from RAID0's saturation at 24 jobs",
}
#: The no-fit RMS the registered inputs gave when first computed (16.7 points): a regression bound,
#: not a target (the review's target, 6 points, is an xfail below).
REGISTERED_RMS_POINTS = 16.7


@pytest.fixture(scope="module")
def rows() -> dict[str, sd.Row]:
    return {r.case.key: r for r in sd.glasgow_rows()}


def test_the_published_figures_are_the_papers():
    assert {c.key: c.published for c in sd.GLASGOW_CASES} == PUBLISHED


def test_every_input_has_a_source_class_and_a_citation():
    entries = sd.source_classes()
    assert len(entries) > 30
    for section, name, _, cls, cite in entries:
        assert cls in {"paper", "datasheet", "literature", "assumed"}, (section, name, cls)
        assert len(cite) > 10, (section, name)


@pytest.mark.parametrize("name", sorted(sd.inputs()["orderings"]))
def test_each_registered_ordering(rows, name, request):
    if name in KNOWN_ORDERING_MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_ORDERING_MISSES[name]))
    o = {x.name: x for x in sd.orderings(list(rows.values()))}[name]
    assert o.holds, f"{o.lower} not below {o.higher}"


def test_hdd_below_raid1_below_raid0_and_kingston_below_hdd_at_8_jobs(rows):
    # Glasgow Table 1: Kingston 60 % < HDD 75 % < RAID1 83 % < RAID0 90 %
    k, hdd, r1, r0 = (rows[f"glasgow_t1_{x}_8"].predicted for x in ("kingston", "hdd", "raid1", "raid0"))
    assert k < hdd < r1 < r0


def test_no_fit_rms_stays_within_what_was_registered(rows):
    rms = sd.rms_points(list(rows.values()))
    assert rms <= REGISTERED_RMS_POINTS + 0.05


@pytest.mark.xfail(strict=True, reason="the review's target of 6 points is not reached (16.7, bench/seeds.md)")
def test_no_fit_rms_within_the_target(rows):
    assert sd.rms_points(list(rows.values())) <= sd.inputs()["targets"]["rms_points"]


def test_the_read_behind_write_wait_is_what_pulls_the_kingston_under_the_hdd(rows):
    # its reads cost ~1.1 ms; were its writes split into 512 KiB requests (short waits), it would
    # beat the HDD, and the HDD's own seeks would then queue behind more, smaller writes
    w, seeks = sd.GLASGOW, sd.anchor_seeks(sd.GLASGOW)
    split = replace(sd.BLOCK, write_unit_bytes=512 * 1024)
    kingston = sd.efficiency(sd.KINGSTON_V, None, 1, w, 8, seeks, block=split)
    assert kingston > sd.efficiency(sd.HDD_7200, None, 1, w, 8, seeks, block=split)
    assert rows["glasgow_t1_hdd_8"].predicted > rows["glasgow_t1_kingston_8"].predicted


def test_price_per_throughput_follows_the_efficiency_rows(rows):
    # Table 4 from the predicted efficiency: price / (8 x efficiency), by hand
    got = {k: p for k, p, _, _ in sd.price_per_throughput_rows(list(rows.values()))}
    assert got["kingston_v"] == pytest.approx(155 / (8 * rows["glasgow_t1_kingston_8"].predicted))
    assert got["hdd_2x"] < got["kingston_v"] and got["hdd_2x"] < got["intel_x25m_g2"]


def test_fnal_client_rates_by_exact_mva():
    # one client alone reads at its measured rate; by hand for two clients on one 1 GbE server:
    # D = 8 ms/MB, Z = 1/15.6 - D; R(2) = D (1 + Q(1)), Q(1) = D / (Z + D)
    assert sd.fnal_client_rate(1) == pytest.approx(15.6)
    d, z = 0.008, 1 / 15.6 - 0.008
    q1 = d / (z + d)
    r2 = d * (1 + q1)
    assert sd.fnal_client_rate(6) == pytest.approx(2 / (z + r2) / 2)
    # more clients per NIC, less each (the 21-client row misses its 0.8 MB/s by 0.05: bench/seeds.md)
    assert 12.55 < sd.fnal_client_rate(21) < 15.6
    assert sd.fnal_client_rate(49) < sd.fnal_client_rate(21)


def test_ssd_well_ahead_of_hdd_in_bnl_concurrent_reads():
    # BNL: "~ 10 times faster in concurrent read scenario", and the slides call the SSD case
    # CPU-limited, so 10 is a lower bound of the device ratio: the device-bound prediction must not
    # fall below it (beyond the slides' reading precision, ~20 %); no upper limit can be tested
    assert sd.bnl_ratio() >= 10.0 / 1.2


def test_ifca_network_fix_is_an_upper_bound_of_the_measured_gain():
    # IFCA: 28 % -> 35 % after the network changes; the model moves all of the wait onto the link
    # (~400 Mbps -> 1 Gbps), so it may overshoot, by at most 20 points (part of the wait was the
    # controllers', which the next change halved)
    after = sd.ifca_after_network()
    assert 0.35 <= after <= 0.35 + 0.20
    # independent arithmetic: wait per CPU second 0.72/0.28 scaled by 400/1000
    assert after == pytest.approx(1 / (1 + 0.72 / 0.28 * 0.4))


def test_fnal_unfairness_is_reported_as_not_represented():
    # the model's FCFS sharing gives 17/16 at most against the published 1.77: held as a known miss
    assert sd.fnal_spread() == pytest.approx(17 / 16)
    row = [r for r in sd.scoreboard() if r.study == "FNAL" and "slowest" in r.figure][0]
    assert not row.represented and row.published == 1.77


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_each_figure_within_its_tolerance(rows, key, request):
    if key in KNOWN_MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[key]))
    row = rows[key]
    assert row.case.reason  # the tolerance's reason is written next to it
    assert row.case.tolerance == pytest.approx(0.05)  # the run-to-run spread, never wider
    assert abs(row.predicted - PUBLISHED[key]) <= row.case.tolerance, (
        f"{key}: predicted {row.predicted:.3f}, published {PUBLISHED[key]}, tolerance {row.case.tolerance}"
    )


def test_a_deliberately_broken_raid1_fails_the_ordering():
    # the test can fail: mirrors that wrote at twice the rate (as if striped) rank RAID1 above RAID0
    w, seeks = sd.GLASGOW, sd.anchor_seeks(sd.GLASGOW)
    fast = replace(sd.HDD_7200, write_bytes_per_second=2 * sd.HDD_7200.write_bytes_per_second)
    r0 = sd.efficiency(sd.HDD_7200, "raid0", 2, w, 8, seeks)
    assert sd.efficiency(fast, "raid1", 2, w, 8, seeks) > r0


def test_the_anchor_reproduces_the_single_job_measurement():
    w = sd.GLASGOW
    seeks = sd.anchor_seeks(w)
    assert sd.efficiency(sd.HDD_7200, None, 1, w, 1, seeks) == pytest.approx(0.90, abs=1e-3)
    # by hand: one job alone reads n_r times per CPU second, each an access and a transfer, and
    # waits behind its own stager's writes; reads alone would leave it above 90 %
    d = sd.HDD_7200
    n_r = w.staged_bytes_per_cpu_second * w.read_fraction * seeks / 1e9
    reads_only = 1 / (1 + n_r * (d.access_seconds + 1e9 / seeks / d.read_bytes_per_second))
    assert 0.90 < reads_only < 0.95


def test_structural_error_reports_the_larger_source():
    pub = sd.loo_rms(sd.scoreboard_type_loo())
    assert 0 < pub < 0.5
    small = sd.reported_structural_error(0.02)
    assert small.source == "published figures" and small.value == pytest.approx(pub)
    large = sd.reported_structural_error(pub + 0.05)
    assert large.source == "generator" and large.value == pytest.approx(pub + 0.05)


def test_sustained_figures_use_the_steady_rate_only_past_the_cache():
    wc = dv.WriteCache(10e9, 30e6)
    fig = dv.DeviceFigures("ssd", 1e-4, 500e6, 400e6, write_cache=wc)
    assert fig.sustained(5e9).write_bytes_per_second == 400e6  # an hour's writes fit the cache
    assert fig.sustained(50e9).write_bytes_per_second == 30e6  # they do not
    assert fig.sustained(None).write_bytes_per_second == 30e6  # unknown: assume reached
    # a 2-device RAID0 writes both fast regions in parallel
    r0 = fig.composed("raid0", 2)
    assert (r0.write_cache.cache_bytes, r0.write_cache.steady_write_bytes_per_second) == (20e9, 60e6)
    theta = np.array([1000.0, 1.0, 1.0])
    assert dv.service_times(fig, theta, 50e9)[1] == pytest.approx(1e9 / 30e6)
    assert dv.service_times(fig, theta, 5e9)[1] == pytest.approx(1e9 / 400e6)


def test_write_warning_names_the_shortfall_and_its_evidence():
    wc = dv.WriteCache(12e9, 45e6, "probe")
    fig = dv.DeviceFigures("ssd", 1e-4, 550e6, 500e6, write_cache=wc)
    # 8 jobs staging 25 MB/s each: 720 GB/h, past the region within minutes, above the steady rate
    msg = dv.write_warning(fig, 8 * 25e6 * 3600)
    assert msg is not None and "45 MB/s" in msg and "200 MB/s" in msg and "probe" in msg
    # 8 jobs at 3 MB/s: 86 GB/h, fill the region in 12 GB / 24 MB/s = 500 s, and the steady rate keeps up
    msg = dv.write_warning(fig, 8 * 3e6 * 3600)
    assert msg is not None and "8 min" in msg
    # an HDD without a region that keeps up: nothing to say
    assert dv.write_warning(dv.DeviceFigures("hdd", 0.01, 100e6, 100e6), 8 * 3e6 * 3600) is None


def test_the_generators_consumer_ssd_collapses_under_a_full_nodes_stage_in(monkeypatch):
    # the generator's discrete-event device, not the model: 8 jobs staging in ~7 MB/s each (150 CPU s
    # per GB) outrun the 45 MB/s steady rate once the 12 GB region is written; the same device
    # without its cliff, and an NVMe, keep most of their single-job efficiency
    from tierlens.sources.synthetic import site
    from tierlens.sources.synthetic.hammercloud import run_node_test

    def eff(st: str, jobs: int) -> float:
        return run_node_test(st, jobs, cpu_seconds_per_gb=150.0, seeks_per_mb=2.0).efficiency

    cliff_1, cliff_8 = eff("ssd_consumer", 1), eff("ssd_consumer", 8)
    assert cliff_8 < 0.6 * cliff_1
    assert eff("nvme", 8) > 0.9 * eff("nvme", 1)
    cfg = site.PROBE_ONLY["ssd_consumer"]
    monkeypatch.setitem(
        site.PROBE_ONLY, "ssd_consumer", replace(cfg, device=replace(cfg.device, write_cache_bytes=0.0))
    )
    assert eff("ssd_consumer", 8) > cliff_8 + 0.3


def test_structural_error_rows_carry_the_larger_per_evidence():
    pub = sd.loo_rms(sd.scoreboard_type_loo())
    rows = {r["evidence"]: r for r in sd.structural_error_rows({"probe": 0.03, "datasheet": pub + 0.04})}
    assert rows["probe"]["structural_error"] == pytest.approx(pub) and rows["probe"]["source"] == "published figures"
    assert rows["datasheet"]["structural_error"] == pytest.approx(pub + 0.04)
    assert rows["datasheet"]["source"] == "generator"
    assert sd.structural_error_rows({"probe": None})[0]["structural_error"] == pytest.approx(pub)
