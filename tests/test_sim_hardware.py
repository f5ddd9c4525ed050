"""The device layer (probe or datasheet figures → service times for a storage type nobody ran jobs
on), its validation by leaving whole storage types out on the demo site, and the buying guide."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from tierlens.simulator import devices as dv, efficiency as ef
from tierlens.sources.synthetic.probe import run_synthetic_probe
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
    assert (r1.read_bytes_per_second, r1.write_bytes_per_second, r1.read_channels, r1.write_channels) == (
        100e6,
        90e6,
        2.0,
        1.0,
    )
    assert (r10.read_bytes_per_second, r10.write_bytes_per_second, r10.read_channels) == (200e6, 180e6, 2.0)
    assert disk.composed("none", 1) == disk and r0.access_seconds == disk.access_seconds
    theta = np.array([3000.0, 1.0, 1.0])
    # striping halves the transfer; mirroring halves reads under load and leaves writes alone
    assert dv.service_times(r0, theta)[1] == pytest.approx(dv.service_times(disk, theta)[1] / 2)
    assert dv.service_times(r0, theta)[0] == pytest.approx(3000 * 0.01 + GB / 200e6)
    assert dv.service_times(r1, theta) == pytest.approx(
        (dv.service_times(disk, theta)[0] / 2, dv.service_times(disk, theta)[1])
    )


def test_a_probed_disk_prices_raid_layouts_of_it():
    from tierlens.simulator import hardware as hw

    rows = run_synthetic_probe("hdd", slots=8).to_pylist()
    devices = hw.Devices({"hdd": dv.from_probe(rows)}, {}, [], {"hdd": rows})
    disk = devices.probe["hdd"]
    catalog = {
        "config_name": "2xHDD RAID0",
        "storage_type": "raid0",
        "device_model": " seagate st500dm002 ",
        "devices_per_node": 2,
        "raid_level": "raid0",
    }
    r0 = hw.candidate_figures(catalog, devices)
    assert r0.evidence == "probe" and r0.storage_type == "raid0"
    assert r0.read_bytes_per_second == pytest.approx(2 * disk.read_bytes_per_second)
    r1 = hw.candidate_figures(dict(catalog, storage_type="raid1", raid_level="raid1"), devices)
    assert r1.read_channels == pytest.approx(2 * disk.read_channels)
    assert r1.write_bytes_per_second == pytest.approx(disk.write_bytes_per_second)
    # a device nobody probed falls back to its datasheet, and without one there is nothing
    other = dict(
        catalog, device_model="Other disk", seq_read_mb_per_s=200.0, seq_write_mb_per_s=150.0, rand_read_iops_4k=100.0
    )
    assert hw.candidate_figures(other, devices).evidence == "datasheet"
    assert hw.candidate_figures(dict(catalog, device_model="Other disk"), devices) is None


def test_datasheet_figures_and_a_row_without_them():
    row = {
        "config_name": "x",
        "storage_type": "raid0",
        "device_model": "d",
        "devices_per_node": 2,
        "seq_read_mb_per_s": 125.0,
        "seq_write_mb_per_s": 100.0,
        "rand_read_iops_4k": 80.0,
        "raid_level": "raid0",
    }
    fig = dv.from_datasheet(row)
    assert fig.read_bytes_per_second == 250e6 and fig.write_bytes_per_second == 200e6
    assert fig.access_seconds == pytest.approx(1 / 80 - 4096 / 125e6)
    assert fig.evidence == "datasheet" and fig.storage_type == "raid0"
    assert dv.from_datasheet(dict(row, rand_read_iops_4k=None)) is None


def test_the_mapping_recovers_the_parameters_that_made_the_times():
    # write_factor at the centre of its prior (devices.WRITE_FACTOR_PRIOR_SD), so nothing pulls the fit away
    theta = np.array([3500.0, 0.6, 1.0])
    figs = {
        st: dv.from_probe(run_synthetic_probe(st, slots=8).to_pylist()) for st in ("hdd", "ssd", "nvme", "raid1", "nfs")
    }
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
    prof = ef.JobProfiles(
        np.array(["hdd"] * n, dtype=object),
        np.array([""] * n, dtype=object),
        np.ones(n),
        np.full(n, 3600.0),
        np.zeros(n),
        np.full(n, 2 * GB),
        np.full(n, GB),
        np.full(n, GB),
        np.zeros((len(ef.ROUTES), n)),
        np.full(n, 4.0),
        np.array([str(i) for i in range(n)], dtype=object),
        np.array(["n"] * n, dtype=object),
    )
    assert ef.predict_wall(ext.log_times, ext.storage_types, prof) == pytest.approx(
        ef.predict_wall(cal.log_times, cal.storage_types, prof)
    )


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
    from collections import defaultdict

    import duckdb  # noqa: F401 - the warehouse's engine, imported where used below
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
    result = run_dbt(
        wh,
        home / "dbt",
        "build",
        [
            "--select",
            "+job_io_profile",
            "+int_file_access_by_job",
            "+stg_storage_catalog",
            "--exclude",
            "test_type:singular",
        ],
    )
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
    rms = np.sqrt(np.mean([h.error**2 for h in type_loo if h.evidence == "probe"]))
    assert errors["probe"] == pytest.approx(rms)


@pytest.fixture(scope="module")
def without_nvme(demo, tmp_path_factory):
    """The demo site as a site with no NVMe nodes: NVMe's jobs removed, its probe kept; the CLI
    asked for an NVMe prediction and the buying guide."""
    import shutil

    import duckdb
    from typer.testing import CliRunner

    from tierlens.cli import app

    wh, _ = demo
    copy = tmp_path_factory.mktemp("nonvme") / "warehouse.duckdb"
    shutil.copy(wh, copy)
    con = duckdb.connect(str(copy))
    con.execute("delete from marts.job_io_profile where storage_type = 'nvme'")
    con.close()
    r = CliRunner().invoke(app, ["simulate", "efficiency", "-w", str(copy), "-n", "8", "--candidates"])
    assert r.exit_code == 0, r.output + repr(r.exception)
    return copy, r.output


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_a_site_without_nvme_gets_an_nvme_prediction_with_a_measured_error_bar(demo, without_nvme):
    import duckdb

    _, generated = demo
    wh, output = without_nvme
    measured = _measured_by_type(generated)
    con = duckdb.connect(str(wh), read_only=True)
    ((eff, sd, evidence, extrapolated),) = con.execute(
        "select predicted_efficiency, efficiency_sd, evidence, extrapolated from sim_efficiency_predictions "
        "where scenario = 'what-if' and storage_type = 'nvme' and jobs_per_node = 8"
    ).fetchall()
    loo = con.execute("select storage_type, error from sim_efficiency_type_loo where evidence = 'probe'").fetchall()
    params = dict(
        con.execute(
            "select applies_to, evidence from sim_efficiency_parameters where parameter = 'scratch_read_s_per_gb'"
        ).fetchall()
    )
    con.close()
    assert evidence == "probe" and not extrapolated
    assert params["nvme"] == "probe" and params["hdd"] == "jobs"
    assert "nvme" not in {st for st, _ in loo} and len(loo) == 5
    # the error bar is the measured leave-one-type-out error of probe-derived predictions, or the
    # device layer's error on the published figures where that is larger (or more)
    from tierlens.simulator import seeds as sd_

    rms = float(np.sqrt(np.mean([e * e for _, e in loo])))
    assert sd >= max(rms, sd_.loo_rms(sd_.scoreboard_type_loo())) - 1e-12
    # and the prediction lands where the generator's NVMe nodes (8 slots, full) actually were
    assert abs(eff - measured["nvme"]) <= PROBE_TOLERANCE
    assert eff - 1.96 * sd <= measured["nvme"] <= eff + 1.96 * sd
    assert "Hardware you could buy" in output


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_buying_guide_orders_prices_as_the_generators_measured_throughput_does(demo, without_nvme):
    import csv

    import duckdb

    from tierlens.config import DBT_PROJECT_DIR

    _, generated = demo
    wh, _ = without_nvme
    measured = _measured_by_type(generated)
    with (DBT_PROJECT_DIR / "seeds" / "storage_catalog.csv").open() as f:
        catalog = list(csv.DictReader(f))
    # independently: the node's storage price over the core-hours 8 single-core jobs deliver per
    # node-hour at the efficiency the generator measured on that storage type
    reference = {
        r["config_name"]: float(r["unit_price"]) * int(r["devices_per_node"]) / (8 * measured[r["storage_type"]])
        for r in catalog
    }
    con = duckdb.connect(str(wh), read_only=True)
    guide = dict(
        con.execute(
            "select config_name, price_per_throughput from sim_hardware_options "
            "where jobs_per_node = 8 and cache = 'none'"
        ).fetchall()
    )
    rows = con.execute(
        "select config_name, evidence, price_per_throughput_low, price_per_throughput, "
        "price_per_throughput_high from sim_hardware_options"
    ).fetchall()
    con.close()
    assert set(guide) == set(reference)
    assert sorted(guide, key=guide.get) == sorted(reference, key=reference.get)
    for name, evidence, low, mid, high in rows:
        assert low <= mid <= high, name
        assert evidence == ("probe" if name == "Enterprise NVMe" else "measured")


#: the shipped query's target parameter, as its header declares it (`tierlens sql --param target=...`)
SHIPPED_TARGET = "-- Parameter: target = 0.75"


def _answer(con, query: str, target: float) -> list[tuple]:
    """The query's rows for ``target``, set as `tierlens sql --param target=...` sets it."""
    con.execute("SET VARIABLE target = ?", [target])
    return con.execute(query).fetchall()


