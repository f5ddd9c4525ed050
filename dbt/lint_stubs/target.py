"""Lint-time stand-in for dbt's `target` (sqlfluff's jinja templater): the default DuckDB target."""

type = "duckdb"  # noqa: A001 - dbt's attribute name
name = "duckdb"
