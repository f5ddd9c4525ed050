"""The site report: self-contained HTML, CSV numbers that match the marts, graceful "no data".

Each test builds a small DuckDB warehouse by hand (schema ``marts`` with a few rows of known
numbers, and the raw reject/batch tables), runs ``build_report`` and checks the output against
numbers computed here, independently, from the same rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import html as htmllib
import math
import re
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

from support.report_marts import HARDWARE_OPTIONS_COLUMNS
from support.report_warehouse import (
    AB_ROWS,
    CACHE_ROWS,
    JOBS,
    PRICE_ROWS,
    REJECTS,
    WEEK_GROUPS,
    failures,
    make_warehouse,
)
from tierlens.report import CSV_NAMES, SECTION_IDS, ReportResult, build_report

D = dt.date


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def f(value: str) -> float | None:
    return None if value == "" else float(value)


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportResult, Path]:
    """One report of the full warehouse, shared by the tests that only read it."""
    tmp = tmp_path_factory.mktemp("full")
    warehouse = make_warehouse(tmp / "warehouse.duckdb")
    return build_report(warehouse, tmp / "out", title="Test Tier-2 report"), warehouse


# --------------------------------------------------------------------------- the page itself


def test_html_is_self_contained_with_embedded_figures(full_report):
    result, _ = full_report
    assert result.html_path == result.html_path.parent / "report.html"
    assert result.html_path.is_file()
    html = result.html_path.read_text(encoding="utf-8")
    assert "<title>Test Tier-2 report</title>" in html
    # No external resource or link of any kind.
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?//""", html, re.I)
    assert "<link" not in html and "@import" not in html and "<script" not in html
    # Four figures, embedded: efficiency bars, A/B lines, cache GB/hour, cache hit ratio.
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 4
    assert all(len(img) > 2000 for img in images)
    # Every img/href either a data: URI or a CSV beside the page or an in-page anchor.
    for target in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert target.startswith(("data:image/png;base64,", "#")) or re.fullmatch(r"[a-z_]+\.csv", target)
    assert result.sections == list(SECTION_IDS)
    assert result.no_data == []
    assert "no data" not in html.lower().replace("(no data)", "")


def test_warehouse_is_not_modified(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    before = (warehouse.stat().st_size, warehouse.stat().st_mtime_ns)
    build_report(warehouse, tmp_path / "out")
    assert (warehouse.stat().st_size, warehouse.stat().st_mtime_ns) == before
    assert not list(tmp_path.glob("w.duckdb.wal"))
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


def test_missing_warehouse_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        build_report(tmp_path / "nope.duckdb", tmp_path / "out")


# --------------------------------------------------------------------------- numbers


def test_summary_numbers(full_report):
    result, _ = full_report
    summary = {r["metric"]: r["value"] for r in read_csv(result.html_path.parent / "summary.csv")}
    cpu = sum(j[5] for j in JOBS)
    core_wall = sum(j[6] * j[7] for j in JOBS)
    per_job = [j[5] / (j[6] * j[7]) for j in JOBS]
    assert int(summary["Jobs"]) == len(JOBS)
    assert float(summary["Core-hours (wall × cores)"]) == pytest.approx(core_wall / 3600)
    assert float(summary["CPU efficiency, Σcpu / Σ(wall × cores)"]) == pytest.approx(cpu / core_wall)
    assert float(summary["Mean job efficiency"]) == pytest.approx(sum(per_job) / len(per_job))
    assert int(summary["Jobs with efficiency above 100 % (flagged, not clipped)"]) == sum(e > 1 for e in per_job)
    days = [j[8] for j in JOBS]
    assert summary["Period covered"] == f"{min(days)}/{max(days)}"
    assert int(summary["Rejected records"]) == len(REJECTS)
    assert int(summary["Batches loaded, every source (main.raw_batches)"]) == 2

    html = result.html_path.read_text(encoding="utf-8")
    assert f"{cpu / core_wall * 100:.1f} %" in html
    assert f"{min(days)} to {max(days)} ({(max(days) - min(days)).days + 1} days)" in html
    assert "main.raw_rejects" in html
    rejects = read_csv(result.html_path.parent / "rejects_by_reason.csv")
    assert rejects[0] == {"record_kind": "job", "reason": "end before start", "records": "2"}


def _expected_groups(keyfunc):
    acc = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0])
    for row in WEEK_GROUPS:
        (_, st, arm, _acct, cls, jobs, cpu, wall, cw, mean, above) = row
        a = acc[keyfunc(st, arm, cls)]
        a[6] += failures(row)[0]
        a[7] += failures(row)[1]
        a[0] += jobs
        a[1] += cpu
        a[2] += wall
        a[3] += cw
        a[4] += mean * jobs
        a[5] += above
    return {
        k: {
            "jobs": v[0],
            "cpu_hours": v[1],
            "wall_hours": v[2],
            "core_wall_hours": v[3],
            "efficiency": v[1] / v[3],
            "mean_job_efficiency": v[4] / v[0],
            "jobs_above_one": v[5],
            "failed_jobs": v[6],
            "launch_failures": v[7],
            "failed_share": v[6] / (v[0] + v[7]),
        }
        for k, v in acc.items()
    }


def _check_group_rows(rows, expected, keyfunc):
    assert len(rows) == len(expected)
    for row in rows:
        key = keyfunc(row)
        exp = expected[key]
        assert int(row["jobs"]) == exp["jobs"], key
        for col in ("cpu_hours", "wall_hours", "core_wall_hours", "efficiency", "mean_job_efficiency"):
            assert f(row[col]) == pytest.approx(exp[col]), (key, col)
        assert int(row["jobs_above_one"]) == exp["jobs_above_one"]
        assert (int(row["failed_jobs"]), int(row["launch_failures"])) == (exp["failed_jobs"], exp["launch_failures"])
        assert f(row["failed_share"]) == pytest.approx(exp["failed_share"]), key
        assert row["efficiency_above_one"] == ("true" if exp["efficiency"] > 1 else "false")


