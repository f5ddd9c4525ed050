"""The tierlens site report: one self-contained HTML page plus CSV files, built from the marts.

    from tierlens.report import build_report
    result = build_report(Path("warehouse.duckdb"), Path("reports/2024-06-01"))
    result.html_path      # reports/2024-06-01/report.html (opens offline, no external URL)
    result.csv_paths      # one CSV per table shown and per figure's data, full precision
    result.sections       # ["summary", "efficiency", "ab", "cache", "price_performance"] (SECTION_IDS),
                          # with the analytics, prediction, site-operations and hardware sections
                          # when the warehouse has their marts
    result.no_data        # the sections whose mart was missing, empty or unreadable

Each section is one module of ``sections/`` declaring a ``SectionSpec`` (spec.py); ``registry.py``
lists them in page order. See README.md beside this file.
"""

from .build import CSV_NAMES, HTML_NAME, SECTION_IDS, ReportResult, build_report

__all__ = ["CSV_NAMES", "HTML_NAME", "SECTION_IDS", "ReportResult", "build_report"]
