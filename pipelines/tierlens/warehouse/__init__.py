"""The DuckDB warehouse (raw tables of the canonical records) and its Parquet lake export.

    from tierlens.warehouse import Warehouse, export_lake

    with Warehouse(paths().warehouse) as wh:
        result = wh.load(batch)          # one transaction; idempotent per batch content
        export_lake(wh, paths().lake)    # Parquet, hive-partitioned by UTC day, swapped in
"""

from tierlens.warehouse.core import LoadResult, StoredReject, Warehouse
from tierlens.warehouse.lake import export_lake

__all__ = ["LoadResult", "StoredReject", "Warehouse", "export_lake"]
