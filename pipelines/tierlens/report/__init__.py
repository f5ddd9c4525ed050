"""The tierlens site report: one self-contained HTML page plus CSV files, built from the marts.

    from tierlens.report import build_report
    result = build_report(Path("warehouse.duckdb"), Path("reports/2024-06-01"))
    result.html_path      # reports/2024-06-01/report.html (opens offline, no external URL)
    result.csv_paths      # one CSV per table shown and per figure's data, full precision
    result.sections       # ["summary", "efficiency", "ab", "cache", "price_performance"], then
                          # "ab_uncertainty", "occupancy", "fairness", "popularity" when the
                          # warehouse has their marts (ANALYSIS_SECTION_IDS)
    result.no_data        # the sections whose mart was missing, empty or unreadable
"""

from .build import CSV_NAMES, HTML_NAME, SECTION_IDS, ReportResult, build_report

__all__ = ["CSV_NAMES", "HTML_NAME", "SECTION_IDS", "ReportResult", "build_report"]
