"""The DuckDB warehouse (raw tables of the canonical records) and its Parquet lake export.

from tierlens.warehouse import Warehouse, export_lake

with Warehouse(paths().warehouse) as wh:
    result = wh.load(batch)          # one transaction; idempotent per batch content
    export_lake(wh, paths().lake)    # Parquet, hive-partitioned by UTC day and site, swapped in
"""

import duckdb

from tierlens.warehouse.core import LoadResult, StoredReject, Warehouse
from tierlens.warehouse.lake import compact_lake, export_lake

#: What a failed query on the warehouse raises. DuckDB's own classes normally; but in a
#: long-lived process its errors have been seen arriving as a bare RuntimeError carrying DuckDB's
#: JSON error text (in the full test suite, after the Airflow tests), so that counts too.
QUERY_ERRORS = (duckdb.Error, RuntimeError)

__all__ = ["QUERY_ERRORS", "LoadResult", "StoredReject", "Warehouse", "compact_lake", "export_lake"]