def _target_between(options: list[tuple]) -> float:
    """A target efficiency two options reach at the low end of their 95 % interval and the others
    do not (the shipped 0.75 may be reached by none: then the answer is empty and proves nothing)."""
    lows = sorted(o[4] for o in options)
    assert len(lows) >= 3 and lows[-3] < lows[-2], f"no target splits these options: {options}"
    return (lows[-3] + lows[-2]) / 2


def _cheapest_reaching(options: list[tuple], target: float) -> list[tuple]:
    """What sql/cheapest_configuration_for_efficiency.sql must answer from the options (name, jobs
    per node, efficiency, price per core-hour, low end): every option whose 95 % low end reaches
    ``target``, cheapest delivered core-hour first."""
    return sorted((o for o in options if o[4] >= target), key=lambda o: o[3])


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_mart_report_section_and_cheapest_configuration_query(without_nvme, tmp_path):
    import csv
    from pathlib import Path

    import duckdb

    from tierlens.report import build_report
    from tierlens.simulator import seeds as sd_
    from tierlens.transform import run_dbt

    wh, _ = without_nvme
    built = run_dbt(
        wh,
        tmp_path / "dbt",
        "build",
        [
            "--select",
            "stg_sim_efficiency_runs",
            "stg_sim_hardware_options+",
            "stg_sim_efficiency_type_loo+",
            "--exclude",
            "test_type:singular",
        ],
    )
    assert built.success, built.failures
    con = duckdb.connect(str(wh), read_only=True)
    options = con.execute(
        "select config_name, jobs_per_node, efficiency, price_per_core_hour, efficiency_low from sim_hardware_options"
    ).fetchall()
    mart = con.execute(
        "select config_name, jobs_per_node, price_rank, evidence, structural_error, "
        "generator_structural_error, published_structural_error, structural_error_source "
        "from marts.hardware_options"
    ).fetchall()
    loo = dict(
        con.execute(
            "select evidence, sqrt(avg(error * error)) from sim_efficiency_type_loo group by evidence"
        ).fetchall()
    )
    query = (Path(__file__).resolve().parents[1] / "sql" / "cheapest_configuration_for_efficiency.sql").read_text()
    assert SHIPPED_TARGET in query
    target = _target_between(options)
    answers = {t: _answer(con, query, t) for t in (0.75, target)}
    con.close()
    assert len(mart) == len(options)
    assert sorted(r[2] for r in mart) == list(range(1, len(mart) + 1))
    published = sd_.loo_rms(sd_.scoreboard_type_loo())
    probed = [r for r in mart if r[3] == "probe"]
    assert probed, "no option priced from a probe: the leave-one-type-out error was not compared"
    for name, _, _, evidence, err, gen, pub, source in mart:
        if evidence == "probe":
            # both errors beside the row, and the larger carried
            assert gen == pytest.approx(loo["probe"]) and pub == pytest.approx(published), name
            assert err == pytest.approx(max(loo["probe"], published)), name
            assert source == ("generator" if loo["probe"] >= published else "published figures")
        else:
            assert gen is None and pub is None and source is None, name
    for t, answer in answers.items():
        assert [(r[1], r[3]) for r in answer] == [(o[0], o[1]) for o in _cheapest_reaching(options, t)], t
    assert len(answers[target]) == 2 and len(options) > 2  # the filter kept some and dropped some
    report = build_report(wh, tmp_path / "report")
    with (tmp_path / "report" / "hardware_options.csv").open() as f:
        assert len(list(csv.DictReader(f))) == len(options)
    assert "Hardware you could buy" in report.html_path.read_text()


