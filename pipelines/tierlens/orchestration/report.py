"""The report DAG's task: the report of an interval from the published snapshot."""

from __future__ import annotations

from pathlib import Path


def build_report(warehouse: Path, out_dir: Path) -> dict:
    """The report from the published snapshot (the working file when none is published yet)."""
    from ..report import build_report as build
    from ..warehouse.publish import reader_path

    r = build(reader_path(warehouse), Path(out_dir))
    return {"html": str(r.html_path), "csv": [str(p) for p in r.csv_paths], "no_data": list(r.no_data)}
