"""The report's analytics sections on hand-made marts: shown when their marts exist, numbers in
the CSV files equal to the marts', and a comparison without enough data flagged as such."""

from __future__ import annotations

import csv
import datetime as dt
import html as htmllib
import re
import statistics
from pathlib import Path

import duckdb
import pytest

from support.report_warehouse import JOBS, make_warehouse
from tierlens.report import SECTION_IDS, build_report
from tierlens.report.build import ANALYSIS_CSV_NAMES, ANALYSIS_SECTION_IDS

D = dt.date


def _add_analysis_marts(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("""CREATE TABLE marts.ab_uncertainty AS SELECT * FROM (VALUES
            ('all', 'site', 'all jobs', 'all', DATE '2024-05-06', DATE '2024-05-09', 400, 420, 300.0, 330.0,
             400.0, 410.0, 400.0, 410.0, 0.75, 0.805, 0.75, 0.805, 0.055, 0.03, 0.08, 0.002,
             0.055, 0.03, 0.08, 'hour', 72, 70, true, NULL, 'B higher'),
            ('all', 'storage_type', 'ssd', 'all', DATE '2024-05-06', DATE '2024-05-09', 12, 15, 9.0, 12.0,
             12.0, 15.0, 12.0, 15.0, 0.75, 0.8, 0.75, 0.8, 0.05, -0.1, 0.2, 0.4,
             0.05, -0.1, 0.2, 'hour', 10, 8, false, 'arm A has 12 jobs (< 30)', 'insufficient data'),
            ('all', 'site', 'all jobs', 'day', DATE '2024-05-06', DATE '2024-05-07', 130, 140, 100.0, 110.0,
             130.0, 140.0, 130.0, 140.0, 0.769, 0.786, 0.769, 0.786, 0.017, -0.01, 0.04, 0.2,
             0.017, -0.01, 0.04, 'hour', 24, 24, true, NULL, 'no significant difference'),
            ('high_hit_ratio', 'site', 'all jobs', 'all', DATE '2024-05-07', DATE '2024-05-08', 20, 22, 5.0, 8.0,
             24.0, 22.0, 24.0, 22.0, 0.21, 0.36, 0.21, 0.36, 0.15, 0.1, 0.2, 0.002,
             0.15, 0.1, 0.2, 'hour', 12, 12, false, 'arm A has 20 jobs (< 30)', 'insufficient data')
        ) AS t(subset, grouping, group_value, period_grain, period_start, period_end, jobs_a, jobs_b,
               cpu_hours_a, cpu_hours_b, wall_hours_a, wall_hours_b, core_wall_hours_a, core_wall_hours_b,
               efficiency_a, efficiency_b, cpu_per_wall_a, cpu_per_wall_b, efficiency_difference,
               efficiency_ci_low, efficiency_ci_high, efficiency_p_value, cpu_per_wall_difference,
               cpu_per_wall_ci_low, cpu_per_wall_ci_high, block, blocks,
               paired_blocks, enough_data, warning, conclusion)""")
        # efficiency, throughput and jobs per node-hour: what the mart derives from the counts
        con.execute("""CREATE TABLE marts.occupancy_efficiency AS SELECT storage_type, scope, nodes, node_hours,
               share_of_node_hours, jobs_ended, cpu_hours, allocated_core_hours, mean_occupancy,
               cpu_hours / allocated_core_hours AS efficiency, cpu_hours / node_hours AS throughput,
               jobs_ended / node_hours AS jobs_per_node_hour FROM (VALUES
            ('raid0', 'all', 1, 15, 1.0, 100, 80.5, 91.0, 0.7),
            ('raid0', 'fully_occupied', 1, 10, 0.6667, 80, 70.0, 80.0, 1.0)
        ) AS t(storage_type, scope, nodes, node_hours, share_of_node_hours, jobs_ended, cpu_hours,
               allocated_core_hours, mean_occupancy)""")
        con.execute("""CREATE TABLE marts.client_fairness AS SELECT * FROM (VALUES
            ('lustre', TIMESTAMPTZ '2024-05-06 10:00:00+00', 60, 4, 4, 3.8, 9.5, 1.118, 0.1177, 0.158,
             0.158, 8.0, 11.0, 8.3, 10.7, 1.375, 1.375, 0.98634),
            ('lustre', TIMESTAMPTZ '2024-05-06 11:00:00+00', 60, 4, 4, 3.8, 9.5, 3.0, 0.3158, 0.4,
             0.4, 5.0, 14.0, 6.0, 13.0, 2.8, 2.8, 0.90932),
            ('lustre', TIMESTAMPTZ '2024-05-06 12:00:00+00', 60, 2, 2, 1.9, 9.5, 0.5, 0.0526, 0.05,
             0.05, 9.0, 10.0, 9.1, 9.9, 1.111, 1.111, 0.99723)
        ) AS t(server_host, window_start, window_minutes, clients, accesses, gb_read, mean_bandwidth_mb_s,
               stddev_bandwidth_mb_s, bandwidth_cv, spread_above_mean, spread_below_mean,
               min_bandwidth_mb_s, max_bandwidth_mb_s, p10_bandwidth_mb_s, p90_bandwidth_mb_s,
               completion_time_ratio, bandwidth_ratio, jain_index)""")
        con.execute("""CREATE TABLE marts.file_popularity AS SELECT * FROM (VALUES
            ('/f1', 4000000000, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 5, 8000000000, 0.6667, 2.0, 1,
             TIMESTAMPTZ '2024-05-08 11:00:00+00', TIMESTAMPTZ '2024-05-08 12:00:00+00'),
            ('/f2', 1000000000, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 3, 5, 300000000, 0.1, 0.3, 2,
             TIMESTAMPTZ '2024-05-08 10:00:00+00', TIMESTAMPTZ '2024-05-08 12:00:00+00')
        ) AS t(file_lfn, file_size_bytes, accesses_p01, accesses_p02, accesses_p03, accesses_p04,
               accesses_p05, accesses_p06, accesses_p07, accesses_p08, accesses_p09, accesses_p10,
               accesses_10_periods, reads_recent, recent_days, bytes_read_recent, mean_read_fraction,
               score, popularity_rank, last_access, reference_time)""")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analysis_report")
    warehouse = make_warehouse(tmp / "w.duckdb")
    _add_analysis_marts(warehouse)
    return build_report(warehouse, tmp / "out")


def test_analysis_sections_follow_the_others(report):
    assert report.sections == list(SECTION_IDS) + list(ANALYSIS_SECTION_IDS)
    assert report.no_data == []
    html = report.html_path.read_text(encoding="utf-8")
    for title in (
        "A/B difference with confidence intervals",
        "Efficiency and throughput at full occupancy",
        "Client fairness",
        "File popularity",
    ):
        assert title in html
    assert html.count("<img") == 4 + 4  # the four original figures + one per analytics section
    assert {p.name for p in report.csv_paths} >= set(ANALYSIS_CSV_NAMES) - {"storage_full_occupancy_endurance.csv"}


def test_insufficient_data_is_flagged_with_its_reason(report):
    html = report.html_path.read_text(encoding="utf-8")
    assert 'class="flagged"><td>ssd</td>' in html
    assert "arm A has 12 jobs (&lt; 30)" in html
    rows = {r["group_value"]: r for r in _csv(report.html_path.parent / "ab_uncertainty_overall.csv")}
    assert rows["ssd"]["conclusion"] == "insufficient data"
    assert rows["all jobs"]["conclusion"] == "B higher"
    assert float(rows["all jobs"]["efficiency_ci_low"]) == pytest.approx(0.03)
    high = _csv(report.html_path.parent / "ab_uncertainty_high_hit.csv")
    assert float(high[0]["cpu_per_wall_b"]) == pytest.approx(0.36)


def test_occupancy_fairness_popularity_numbers(report):
    out = report.html_path.parent
    occ = {r["scope"]: r for r in _csv(out / "occupancy_efficiency.csv")}
    # the mart's inputs (fixture above): (jobs ended, node hours, CPU hours, allocated core hours)
    inputs = {"all": (100, 15, 80.5, 91.0), "fully_occupied": (80, 10, 70.0, 80.0)}
    assert set(occ) == set(inputs)
    for scope, (_jobs, node_hours, cpu, allocated) in inputs.items():
        assert float(occ[scope]["efficiency"]) == pytest.approx(cpu / allocated, abs=5e-5), scope
        assert float(occ[scope]["throughput"]) == pytest.approx(cpu / node_hours, abs=5e-3), scope
    # three windows of one server: the median and the worst of their Jain's indices
    jain = [0.98634, 0.90932, 0.99723]
    (server,) = _csv(out / "client_fairness_by_server.csv")
    assert int(server["windows"]) == len(jain)
    assert float(server["median_jain_index"]) == pytest.approx(statistics.median(jain), abs=5e-4)
    assert float(server["worst_jain_index"]) == pytest.approx(min(jain), abs=5e-4)
    top = _csv(out / "file_popularity_top.csv")
    assert [r["file_lfn"] for r in top] == ["/f1", "/f2"]


def test_without_analysis_marts_the_sections_are_not_shown(tmp_path):
    result = build_report(make_warehouse(tmp_path / "w.duckdb"), tmp_path / "out")
    assert result.sections == list(SECTION_IDS)


def test_a_missing_analysis_mart_says_no_data(tmp_path):
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    _add_analysis_marts(warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DROP TABLE marts.client_fairness")
    result = build_report(warehouse, tmp_path / "out")
    assert result.no_data == ["fairness"]
    assert not (tmp_path / "out" / "client_fairness_by_server.csv").exists()


def _fact_labels(html: str, section: str) -> list[str]:
    part = html[html.index(f'id="{section}"') :]
    part = part[: part.index("</section>")]
    return [htmllib.unescape(m) for m in re.findall(r"<dt>([^<]*)</dt>", part)]


def test_the_recent_window_is_named_by_the_days_the_report_covers(tmp_path):
    """file_popularity counts the reads of its 5-day window; over a report of 3 days those are
    3 days' reads, and the section must not say "the last 5 days"."""
    warehouse = make_warehouse(tmp_path / "w.duckdb")
    _add_analysis_marts(warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("""DELETE FROM marts.job_efficiency WHERE "day" > DATE '2024-05-08'""")
    days = sorted({j[-1] for j in JOBS if j[-1] <= dt.date(2024, 5, 8)})
    covered = (days[-1] - days[0]).days + 1
    assert covered == 3
    result = build_report(warehouse, tmp_path / "out")
    labels = _fact_labels(result.html_path.read_text(encoding="utf-8"), "popularity")
    (files,) = [label for label in labels if label.startswith("Files read")]
    assert f"last {covered} days" in files and "5-day window" in files, files
    assert "last 5 days" not in files, files
    # a period at least as long as the window keeps the window's own name
    long = make_warehouse(tmp_path / "long.duckdb")
    _add_analysis_marts(long)
    assert (max(j[-1] for j in JOBS) - min(j[-1] for j in JOBS)).days + 1 >= 5
    result = build_report(long, tmp_path / "long")
    labels = _fact_labels(result.html_path.read_text(encoding="utf-8"), "popularity")
    assert "Files read in the last 5 days" in labels, labels