@pytest.fixture(scope="module")
def consumer_ssd_instead(demo, tmp_path_factory):
    """The demo site as a site with no SSD nodes that has probed, past its fast-write region, a
    consumer SSD with a write cliff as its candidate SSD; the CLI asked for the buying guide at 8
    and 16 jobs per node."""
    import shutil

    import duckdb
    from typer.testing import CliRunner

    from tierlens.cli import app
    from tierlens.pipeline import ingest
    from tierlens.records import Batch, RecordKind

    wh, _ = demo
    copy = tmp_path_factory.mktemp("consumer") / "warehouse.duckdb"
    shutil.copy(wh, copy)
    with duckdb.connect(str(copy)) as con:
        con.execute("delete from marts.job_io_profile where storage_type = 'ssd'")
    # the newest probe of storage type ssd: the cliff device, with the sustained-write jobs
    probe = run_synthetic_probe("ssd_consumer", slots=8, sustained=True)
    ingest([Batch(RecordKind.DEVICE_PROBE, probe, "probe:synthetic:ssd_consumer")], copy)
    r = CliRunner().invoke(app, ["simulate", "efficiency", "-w", str(copy), "-n", "8", "-n", "16", "--candidates"])
    assert r.exit_code == 0, r.output + repr(r.exception)
    return copy


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_the_guide_flags_a_consumer_ssd_whose_steady_writes_cannot_take_a_full_nodes_stage_in(consumer_ssd_instead):
    import duckdb

    from tierlens.sources.synthetic.site import CONSUMER_SSD

    wh = consumer_ssd_instead
    with duckdb.connect(str(wh), read_only=True) as con:
        # independently: bytes the site's completed analysis jobs put on scratch (copies in and
        # their own writes) per second of their wall time, as they were measured to run
        ((per_job_second,),) = con.execute(
            "select sum(stage_in_bytes + scratch_write_bytes) / sum(wall_seconds) from marts.job_io_profile "
            "where job_class = 'analysis' and state = 'COMPLETED' and storage_type is not null "
            "and cpu_seconds > 0"
        ).fetchall()
        rows = con.execute(
            "select config_name, evidence, jobs_per_node, staged_gb_per_node_hour, write_warning "
            "from sim_hardware_options"
        ).fetchall()
    by = {(name, n): (ev, staged, warning) for name, ev, n, staged, warning in rows}
    steady = CONSUMER_SSD.steady_write_bytes_per_second
    # the probe counts the fast region in whole 1 GB windows, leaving out the window the rate
    # falls in: it reports up to 1 GB less than the device has (11 or 12 GB here)
    region = r"(\d+) GB fast region"
    for n in (8.0, 16.0):
        ev, staged, warning = by[("Consumer SSD", n)]
        need = n * per_job_second  # bytes per second a full node writes to scratch
        assert ev == "probe"
        assert staged == pytest.approx(need * 3600 / 1e9, rel=1e-9)
        assert warning is not None, (n, need)
        if need > steady:
            assert warning.startswith(f"writes {steady / 1e6:.0f} MB/s (probe: steady state past a "), warning
            assert f"below the {need / 1e6:.0f} MB/s a full node stages in" in warning, warning
        else:
            assert f"then {steady / 1e6:.0f} MB/s (probe)" in warning, warning
        gb = float(re.search(region, warning).group(1))
        assert abs(gb * 1e9 - CONSUMER_SSD.write_cache_bytes) <= 1.5e9, warning
        # an enterprise NVMe (1400 MB/s, no fast region) takes the same node's writes
        assert need < 1400e6 and by[("Enterprise NVMe", n)][2] is None
    assert all(w is None for (name, _), (_, _, w) in by.items() if name != "Consumer SSD" and "HDD" not in name)


