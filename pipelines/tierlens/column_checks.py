"""The dbt tests a build between the daily ones leaves out (the column checks), by name.

Apart from transform.py (which imports duckdb) so that the transform DAG file, parsed by every task
process of a run, can tell a model's column checks from its other tests without that import.
"""

from __future__ import annotations

#: dbt's generic column checks: a column's nulls, range and vocabulary. Five in six of the
#: project's tests, and, at one query each, most of an hourly build's time at a year of history
#: (docs/site-admin.md). They run when every test is due (transform.scope_of_tests) and at the end of
#: every back-fill and full refresh. The others run every hour: unique keys, rows conserved, the
#: completeness thresholds and the cross-model equalities guard the incremental state itself.
COLUMN_CHECKS = ("not_null", "accepted_range", "accepted_values")


def column_checks_left_out() -> list[str]:
    """dbt arguments that leave the column checks out of a build."""
    return ["--exclude", *(f"test_name:{name}" for name in COLUMN_CHECKS)]


def is_column_check(test_unique_id: str) -> bool:
    """Whether a dbt test (``test.<package>.<name>.<hash>``) is one of the column checks: dbt
    names a generic test after the test it instantiates unless the YAML gives it a name."""
    parts = test_unique_id.split(".")
    return len(parts) >= 3 and parts[2].startswith(tuple(f"{name}_" for name in COLUMN_CHECKS))