def test_efficiency_by_storage_is_ratio_of_sums_over_weeks(full_report):
    result, _ = full_report
    out = result.html_path.parent
    expected = _expected_groups(lambda st, arm, cls: (st or "", arm or ""))
    rows = read_csv(out / "efficiency_by_storage.csv")
    _check_group_rows(rows, expected, lambda r: (r["storage_type"], r["ab_arm"]))
    # hdd/A: 150 CPU h over 190 core-hours, not the mean of the three group ratios.
    hdd = expected[("hdd", "A")]
    assert hdd["efficiency"] == pytest.approx(150 / 190)
    assert hdd["efficiency"] != pytest.approx((0.75 + 0.9 + 0.75) / 3)
    html = result.html_path.read_text(encoding="utf-8")
    assert "78.9 %" in html
    # nvme/B is above 100 %: flagged in the table, listed among the flagged groups.
    assert re.search(r'<tr class="flagged"><td>nvme</td><td>B</td>', html)
    flagged = read_csv(out / "efficiency_flagged_groups.csv")
    assert {(r["storage_type"], r["job_class"]) for r in flagged} == {("nvme", "analysis"), ("ssd", "production")}


def test_efficiency_by_job_class(full_report):
    result, _ = full_report
    expected = _expected_groups(lambda st, arm, cls: (st or "", arm or "", cls or ""))
    rows = read_csv(result.html_path.parent / "efficiency_by_job_class.csv")
    _check_group_rows(rows, expected, lambda r: (r["storage_type"], r["ab_arm"], r["job_class"]))


def test_ab_tables(full_report):
    result, _ = full_report
    out = result.html_path.parent
    (_, start, end, ja, ca, wa, cwa, jb, cb, wb, cwb) = next(r for r in AB_ROWS if r[0] == "all")
    rows = {r["group"]: r for r in read_csv(out / "ab_overall.csv")}
    assert set(rows) == {"arm A", "arm B", "B − A"}
    assert f(rows["arm A"]["cpu_hours"]) == pytest.approx(ca)
    assert f(rows["arm A"]["wall_hours"]) == pytest.approx(wa)
    assert f(rows["arm A"]["cpu_per_wall"]) == pytest.approx(ca / wa)
    assert f(rows["arm B"]["cpu_per_wall"]) == pytest.approx(cb / wb)
    assert f(rows["B − A"]["efficiency"]) == pytest.approx(cb / cwb - ca / cwa)
    assert rows["arm B"]["period"] == f"{start} to {end - dt.timedelta(days=1)}"  # its last day, as the summary
    html = result.html_path.read_text(encoding="utf-8")
    # The SLAC numbers, as SLAC printed them.
    for text in ("25,776.9", "34,143.3", "0.75", "28,508.6", "35,258.7", "0.81"):
        assert text in html

    daily = read_csv(out / "ab_daily.csv")
    days = [r for r in AB_ROWS if r[0] == "day"]
    assert [r["period_start"] for r in daily] == [d[1].isoformat() for d in days]
    for row, d in zip(daily, days):
        assert f(row["efficiency_b"]) == pytest.approx(d[8] / d[10])
        assert f(row["efficiency_a"]) == (None if d[4] is None else pytest.approx(d[4] / d[6]))
    weekly = read_csv(out / "ab_weekly.csv")
    assert len(weekly) == 1 and f(weekly[0]["efficiency_b_minus_a"]) == pytest.approx(140 / 160 - 100 / 140)
    # a week is shown by its first and last day, both included: Monday to Sunday, as the jobs'
    # days (JOBS: the 6th to the 13th) hold all of it
    week = next(r for r in AB_ROWS if r[0] == "week")
    assert min(j[8] for j in JOBS) <= week[1] and week[1] + dt.timedelta(days=6) <= max(j[8] for j in JOBS)
    assert [weekly[0][k] for k in ("period_start", "first_day", "last_day", "days_in_period", "partial_week")] == [
        week[1].isoformat(),
        week[1].isoformat(),
        (week[1] + dt.timedelta(days=6)).isoformat(),
        "7",
        "false",
    ]
    assert "period_end" not in weekly[0]


def test_cache_numbers(full_report):
    result, _ = full_report
    out = result.html_path.parent
    per_hour = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0, 0.0])
    per_server = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0, 0.0])
    for hour, server, acc, hits, gbc, gbs, gbb, gbr in CACHE_ROWS:
        for key, table in ((hour, per_hour), (server, per_server), ("all servers", per_server)):
            t = table[key]
            t[0] += acc
            t[1] += hits
            t[2] += gbc
            t[3] += gbs
            t[4] += gbb
            t[5] += gbr
    hourly = read_csv(out / "cache_hourly.csv")
    assert [dt.datetime.fromisoformat(r["hour"]) for r in hourly] == sorted(per_hour)
    for row in hourly:
        acc, hits, gbc, gbs, gbb, gbr = per_hour[dt.datetime.fromisoformat(row["hour"])]
        assert f(row["gb_delivered_from_cache"]) == pytest.approx(gbc)
        assert f(row["gb_staged_in"]) == pytest.approx(gbs)
        assert f(row["hit_ratio_requests"]) == pytest.approx(hits / acc)
        assert f(row["hit_ratio_bytes"]) == pytest.approx(gbc / (gbc + gbs + gbb))
        assert f(row["gb_read"]) == pytest.approx(gbr)
    servers = {r["server_host"]: r for r in read_csv(out / "cache_by_server.csv")}
    assert set(servers) == set(per_server)
    for name, (acc, hits, gbc, gbs, gbb, gbr) in per_server.items():
        assert int(servers[name]["accesses"]) == acc
        assert f(servers[name]["gb_read"]) == pytest.approx(gbr)
        assert f(servers[name]["hit_ratio_requests"]) == pytest.approx(hits / acc)
        assert f(servers[name]["hit_ratio_bytes"]) == pytest.approx(gbc / (gbc + gbs + gbb))