def test_guide_row_flags_only_with_device_figures_and_a_volume():
    from tierlens.simulator import hardware as hw

    row = GLASGOW[0][0]
    cliff = dv.DeviceFigures("ssd", 1e-4, 500e6, 500e6, write_cache=dv.WriteCache(12e9, 45e6))
    perf = hw.Performance(0.7, 0.6, 0.8, jobs_per_node=8)
    # 8 jobs x 25 MB/s = 200 MB/s asked of a device that settles at 45 MB/s
    r = hw.guide_row(hw.candidate(row, "probe"), perf, fig=cliff, staged_bytes_per_node_hour=8 * 25e6 * 3600)
    assert r["staged_gb_per_node_hour"] == pytest.approx(720.0)
    assert r["write_warning"] == (
        "writes 45 MB/s (probe: steady state past a 12 GB fast region), below the 200 MB/s a full node stages in"
    )
    assert (
        hw.guide_row(hw.candidate(row, "probe"), perf, fig=None, staged_bytes_per_node_hour=720e9)["write_warning"]
        is None
    )
    assert hw.guide_row(hw.candidate(row, "probe"), perf, fig=cliff)["write_warning"] is None


# --------------------------------------------------------------------------- Glasgow Table 4

#: Glasgow's catalog (Table 4: unit price in GBP, devices, GB per device; 2xHDD(500GB) is two
#: 250 GB disks in RAID0) and the measured throughput of Table 1 (8 jobs on an 8-core node).
GLASGOW = [
    (
        {
            "config_name": "Kingston SSDnow",
            "storage_type": "ssd",
            "device_model": "Kingston SSDnow",
            "devices_per_node": 1,
            "unit_price": 155.0,
            "currency": "GBP",
            "capacity_bytes": 128 * 10**9,
            "endurance_tbw": None,
            "raid_level": None,
        },
        4.5,
        34.40,
        1.21,
    ),
    (
        {
            "config_name": "Intel X-25 SSD",
            "storage_type": "ssd",
            "device_model": "Intel X-25",
            "devices_per_node": 1,
            "unit_price": 245.0,
            "currency": "GBP",
            "capacity_bytes": 160 * 10**9,
            "endurance_tbw": None,
            "raid_level": None,
        },
        6.0,
        40.80,
        1.53,
    ),
    (
        {
            "config_name": "2xHDD(500GB)",
            "storage_type": "raid0",
            "device_model": "HDD 250GB",
            "devices_per_node": 2,
            "unit_price": 40.0,
            "currency": "GBP",
            "capacity_bytes": 250 * 10**9,
            "endurance_tbw": None,
            "raid_level": "raid0",
        },
        7.0,
        11.40,
        0.16,
    ),
]


