"""The warehouse after the ingest DAG's loads and around the transform DAG's dbt build: rows per raw
table, what landed while a transform held it, the run's record and retention, the published snapshot."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from .settings import Lookup, dbt_target, lake_path, setting


def counts(warehouse: Path) -> dict[str, int]:
    from ..warehouse import Warehouse

    with Warehouse(warehouse, read_only=True) as wh:
        return wh.counts()


def publish(warehouse: Path, lookup: Lookup = None) -> dict:
    """Rows per raw table; with a Spark dbt target, the interval's changes are appended to the lake first. While a
    transform holds the warehouse: the number of landed files waiting instead (never waits)."""
    from ..warehouse.landing import is_lock_error, landed_files

    if dbt_target(lookup) != "duckdb":
        # Only what the interval changed; the first publish (no lake yet) exports it in full.
        from ..warehouse.lake import append_lake

        append_lake(warehouse, lake_path(lookup))
    try:
        return counts(warehouse)
    except Exception as e:
        if not is_lock_error(e):
            raise
        return {"warehouse_busy": True, "landed_files": len(landed_files(warehouse))}


def load_landed(warehouse: Path) -> dict:
    """Before a transform: load what ingests landed while the warehouse was busy."""
    from ..warehouse.landing import drain

    files, rows = drain(Path(warehouse)) if Path(warehouse).exists() else (0, 0)
    return {"files": files, "rows_loaded": rows}


def begin_transform(warehouse: Path, lookup: Lookup = None) -> dict:
    """The start of a transform run as the warehouse's history will record it (what raw holds
    that the last successful run has not seen, and whether every test is due: setting
    all_tests_every_hours)."""
    from ..transform import _start

    every_hours = float(setting("all_tests_every_hours", lookup) or 0)
    return asdict(_start(Path(warehouse), "hourly", every_hours))


def finish_transform(warehouse: Path, begun: dict, lookup: Lookup = None) -> dict:
    """After every model and test of the run passed: record the run, apply raw retention
    (setting raw_retention_months), publish the snapshot readers open (not for a Spark target:
    the DuckDB warehouse did not change)."""
    from ..transform import TransformResult, _finish
    from ..warehouse.history import RunRecord

    record = _finish(
        Path(warehouse),
        RunRecord(**begun),
        [TransformResult(success=True)],
        int(setting("raw_retention_months", lookup) or 0),
    )
    out = {"run": asdict(record), "published": None}
    if dbt_target(lookup) == "duckdb":
        from ..warehouse.publish import publish_with_stats

        path, stats = publish_with_stats(Path(warehouse))
        out |= {"published": str(path), "publish": asdict(stats)}
    return out


def publish_snapshot(warehouse: Path, lookup: Lookup = None) -> str | None:
    """After a transform: bring the snapshot readers open up to date (None: the dbt target
    is not DuckDB, so the warehouse did not change)."""
    if dbt_target(lookup) != "duckdb":
        return None
    from ..warehouse.publish import publish as publish_warehouse

    return str(publish_warehouse(Path(warehouse)))