def test_price_performance(full_report):
    result, _ = full_report
    rows = read_csv(result.html_path.parent / "storage_price_performance.csv")
    assert [r["config_name"] for r in rows] == ["raid0-2xhdd", "kingston-ssd", "intel-x25"]
    by_name = {r["config_name"]: r for r in rows}
    # each price figure from the configuration's own inputs: price per node (devices x unit
    # price), its capacity and its measured throughput
    for name, _, _, devices, unit, _, _, capacity, _, _, _, _, throughput, _ in PRICE_ROWS:
        per_node = devices * unit
        assert f(by_name[name]["unit_price"]) == unit, name
        assert f(by_name[name]["price_per_gb"]) == pytest.approx(per_node / capacity, abs=0.005), name
        if throughput is not None:
            assert f(by_name[name]["price_per_throughput"]) == pytest.approx(per_node / throughput, abs=0.005), name
    assert by_name["intel-x25"]["efficiency"] == "" and by_name["intel-x25"]["price_per_throughput"] == ""
    html = result.html_path.read_text(encoding="utf-8")
    row = re.search(r"<tr><td>intel-x25</td>.*?</tr>", html).group(0)
    assert row.count("not measured") == 5
    assert "245.00 GBP" in row and "1.53 GBP" in row
    kingston = re.search(r"<tr><td>kingston-ssd</td>.*?</tr>", html).group(0)
    assert "81.0 %" in kingston
    # every price of the row in the row's currency, as the unit price: per node, per GB, per throughput
    assert kingston.count("155.00 GBP") == 2, kingston
    for value in (155.0 / 128.0, 155.0 / 4.5):
        assert f"{value:.2f} GBP" in kingston, kingston


def test_csv_paths_are_the_tables_written(full_report):
    result, _ = full_report
    names = [p.name for p in result.csv_paths]
    assert len(names) == len(set(names))
    assert set(names) == set(CSV_NAMES)
    assert all(p.is_file() and p.parent == result.html_path.parent for p in result.csv_paths)


# --------------------------------------------------------------------------- graceful degradation