def test_glasgow_table4_through_the_buying_guide():
    from tierlens.simulator import hardware as hw

    rows = []
    for row, throughput, per_throughput, per_gb in GLASGOW:
        eff = throughput / 8
        r = hw.guide_row(hw.candidate(row, "measured"), hw.Performance(eff, eff, eff, jobs_per_node=8))
        # Table 4 prints two decimals of values rounded to 0.1 (155 / 4.5 = 34.44 -> 34.40)
        assert r["price_per_throughput"] == pytest.approx(per_throughput, abs=0.05), row["config_name"]
        assert round(r["price_per_gb"], 2) == per_gb, row["config_name"]
        rows.append(r)
    # Glasgow ranked the storage alone per throughput: 2xHDD, Kingston, Intel
    by_storage = sorted(rows, key=lambda r: r["price_per_throughput"])
    assert [r["config_name"] for r in by_storage] == ["2xHDD(500GB)", "Kingston SSDnow", "Intel X-25 SSD"]
    # The whole node (the same 8-core node for all three) costs far more than any of the storage,
    # so per delivered core-hour the throughput decides: 2xHDD (7.0), Intel (6.0), Kingston (4.5).
    ranked = hw.rank(rows).to_pylist()
    assert [r["config_name"] for r in ranked] == ["2xHDD(500GB)", "Intel X-25 SSD", "Kingston SSDnow"]
    # a wider efficiency interval widens the price interval around the same central price
    r = hw.guide_row(hw.candidate(GLASGOW[0][0], "probe"), hw.Performance(0.5625, 0.50, 0.62, jobs_per_node=8))
    assert r["price_per_throughput_low"] == pytest.approx(155 / (8 * 0.62))
    assert r["price_per_throughput_high"] == pytest.approx(155 / (8 * 0.50))


