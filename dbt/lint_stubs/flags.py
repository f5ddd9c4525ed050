"""Lint-time stand-in for dbt's `flags` (sqlfluff's jinja templater): a --full-refresh, so the
incremental models render their full-history SQL without a warehouse to read their window from."""

FULL_REFRESH = True
