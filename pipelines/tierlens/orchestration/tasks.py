"""Every function a DAG task calls after the loads, by the module of its concern; each takes plain
values (paths, datetimes, lists) and returns a small dict Airflow can keep as XCom, and none
imports Airflow, so each can be run and tested by hand. The loads themselves are the sources'
interval loads (ingest/, through sources/registry.py).

    publish    the warehouse after the loads and around the transform (landed files, run record,
               retention, the published snapshot)
    alerts     dbt's run results and the completeness alerts
    report     the report of an interval
    simulate   cache replays and efficiency predictions

The names are gathered here for the scripts and tests that reach for them in one place.
"""

from __future__ import annotations

from .alerts import (  # noqa: F401
    ALERT_FORMAT_VERSION,
    CONDITIONS_FORMAT_VERSION,
    JUDGED,
    PASSED,
    RunResultsError,
    WarnedTest,
    build_outcome,
    conditions_of,
    failing_rows,
    judged_tests,
    new_conditions,
    open_conditions_file,
    record_alert,
    test_name,
    warned_tests,
)
from .publish import begin_transform, counts, finish_transform, load_landed, publish, publish_snapshot  # noqa: F401
from .report import build_report  # noqa: F401
from .simulate import MartsMissing, predict_efficiency, simulate_caches  # noqa: F401