def _hours(years: float) -> float:
    return years * 365.25 * 24


#: A site's own node rows (what `--node-catalog` reads), and a tariff in the same currency.
NODES = (
    dict(
        config_name="small",
        cores=8,
        cpu_price=500.0,
        memory_gb=32,
        memory_price=100.0,
        chassis_price=900.0,
        watts=200.0,
        currency="GBP",
        source="test quote",
    ),
    dict(
        config_name="big",
        cores=32,
        cpu_price=2000.0,
        memory_gb=128,
        memory_price=400.0,
        chassis_price=1100.0,
        watts=450.0,
        currency="GBP",
        source="test quote",
    ),
)


def _economics(tmp_path, tariff: float = 0.2):
    import csv

    from tierlens.simulator import hardware as hw

    path = tmp_path / "nodes.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=hw.NODE_CATALOG_COLUMNS)
        w.writeheader()
        w.writerows(NODES)
    return hw.Economics(hw.read_node_catalog(path), tariff, 5.0)


def test_whole_node_price_per_core_hour_adds_node_storage_and_power(tmp_path):
    from tierlens.simulator import hardware as hw

    econ = _economics(tmp_path)
    row = GLASGOW[2][0]  # 2 x 40 GBP HDDs, no endurance: storage lives the service life
    # 8 jobs of 2 cores need 16 cores: the 8-core node is too small, the 32-core one is priced
    perf = hw.Performance(0.7, 0.6, 0.8, jobs_per_node=8, cores_per_job=2.0)
    r = hw.guide_row(hw.candidate(row, "measured"), perf, econ=econ)
    assert (r["node_config"], r["node_cores"]) == ("big", 32)
    node_price, storage, watts = 2000 + 400 + 1100, 80.0, 450.0
    per_node_hour = (node_price + storage) / _hours(5) + watts / 1000 * 0.2
    assert r["whole_node_price"] == pytest.approx(node_price + storage)
    assert r["price_per_core_hour"] == pytest.approx(per_node_hour / (8 * 2 * 0.7))
    assert r["price_per_core_hour_low"] == pytest.approx(per_node_hour / (8 * 2 * 0.8))
    assert r["price_per_core_hour_high"] == pytest.approx(per_node_hour / (8 * 2 * 0.6))
    assert r["interval_driver"] == "efficiency"
    # one single-core job fits the small node
    small = hw.guide_row(hw.candidate(row, "measured"), hw.Performance(0.7, 0.7, 0.7, jobs_per_node=4), econ=econ)
    assert small["node_config"] == "small"
    assert small["price_per_core_hour"] == pytest.approx(((1500 + 80) / _hours(5) + 0.2 * 0.2) / (4 * 0.7))