def test_missing_marts_say_no_data(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb", marts=False, raw=False)
    result = build_report(warehouse, tmp_path / "out")
    html = result.html_path.read_text(encoding="utf-8")
    assert result.sections == list(SECTION_IDS)
    assert result.no_data == list(SECTION_IDS)
    assert html.count('<div class="nodata"><strong>no data</strong>') >= 5
    assert "marts.ab_comparison is not in the warehouse" in html
    assert "<img" not in html
    assert [p.name for p in result.csv_paths] == ["summary.csv"]


def test_empty_marts_say_no_data(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        for name in (
            "efficiency_by_group",
            "ab_comparison",
            "cache_hourly",
            "storage_price_performance",
            "job_efficiency",
        ):
            con.execute(f"DELETE FROM marts.{name}")
    result = build_report(warehouse, tmp_path / "out")
    html = result.html_path.read_text(encoding="utf-8")
    assert result.no_data == list(SECTION_IDS)
    for name in ("efficiency_by_group", "ab_comparison", "cache_hourly", "storage_price_performance"):
        assert f"marts.{name} is empty." in html
    # Rejects are still counted when the marts are empty.
    assert "Rejected records" in html


def test_one_broken_mart_does_not_take_the_others_down(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DROP TABLE marts.cache_hourly")
        con.execute("CREATE TABLE marts.cache_hourly (hour TIMESTAMP, unexpected INTEGER)")
        con.execute("INSERT INTO marts.cache_hourly VALUES ('2024-05-06 10:00', 1)")
        con.execute("DROP TABLE marts.ab_comparison")
    result = build_report(warehouse, tmp_path / "out")
    assert result.no_data == ["ab", "cache"]
    html = result.html_path.read_text(encoding="utf-8")
    assert "The warehouse could not be read" in html
    assert html.count("<img") == 1  # the efficiency chart is still there


def test_stale_csvs_are_removed(tmp_path: Path):
    out = tmp_path / "out"
    build_report(make_warehouse(tmp_path / "full.duckdb"), out)
    assert (out / "cache_hourly.csv").is_file()
    result = build_report(make_warehouse(tmp_path / "bare.duckdb", marts=False), out)
    assert not (out / "cache_hourly.csv").exists()
    assert {p.name for p in out.glob("*.csv")} == {p.name for p in result.csv_paths}


def test_group_efficiency_is_never_nan_for_zero_core_hours(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute("""INSERT INTO marts.efficiency_by_group VALUES
            ('week', DATE '2024-05-13', 'tmpfs', 'A', 'atlas', 'analysis', 1, 0, 0, 0, NULL, NULL, 0, false, 0, 0, 0)""")
    result = build_report(warehouse, tmp_path / "out")
    rows = read_csv(result.html_path.parent / "efficiency_by_storage.csv")
    tmpfs = next(r for r in rows if r["storage_type"] == "tmpfs")
    assert tmpfs["efficiency"] == "" and tmpfs["mean_job_efficiency"] == ""
    assert not any(isinstance(v, float) and math.isnan(v) for v in map(f, (r["efficiency"] for r in rows)))


# --------------------------------------------------------------------------- sections as data


def _jobs_by_storage_spec():
    """A section that is not in the registry: jobs and CPU hours per storage type, from job_efficiency."""
    from tierlens.report.page import Column
    from tierlens.report.spec import SectionSpec, TableSpec

    def body(wh, s):
        s.table(
            "jobs_by_storage",
            wh.rows("""
            SELECT coalesce(storage_type, 'untagged') AS storage_type, count(*) AS jobs,
                   sum(cpu_seconds) / 3600.0 AS cpu_hours
            FROM marts.job_efficiency GROUP BY ALL ORDER BY storage_type
        """),
        )

    return SectionSpec(
        id="jobs_by_storage",
        title="Jobs per storage type",
        intro="How many jobs ran on each storage type.",
        body=body,
        marts=("job_efficiency",),
        empty_hint="No jobs yet.",
        tables=(
            TableSpec(
                "jobs_by_storage",
                "Jobs and CPU hours per storage type",
                (
                    Column("storage_type", "storage type"),
                    Column("jobs", "jobs", "int"),
                    Column("cpu_hours", "CPU hours", "hours"),
                ),
            ),
        ),
    )


def test_a_registered_section_appears_in_the_toc_and_csv_names(tmp_path: Path):
    from tierlens.report import registry

    specs = registry.REGISTRY + (_jobs_by_storage_spec(),)
    assert "jobs_by_storage.csv" in registry.csv_names(registry=specs)
    assert "jobs_by_storage.csv" not in registry.csv_names()
    assert registry.section_ids(registry=specs) == tuple(SECTION_IDS) + ("jobs_by_storage",)

    out = tmp_path / "out"
    result = build_report(make_warehouse(tmp_path / "w.duckdb"), out, specs=specs)
    assert result.sections == list(SECTION_IDS) + ["jobs_by_storage"]
    assert result.no_data == []
    html = result.html_path.read_text(encoding="utf-8")
    nav = html[html.index("<nav>") : html.index("</nav>")]
    assert re.findall(r'<a href="#([a-z_]+)">(\d+)\. ', nav)[-1] == ("jobs_by_storage", str(len(SECTION_IDS) + 1))
    assert '<a href="#jobs_by_storage">6. Jobs per storage type</a>' in nav
    assert '<section id="jobs_by_storage">' in html and 'href="jobs_by_storage.csv"' in html
    assert out / "jobs_by_storage.csv" in result.csv_paths

    expected: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for _, st, _arm, _cls, _acct, cpu, _wall, _cores, _day in JOBS:
        expected[st][0] += 1
        expected[st][1] += cpu / 3600
    rows = read_csv(out / "jobs_by_storage.csv")
    assert [r["storage_type"] for r in rows] == sorted(expected)
    for r in rows:
        assert int(r["jobs"]) == expected[r["storage_type"]][0]
        assert f(r["cpu_hours"]) == pytest.approx(expected[r["storage_type"]][1])

    # Without its mart the section says why, and its CSV from the run before is removed.
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("DELETE FROM marts.job_efficiency")
    result = build_report(tmp_path / "w.duckdb", out, specs=specs)
    assert "jobs_by_storage" in result.no_data
    assert "marts.job_efficiency is empty. No jobs yet." in result.html_path.read_text(encoding="utf-8")
    assert not (out / "jobs_by_storage.csv").exists()


def test_registry_specs_are_consistent():
    from tierlens.report import registry

    ids = [s.id for s in registry.REGISTRY]
    assert len(ids) == len(set(ids))
    names = registry.csv_names()
    assert len(names) == len(set(names)), "two sections declare a table of the same name"
    for spec in registry.REGISTRY:
        tables = {t.name for t in spec.tables}
        for plot in spec.plots:
            assert plot.data in tables, (spec.id, plot.name)


# --------------------------------------------------------------------------- hardware you could buy

#: (config, storage type, evidence, jobs per node, efficiency, low, high, price per core-hour, low, high)
HARDWARE = [
    ("1xHDD", "hdd", "measured", 8.0, 0.60, 0.57, 0.63, 0.0120, 0.0114, 0.0126),
    ("Enterprise NVMe", "nvme", "probe", 8.0, 0.80, 0.74, 0.86, 0.0095, 0.0088, 0.0103),
    ("Consumer SSD", "ssd", "datasheet", 16.0, 0.70, 0.50, 0.90, 0.0110, 0.0090, 0.0150),
]


#: the probe's read p99 under half-bandwidth writes, shown beside the probed configuration only
UNDER_WRITE_P99_MS = 3.25
WRITE_WARNING = "writes 45 MB/s (probe: steady state past a 12 GB fast region), below the 83 MB/s a full node stages in"


def test_hardware_section_prices_whole_nodes_with_both_figures(tmp_path: Path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute(f"CREATE TABLE marts.hardware_options ({HARDWARE_OPTIONS_COLUMNS})")
        for i, (name, st, ev, n, e, elo, ehi, p, plo, phi) in enumerate(sorted(HARDWARE, key=lambda h: h[7])):
            con.execute(
                "INSERT INTO marts.hardware_options VALUES (?, ?, ?, ?, ?, ?, 'none', 'GBP', '8-core worker', "
                "1.0, 1900, 40, 0.08, 0.05, ?, ?, ?, ?, 5.0, ?, ?, ?, 'efficiency', NULL, ?, 300, ?, ?, ?, ?, ?)",
                [
                    "analysis",
                    i + 1,
                    name,
                    st,
                    ev,
                    n,
                    e,
                    elo,
                    ehi,
                    n * e,
                    p,
                    plo,
                    phi,
                    *(
                        (0.03, None, None, None, None, None)
                        if ev == "measured"
                        else (
                            0.112,
                            WRITE_WARNING if name == "Consumer SSD" else None,
                            0.021 if ev == "probe" else 0.2,
                            0.112,
                            "published figures" if ev == "probe" else "generator",
                            UNDER_WRITE_P99_MS if ev == "probe" else None,
                        )
                    ),
                ],
            )
        con.execute("""CREATE TABLE marts.efficiency_what_if AS SELECT * FROM (VALUES
            ('analysis', 'hdd', 4.0, 'none', 0.7), ('analysis', 'hdd', 8.0, 'none', 0.6),
            ('analysis', 'nvme', 4.0, 'none', 0.85), ('analysis', 'nvme', 8.0, 'none', 0.8))
            AS t(job_class, storage_type, jobs_per_node, cache, predicted_efficiency)""")
    result = build_report(warehouse, tmp_path / "out")
    assert "hardware" in result.sections and "hardware" not in result.no_data
    html = result.html_path.read_text(encoding="utf-8")
    section = html[html.index('id="hardware"') :]
    assert section.count("<img") >= 2  # price against efficiency, and the what-if heat map
    with (tmp_path / "out" / "hardware_options.csv").open() as f:
        rows = list(csv.DictReader(f))
    # cheapest whole-node core-hour first; per 1000 core-hours is 1000 x the mart's per core-hour
    expected = sorted(HARDWARE, key=lambda h: h[7])
    assert [r["config_name"] for r in rows] == [h[0] for h in expected]
    for r, h in zip(rows, expected):
        assert float(r["price_per_1000_core_hours"]) == pytest.approx(1000 * h[7])
        assert float(r["price_per_1000_core_hours_low"]) == pytest.approx(1000 * h[8])
        assert r["node_config"] == "8-core worker" and float(r["whole_node_price"]) == 1900
        assert (r["write_warning"] == WRITE_WARNING) == (r["config_name"] == "Consumer SSD")
        probed = r["evidence"] == "probe"
        assert (r["under_write_read_p99_ms"] and float(r["under_write_read_p99_ms"])) == (
            UNDER_WRITE_P99_MS if probed else ""
        )
    assert "read p99 under 50 % writes (ms)" in section
    # the flagged device is listed again on its own, with its evidence, where a purchaser reads
    assert "cannot keep up" in section and section.count(WRITE_WARNING) == 2
    # both structural errors of a derived row are shown, with the one its interval carries
    assert "published figures (Glasgow)" in section and "this site (types left out)" in section


def test_a_value_that_rounds_to_zero_prints_without_a_sign():
    """'-0.0 pt' claims a direction the rounded figure does not have: every format of points,
    percentages and fractions prints a value that rounds to zero as a plain zero, in intervals too."""
    from tierlens.report import fmt

    tiny = (-0.0004, -0.0, 0.0, 0.0004)
    for kind, zero in (("points", "0.0 pt"), ("points_size", "0.0 pt"), ("pct", "0.0 %"), ("ratio", "0.00")):
        assert {fmt.FORMATTERS[kind](v) for v in tiny} == {zero}, kind
    assert {fmt.money(v) for v in (-0.004, 0.004)} == {"0.00"}
    assert {fmt.number(v) for v in (-0.0, 0.0)} == {"0"}
    # a value that does not round to zero keeps its sign
    assert (fmt.points(-0.0005), fmt.points(0.0006), fmt.pct(-0.0006), fmt.ratio(-0.006)) == (
        "-0.1 pt",
        "+0.1 pt",
        "-0.1 %",
        "-0.01",
    )
    assert fmt.number(-1e-5) == "-1e-05"
    assert fmt.interval(-0.0004, 0.0131, "points") == "0.0 to +1.3 pt"
    # what the page says beside such a bound: it hid a sign (not a true zero, not a shown digit)
    assert [fmt.hides_its_sign(v, "points") for v in (-0.0004, 0.0004, 0.0, None, -0.0005, 0.02)] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_a_week_the_period_cuts_shows_the_periods_days():
    """An ISO week runs Monday to Sunday; one the report's period cuts shows the period's first or
    last day instead and says it holds fewer than 7 days."""
    from tierlens.report.period import ReportPeriod

    period = ReportPeriod(D(2026, 10, 1), D(2026, 10, 14))  # a Thursday to the Wednesday two weeks on
    cut_start, whole, cut_end, after = (period.week(D(2026, 9, 28) + dt.timedelta(days=7 * k)) for k in range(4))
    assert (cut_start.first, cut_start.last, cut_start.days, cut_start.partial) == (
        D(2026, 10, 1),
        D(2026, 10, 4),
        4,
        True,
    )
    assert (whole.first, whole.last, whole.days, whole.partial) == (D(2026, 10, 5), D(2026, 10, 11), 7, False)
    # the period's end cuts the third week: its last day is the period's, not the Sunday after
    assert (cut_end.first, cut_end.last, cut_end.days, cut_end.partial) == (
        D(2026, 10, 12),
        D(2026, 10, 14),
        3,
        True,
    )
    assert after.days == 0 and after.partial
    short = ReportPeriod(D(2026, 10, 1), D(2026, 10, 3)).week(dt.datetime(2026, 9, 28, tzinfo=dt.timezone.utc))
    assert (short.first, short.last, short.days) == (D(2026, 10, 1), D(2026, 10, 3), 3)


def test_a_lifetime_reads_in_its_own_unit():
    """'0.0802 years' is 29 days: a lifetime is printed in days, months or years, as it reads."""
    from tierlens.report import fmt

    for years, shown in (
        (0.0802, "29 days"),
        (1 / 365.25, "1 day"),
        (0.5, "6 months"),
        (1.5, "18 months"),
        (3.44, "3.4 years"),
        (None, fmt.MISSING),
    ):
        assert fmt.lifetime(years) == shown
    # the columns that hold lifetimes use it, and their labels do not name a unit the value may not have
    from tierlens.report.sections import hardware, occupancy

    cols = [
        c for spec in (hardware.SPEC, occupancy.SPEC) for t in spec.tables for c in t.columns if "lifetime" in c.key
    ]
    assert cols and all(c.kind == "lifetime" and "years" not in c.label for c in cols), cols


# --------------------------------------------------------------------------- one period


#: Columns whose value is the time a row is about (the ones the report limits to its period).
TIME_COLUMNS = ("hour", "day", "window_start", "period_start")


def dates_outside(out: Path, first: dt.date, last: dt.date) -> dict[str, list[str]]:
    """CSV files of a report folder with a row about a day outside [first, last], read from the
    files themselves: the check a reader would make."""
    found: dict[str, list[str]] = {}
    for path in sorted(out.glob("*.csv")):
        for row in read_csv(path):
            for key in TIME_COLUMNS:
                value = row.get(key) or ""
                if not re.match(r"\d{4}-\d{2}-\d{2}", value):
                    continue
                when = dt.datetime.fromisoformat(value)
                if when.tzinfo is not None:
                    when = when.astimezone(dt.timezone.utc)
                day = when.date()
                # a week or a whole-run row may start before the first day if it reaches into it
                last_day = row.get("period_last_day") or row.get("last_day") or ""
                if key == "period_start" and last_day and dt.date.fromisoformat(last_day[:10]) >= first:
                    continue
                ends = row.get("period_end") or ""
                if key == "period_start" and ends and dt.date.fromisoformat(ends[:10]) > first:
                    continue
                if not first <= day <= last:
                    found.setdefault(path.name, []).append(f"{key}={value}")
    return found


def test_one_period_for_the_whole_report(tmp_path: Path):
    """Hours of cache traffic before the first job ended and after the last (accesses of jobs that
    started early, or still running) are not in the report: every table, figure and total covers
    the days the jobs ended on, which the page states once."""
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    days = [j[8] for j in JOBS]
    first, last = min(days), max(days)
    early = dt.datetime.combine(first, dt.time(0)) - dt.timedelta(hours=2)
    late = dt.datetime.combine(last, dt.time(0)) + dt.timedelta(days=1, hours=3)
    extra = [(early, "xcache1", 7, 1, 5.0, 50.0, 0.0, 55.0), (late, "xcache2", 9, 9, 90.0, 0.0, 0.0, 90.0)]
    with duckdb.connect(str(warehouse)) as con:
        for hour, server, acc, hits, gbc, gbs, gbb, gbr in extra:
            con.execute(
                "INSERT INTO marts.cache_hourly VALUES (?::TIMESTAMP AT TIME ZONE 'UTC',?,?,?,?,?,?,?,?,?)",
                [hour, server, acc, hits, gbc, gbs, gbb, gbr, hits / acc, gbc / (gbc + gbs + gbb)],
            )
    out = tmp_path / "out"
    result = build_report(warehouse, out)
    assert dates_outside(out, first, last) == {}
    html = result.html_path.read_text(encoding="utf-8")
    assert f"Period: {first} to {last} ({(last - first).days + 1} days)" in html
    # the totals are the period's too: the cache rows of the fixture, without the two outside it
    servers = {r["server_host"]: r for r in read_csv(out / "cache_by_server.csv")}
    assert int(servers["all servers"]["accesses"]) == sum(r[2] for r in CACHE_ROWS)
    assert f(servers["all servers"]["gb_read"]) == pytest.approx(sum(r[7] for r in CACHE_ROWS))
    # the whole-period A/B table ends on the summary's last day
    summary = {r["metric"]: r["value"] for r in read_csv(out / "summary.csv")}
    assert summary["Period covered"] == f"{first}/{last}"
    assert {r["period"] for r in read_csv(out / "ab_overall.csv")} == {f"{first} to {last}"}

    # the check fails on a report whose table covers another period
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cache_hourly.csv").write_text(f"hour,accesses\n{early.isoformat()},7\n{first}T10:00:00,1\n")
    assert dates_outside(broken, first, last) == {"cache_hourly.csv": [f"hour={early.isoformat()}"]}


def test_a_section_table_outside_the_period_is_cut_to_it(tmp_path: Path):
    """A section whose own rows reach outside the period (not read through the marts' views) is
    cut to it too, in its table and in the data of its figure."""
    from tierlens.report import registry
    from tierlens.report.page import Column
    from tierlens.report.period import ReportPeriod
    from tierlens.report.spec import SectionSpec, TableSpec

    days = [j[8] for j in JOBS]
    period = ReportPeriod(min(days), max(days))
    rows = [{"day": min(days) - dt.timedelta(days=1), "n": 1}, {"day": min(days), "n": 2}]
    assert period.outside(rows) == rows[:1]

    def body(wh, s):
        s.table("daily_n", list(rows))

    spec = SectionSpec(
        id="daily_n",
        title="n per day",
        intro="",
        body=body,
        tables=(TableSpec("daily_n", "n per day", (Column("day", "day"), Column("n", "n", "int"))),),
    )
    out = tmp_path / "out"
    build_report(make_warehouse(tmp_path / "w.duckdb"), out, specs=registry.REGISTRY + (spec,))
    assert read_csv(out / "daily_n.csv") == [{"day": str(min(days)), "n": "2"}]


def _many_options(con: duckdb.DuckDBPyConnection, job_class: str, options: list[tuple]) -> None:
    """``options`` (config, evidence, price per core-hour), cheapest first, as rows of the buying guide."""
    con.execute(f"CREATE TABLE IF NOT EXISTS marts.hardware_options ({HARDWARE_OPTIONS_COLUMNS})")
    for rank, (name, evidence, price) in enumerate(options, 1):
        con.execute(
            "INSERT INTO marts.hardware_options (job_class, price_rank, config_name, storage_type, evidence, "
            "jobs_per_node, cache, currency, efficiency, efficiency_low, efficiency_high, price_per_core_hour, "
            "price_per_core_hour_low, price_per_core_hour_high) "
            "VALUES (?, ?, ?, 'hdd', ?, 8, 'none', 'GBP', 0.7, 0.65, 0.75, ?, ?, ?)",
            [job_class, rank, name, evidence, price, price * 0.95, price * 1.05],
        )


def test_a_long_buying_guide_shows_its_cheapest_rows_and_says_where_the_rest_are(tmp_path: Path):
    """24 options of one job class and 3 of another: the page shows each class's 10 cheapest, then
    the cheapest of each configuration not measured here that ranks below them, says how many rows
    it left out, and names the CSV file and the query that have every row; the CSV has them all."""
    analysis = [(f"measured {i:02d}", "measured", 0.010 + 0.001 * i) for i in range(20)]
    analysis += [
        ("Probe NVMe", "probe", 0.040),
        ("Datasheet SSD", "datasheet", 0.041),
        ("Probe NVMe", "probe", 0.042),
        ("Datasheet SSD", "datasheet", 0.043),
    ]
    production = [(f"production {i}", "measured", 0.02 + 0.001 * i) for i in range(3)]
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        _many_options(con, "analysis", analysis)
        _many_options(con, "production", production)
    result = build_report(warehouse, tmp_path / "out")
    page = result.html_path.read_text(encoding="utf-8")
    section = page[page.index('<section id="hardware"') :]
    table = section[section.index("Candidate configurations") : section.index("</table>")]
    shown = [
        re.sub(r"<[^>]+>", "", cells[2]).strip()
        for cells in (
            re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
            for row in re.findall(r'<tr(?![^>]*class="details)[^>]*>(.*?)</tr>', table.split("<tbody>")[1], re.S)
        )
    ]
    # independently: the 10 cheapest of analysis, the two derived configurations' cheapest rows,
    # and production's three
    expected = [a[0] for a in analysis[:10]] + ["Probe NVMe", "Datasheet SSD"] + [p[0] for p in production]
    assert shown == expected
    total = len(analysis) + len(production)
    left_out = total - len(expected)
    line = section[section.index("</table>") :]
    line = re.sub(r"<[^>]+>", "", line[: line.index("</p>")])
    assert f"{len(expected)} of {total} rows shown" in line and f"{left_out} left out" in line, line
    assert "hardware_options.csv" in line and "cheapest_configuration_for_efficiency --param target=0" in line, line
    assert len(read_csv(tmp_path / "out" / "hardware_options.csv")) == total
    # the query the line names does list every row
    from typer.testing import CliRunner

    from tierlens.cli import app

    run = CliRunner().invoke(
        app,
        ["sql", "cheapest_configuration_for_efficiency", "--param", "target=0", "-w", str(warehouse), "--csv"],
    )
    assert run.exit_code == 0, run.output
    assert len(list(csv.DictReader(run.stdout.splitlines()))) == total


# --------------------------------------------------------------------------- site changes, plotted

CHANGE_AT = dt.datetime(2026, 10, 4, tzinfo=dt.timezone.utc)
#: The jobs the change applies to, as the plot and its CSV name them.
NFS_ON_T2 = "storage type nfs on cluster t2"
#: (node, storage type, efficiency before the change, after): the NFS tuning helps the NFS nodes only
NODES = (("wn1", "nfs", 0.60, 0.70), ("wn2", "nfs", 0.62, 0.71), ("wn3", "hdd", 0.85, 0.85), ("wn4", "hdd", 0.84, 0.84))


def _site_jobs() -> list[dict]:
    """Six days of jobs, three on each node every hour, each within its hour."""
    jobs = []
    for hour in range(6 * 24):
        start = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=hour)
        for node, storage, before, after in NODES:
            for k in range(3):
                wall = 1200.0 + 300 * k
                cores = 1 + k % 2
                eff = (after if start >= CHANGE_AT else before) + 0.01 * ((hour + k) % 3 - 1)
                jobs.append(
                    {
                        "cluster": "t2",
                        "node": node,
                        "storage_type": storage,
                        "ab_arm": "A",
                        "job_class": "analysis",
                        "start_time": start + dt.timedelta(minutes=5 * k),
                        "end_time": start + dt.timedelta(minutes=5 * k, seconds=wall),
                        "cpu_seconds": eff * wall * cores,
                        "wall_seconds": wall,
                        "core_wall_seconds": wall * cores,
                        "bytes_read": 2_000_000_000,
                        "bytes_read_remote": None,
                    }
                )
    return jobs


def test_the_before_after_plot_shows_the_changes_scope_and_agrees_with_its_effect(tmp_path: Path):
    """An NFS-only tuning: its effect is measured on the NFS nodes' jobs, so the plotted line is
    theirs (the site's, diluted by the HDD nodes, is faint context), the caption names them, and
    the line's days before and after the change average to the table's before and after."""
    import pyarrow as pa

    from tierlens.analysis.change import ChangeParams, change_effects
    from tierlens.records import SITE_CHANGE

    jobs = _site_jobs()
    record = {f.name: None for f in SITE_CHANGE} | {
        "change_id": "nfs-tuning",
        "changed_at": CHANGE_AT,
        "description": "NFS rsize/wsize 1 MB",
        "category": "filesystem",
        "scope_storage_type": "nfs",
        "cluster": "t2",
    }
    changes = pa.Table.from_pylist([record], schema=SITE_CHANGE)
    mart = change_effects(pa.Table.from_pylist(jobs), changes, ChangeParams(window_days=3, n_resamples=200))
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE SCHEMA marts; CREATE SCHEMA staging")
        con.register("mart", mart)
        con.register("changes", changes)
        con.register("jobs", pa.Table.from_pylist(jobs))
        con.execute("CREATE TABLE marts.change_effects AS SELECT * FROM mart")
        con.execute("CREATE TABLE staging.stg_site_change AS SELECT * FROM changes")
        con.execute("""CREATE TABLE marts.job_efficiency AS SELECT *, cpu_seconds / core_wall_seconds AS efficiency,
                       CAST(timezone('UTC', end_time) AS DATE) AS "day" FROM jobs""")
    result = build_report(warehouse, tmp_path / "out")
    assert "changes" in result.sections and "changes" not in result.no_data
    daily = read_csv(tmp_path / "out" / "efficiency_daily.csv")
    plotted = {(r["population"], r["day"]): r for r in daily}
    # independently, from the jobs: each day's NFS jobs and all jobs
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for j in jobs:
        day = j["end_time"].date().isoformat()
        for population in {"site", NFS_ON_T2} if j["storage_type"] == "nfs" else {"site"}:
            sums[(population, day)][0] += j["cpu_seconds"]
            sums[(population, day)][1] += j["core_wall_seconds"]
    assert set(plotted) == set(sums)
    for key, (cpu, core_wall) in sums.items():
        assert float(plotted[key]["efficiency"]) == pytest.approx(cpu / core_wall, rel=1e-9), key

    def window(population: str, after: bool) -> float:
        rows = [r for (p, d), r in plotted.items() if p == population and (d >= "2026-10-04") == after]
        return sum(float(r["efficiency"]) * float(r["core_hours"]) for r in rows) / sum(
            float(r["core_hours"]) for r in rows
        )

    (row,) = read_csv(tmp_path / "out" / "change_effects.csv")
    for after, key in ((False, "efficiency_scope_before"), (True, "efficiency_scope_after")):
        # the plotted line's days on each side are the table's before and after; the site's are not
        assert window(NFS_ON_T2, after) == pytest.approx(float(row[key]), rel=1e-9), key
        assert abs(window("site", after) - float(row[key])) > 0.05, key
    html = result.html_path.read_text(encoding="utf-8")
    section = html[html.index('<section id="changes"') :]
    caption = re.sub(r"\s+", " ", section[section.index("<figcaption>") : section.index("</figcaption>")])
    assert f"{NFS_ON_T2} (nfs-tuning)" in caption and "whole site, for context" in caption, caption


# --------------------------------------------------------------------------- what-if, a long table


def test_a_long_what_if_table_shows_each_classes_highest_throughput_and_says_where_the_rest_are(tmp_path: Path):
    """120 what-if configurations of two job classes: the page shows each class's 10 with the most
    jobs per node-hour, best first, says how many it left out and names the CSV file with all."""
    types = {"hdd": 0.55, "raid0": 0.7, "ssd": 0.8, "nvme": 0.9, "nfs": 0.5}
    caches = {"none": 0.0, "lru": 0.03, "slac2": 0.05}
    grid = []
    for job_class, hours_per_job in (("analysis", 2.0), ("production", 5.0)):
        for st, base in types.items():
            for n in (1, 4, 8, 16):
                for cache, gain in caches.items():
                    eff = min(0.99, base + gain) * (1 - 0.02 * n)
                    grid.append((job_class, st, float(n), cache, eff, eff - 0.05, eff + 0.05, n * eff / hours_per_job))
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute("""CREATE TABLE marts.efficiency_measured_vs_predicted AS SELECT * FROM (VALUES
            ('analysis', 'hdd', 'A', 100, 0.55, 0.56, 0.53, 0.59, 0.57, 0.02, true, 7.5, 'v1'))
            AS t(job_class, storage_type, ab_arm, measured_jobs, measured_efficiency, predicted_efficiency,
                 efficiency_low, efficiency_high, loo_predicted_efficiency, loo_prediction_error,
                 measured_within_interval, mean_concurrent_jobs, model_version)""")
        con.execute("""CREATE TABLE marts.efficiency_what_if (job_class VARCHAR, storage_type VARCHAR,
            jobs_per_node DOUBLE, cache VARCHAR, predicted_efficiency DOUBLE, efficiency_low DOUBLE,
            efficiency_high DOUBLE, jobs_per_node_hour DOUBLE, extrapolated BOOLEAN)""")
        con.executemany("INSERT INTO marts.efficiency_what_if VALUES (?, ?, ?, ?, ?, ?, ?, ?, false)", grid)
    result = build_report(warehouse, tmp_path / "out")
    assert "prediction" in result.sections and "prediction" not in result.no_data
    page = result.html_path.read_text(encoding="utf-8")
    section = page[page.index('<section id="prediction"') :]
    start = section.index("What if:")
    table = section[start : section.index("</table>", start)]
    shown = [
        tuple(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)[:4])
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    ]
    expected = []
    for job_class in ("analysis", "production"):
        best = sorted((g for g in grid if g[0] == job_class), key=lambda g: -g[7])[:10]
        expected += [(g[0], g[1], f"{g[2]:g}", g[3]) for g in best]
    assert [(c, st, n.split(".")[0], cache) for c, st, n, cache in shown] == expected
    line = section[section.index("</table>", start) :]
    line = re.sub(r"<[^>]+>", "", line[: line.index("</p>")])
    assert f"20 of {len(grid)} rows shown" in line and f"{len(grid) - 20} left out" in line, line
    assert "efficiency_what_if.csv" in line, line
    assert len(read_csv(tmp_path / "out" / "efficiency_what_if.csv")) == len(grid)


def test_the_before_after_plot_needs_only_the_marts(tmp_path: Path):
    """The published warehouse's staging views name the catalog dbt built them in, which the
    report's connection does not have: the scope comes from the mart's own row (its cluster and
    scope), so the plot is the same without stg_site_change. A scope the mart does not word as the
    analysis does is read on the site's line, and the caption says so."""
    test_the_before_after_plot_shows_the_changes_scope_and_agrees_with_its_effect(tmp_path)
    first = read_csv(tmp_path / "out" / "efficiency_daily.csv")
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DROP TABLE staging.stg_site_change")
    build_report(warehouse, tmp_path / "again")
    assert read_csv(tmp_path / "again" / "efficiency_daily.csv") == first
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE marts.change_effects SET scope = 'the NFS filer'")
    result = build_report(warehouse, tmp_path / "unread")
    assert {r["population"] for r in read_csv(tmp_path / "unread" / "efficiency_daily.csv")} == {"site"}
    html = result.html_path.read_text(encoding="utf-8")
    section = html[html.index('<section id="changes"') :]
    caption = re.sub(
        r"\s+", " ", htmllib.unescape(section[section.index("<figcaption>") : section.index("</figcaption>")])
    )
    assert "The scope of nfs-tuning could not be read" in caption, caption
    assert "the scope of every change" not in caption, caption


@pytest.mark.parametrize(
    "scope",
    [
        {"scope_nodes": ["wn01", "wn02.t2.example.org"], "scope_storage_type": None, "scope_ab_arm": None},
        {"scope_nodes": None, "scope_storage_type": "nfs", "scope_ab_arm": None},
        {"scope_nodes": None, "scope_storage_type": None, "scope_ab_arm": "B"},
        {"scope_nodes": None, "scope_storage_type": None, "scope_ab_arm": None},
    ],
)
def test_a_scope_read_back_from_the_marts_words_is_the_recorded_one(scope):
    from tierlens.analysis.change import scope_from_text, scope_text

    assert scope_from_text(scope_text({"cluster": None, **scope})) == scope


def test_a_staging_view_of_the_published_warehouse_is_read(tmp_path: Path):
    """dbt's staging views name the catalog they were built in (``warehouse.main.raw_...``, the
    file's stem); the report attaches the file under that name, so they read as they do in
    `tierlens sql` (the buying guide's check of types left out is a staging view)."""
    from tierlens.report.period import period_connection

    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE main.raw_site_change AS SELECT 'c1' AS change_id, ' nfs ' AS scope_storage_type")
        con.execute("CREATE SCHEMA staging")
        con.execute(
            "CREATE VIEW staging.stg_site_change AS SELECT change_id, trim(scope_storage_type) AS scope_storage_type "
            "FROM warehouse.main.raw_site_change"
        )
    con, _ = period_connection(path)
    with con:
        assert con.execute("SELECT * FROM staging.stg_site_change").fetchall() == [("c1", "nfs")]


def test_a_marts_identifier_reads_as_words_and_a_day_never_breaks():
    """'job_class' in a cell is the mart's spelling, not the reader's; a day in a narrow column
    broke as '2026-' over '10-01'. The CSV keeps the mart's values."""
    from tierlens.report.page import Column, Table

    grouped = Column("grouping", "grouped by", "words")
    day = Column("day", "day")
    row = {"grouping": "storage_type", "day": D(2026, 10, 1)}
    assert grouped.cell(row) == "storage type" and "num" not in grouped.css_class(row)
    assert "date" in day.css_class(row) and "date" not in grouped.css_class(row)
    assert "storage_type" in Table("t", "t", [grouped, day], [row]).csv_text()