def test_endurance_limited_storage_prices_writes_not_efficiency(tmp_path):
    """An SSD worn out by writes is replaced: its share per core-hour is price x writes per
    core-hour / endurance, the same at any efficiency; its interval follows the writes."""
    from tierlens.simulator import hardware as hw

    econ = _economics(tmp_path)
    row = dict(GLASGOW[0][0], endurance_tbw=40.0)  # 155 GBP, 40 TB written
    w, w_lo, w_hi = 3.0, 2.5, 3.5  # GB written per delivered core-hour
    perf = hw.Performance(
        0.6,
        0.5,
        0.7,
        jobs_per_node=8,
        write_gb_per_core_hour=w,
        write_gb_per_core_hour_low=w_lo,
        write_gb_per_core_hour_high=w_hi,
    )
    r = hw.guide_row(hw.candidate(row, "datasheet"), perf, econ=econ)
    thr = 8 * 0.6
    assert r["scratch_gb_written_per_node_day"] == pytest.approx(thr * 24 * w)
    assert r["ssd_lifetime_years"] == pytest.approx(40_000 / (thr * 24 * w) / 365.25)
    assert r["ssd_lifetime_years"] < 5 and r["interval_driver"] == "efficiency and endurance"
    node = (1500 / _hours(5) + 0.2 * 0.2) / thr
    assert r["price_per_core_hour"] == pytest.approx(node + 155 * w / 40_000)
    # low end: the highest efficiency and the fewest writes; high end: the opposite
    assert r["price_per_core_hour_low"] == pytest.approx((1500 / _hours(5) + 0.04) / (8 * 0.7) + 155 * w_lo / 40_000)
    assert r["price_per_core_hour_high"] == pytest.approx((1500 / _hours(5) + 0.04) / (8 * 0.5) + 155 * w_hi / 40_000)
    mirror = hw.candidate(dict(row, devices_per_node=2, raid_level="raid1", storage_type="raid1"), "datasheet")
    assert mirror.endurance_tb_per_node == 40.0 and mirror.capacity_gb_per_node == 128.0


def test_a_run_id_covers_probes_catalogue_and_node_economics():
    """Two runs that differ only in a probe, a catalogue row or the tariff must not share an id
    (the later would silently replace the earlier)."""
    from tierlens.simulator import hardware as hw

    rows = [{"probe_id": "p1", "storage_type": "hdd", "job_name": "stagein_write", "bandwidth_bytes_per_second": 1e8}]
    catalog = [dict(GLASGOW[0][0])]
    base = hw.inputs_digest(hw.Devices({}, {}, catalog, {"hdd": rows}))
    assert base == hw.inputs_digest(hw.Devices({}, {}, [dict(GLASGOW[0][0])], {"hdd": [dict(rows[0])]}))
    reprobed = hw.inputs_digest(hw.Devices({}, {}, catalog, {"hdd": [dict(rows[0], probe_id="p2")]}))
    refigured = hw.inputs_digest(hw.Devices({}, {}, catalog, {"hdd": [dict(rows[0], bandwidth_bytes_per_second=2e8)]}))
    repriced = hw.inputs_digest(hw.Devices({}, {}, [dict(GLASGOW[0][0], unit_price=99.0)], {"hdd": rows}))
    tariff = hw.inputs_digest(hw.Devices({}, {}, catalog, {"hdd": rows}), hw.Economics(power_price_per_kwh=0.3))
    digests = [base, reprobed, refigured, repriced, tariff]
    assert len({repr(sorted(d.items())) for d in digests}) == len(digests)


def test_node_catalog_errors_name_the_line_and_field(tmp_path):
    from tierlens.simulator import hardware as hw

    path = tmp_path / "nodes.csv"
    path.write_text(
        "config_name,cores,cpu_price,memory_gb,memory_price,chassis_price,watts,currency,source\n"
        "a,8,500,32,100,900,200,GBP,quote\n"
        "b,0,500,32,100,900,200,GBP,quote\n"
    )
    with pytest.raises(ValueError, match=r"line 3: field cores"):
        hw.read_node_catalog(path)
    path.write_text("config_name,cores\na,8\n")
    with pytest.raises(ValueError, match="missing column"):
        hw.read_node_catalog(path)
    # a node priced in another currency than the storage is refused, not added
    eur = hw.Economics((dataclasses.replace(hw.DEFAULT_NODES[0], currency="EUR"),))
    with pytest.raises(ValueError, match="EUR"):
        hw.guide_row(hw.candidate(GLASGOW[0][0], "measured"), hw.Performance(0.5, 0.5, 0.5, 8), econ=eur)
    # the defaults say what they rest on
    assert all("not a quote" in n.source for n in hw.DEFAULT_NODES)


# --------------------------------------------------------------------------- other engines' marts


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_efficiency_from_a_parquet_marts_folder_equals_the_warehouse_run(demo, tmp_path):
    import duckdb
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from tierlens.cli import app
    from tierlens.simulator import whatif

    wh, _ = demo
    marts = tmp_path / "spark-warehouse" / "marts.db"
    (marts / "job_io_profile").mkdir(parents=True)
    con = duckdb.connect(str(wh), read_only=True)
    # several part files, as Spark writes them
    con.execute(
        f"copy (select * from marts.job_io_profile) to '{marts / 'job_io_profile'}' "
        "(format parquet, per_thread_output true, row_group_size 2000, overwrite_or_ignore true)"
    )
    options = whatif.EfficiencyOptions(jobs_per_node=(8,), validate=False)
    expected = whatif.run(con, options).predictions
    con.close()
    got = whatif.run(whatif.marts_connection(marts), options).predictions
    assert got.column("storage_type").to_pylist() == expected.column("storage_type").to_pylist()
    assert got.column("predicted_efficiency").to_pylist() == pytest.approx(
        expected.column("predicted_efficiency").to_pylist(), rel=1e-9
    )
    probe = tmp_path / "nvme-probe.parquet"
    pq.write_table(run_synthetic_probe("nvme"), probe)
    out = tmp_path / "results.duckdb"
    r = CliRunner().invoke(
        app,
        [
            "simulate",
            "efficiency",
            "--marts",
            str(marts),
            "--probe",
            str(probe),
            "-w",
            str(out),
            "-n",
            "8",
            "--no-validate",
        ],
    )
    assert r.exit_code == 0, r.output + repr(r.exception)
    con = duckdb.connect(str(out), read_only=True)
    assert con.execute("select count(*) from sim_efficiency_predictions").fetchone()[0] == got.num_rows
    con.close()
    refused = CliRunner().invoke(app, ["simulate", "efficiency", "--marts", str(marts), "-c", "lru:1TB", "--no-write"])
    assert refused.exit_code == 1 and "int_file_access_by_job" in refused.output
