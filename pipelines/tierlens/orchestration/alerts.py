"""What a dbt build said, as the transform DAG's tasks read it (its run_results.json), and the alerts
it raises: the conditions its warning tests found, each alerted once, written where a site manager
sees them without the Airflow UI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .airflow_glue import NODE_NOT_PASSED, NODE_PASSED, NODE_SKIPPED

ALERT_FORMAT_VERSION = 2  # of the alert files record_alert writes (2: the conditions it alerts for)
CONDITIONS_FORMAT_VERSION = 1  # of the file of open conditions (open_conditions_file)


@dataclass(frozen=True)
class WarnedTest:
    """A dbt test that ended with status 'warn': its node, the rows it found, dbt's message, and
    the SQL that selects those rows (dbt's compiled test) for naming the conditions it found."""

    unique_id: str
    failures: int | None
    message: str
    compiled_sql: str = ""
    #: the rows found, as "<day> <subject>" (filled in by failing_rows when the warehouse answers)
    rows: tuple[str, ...] = ()


class RunResultsError(ValueError):
    """A dbt run_results.json that cannot be read; the message names the file and the field."""


#: dbt statuses of a test that ran to a verdict (an 'error' or 'skipped' test judged nothing)
JUDGED = frozenset({"pass", "warn", "fail"})


def _results(run_results_file: Path) -> list:
    path = Path(run_results_file)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunResultsError(f"{path}: line {e.lineno}, column {e.colno}: not JSON ({e.msg})") from e
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise RunResultsError(f"{path}: field 'results': expected a list, got {type(results).__name__}")
    return results


def warned_tests(run_results_file: Path) -> list[WarnedTest]:
    """The tests one dbt invocation reported with status 'warn' (its target/run_results.json),
    in dbt's order: what a DAG run must mark. Errors and failures are not warnings: they fail
    their task instead."""
    path = Path(run_results_file)
    return [
        _warned_test(path, i, r)
        for i, r in enumerate(_results(path))
        if isinstance(r, dict) and r.get("status") == "warn"
    ]


def judged_tests(run_results_file: Path) -> list[str]:
    """The tests of one dbt invocation that ran to a verdict (pass, warn or fail): only their
    conditions can be said to have cleared."""
    return [
        r["unique_id"]
        for r in _results(Path(run_results_file))
        if isinstance(r, dict) and r.get("status") in JUDGED and str(r.get("unique_id", "")).startswith("test.")
    ]


#: dbt statuses a node or a test passed with, as the watching tasks read them ('warn' passes: the
#: completeness alert marks it)
PASSED = frozenset({"success", "pass", "warn"})


def build_outcome(run_results_file: Path, tests_per_model: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Each model's and seed's verdict in one dbt build (its target/run_results.json): passed when
    the node and every test the build was to run on it (``tests_per_model``, as the producer
    expects them) passed or warned; skipped when dbt skipped the node (an input failed); not passed
    otherwise, a test without a verdict included. Nodes the build did not report are left out.
    The same verdict the producer's per-node XComs give, in one value: the watching tasks read it
    once per run, not two XComs per model."""
    statuses = {
        r["unique_id"]: r.get("status")
        for r in _results(Path(run_results_file))
        if isinstance(r, dict) and isinstance(r.get("unique_id"), str)
    }
    outcome: dict[str, str] = {}
    for unique_id, status in statuses.items():
        if not unique_id.startswith(("model.", "seed.")):
            continue
        if status == "skipped":
            outcome[unique_id] = NODE_SKIPPED
        elif status in PASSED and all(statuses.get(t) in PASSED for t in tests_per_model.get(unique_id, ())):
            outcome[unique_id] = NODE_PASSED
        else:
            outcome[unique_id] = NODE_NOT_PASSED
    return outcome


def _warned_test(path: Path, index: int, result: dict) -> WarnedTest:
    unique_id, failures = result.get("unique_id"), result.get("failures")
    if not isinstance(unique_id, str) or not unique_id:
        raise RunResultsError(f"{path}: results[{index}].unique_id: expected a node id, got {unique_id!r}")
    if failures is not None and (isinstance(failures, bool) or not isinstance(failures, int)):
        raise RunResultsError(f"{path}: results[{index}].failures ({unique_id}): expected a count, got {failures!r}")
    return WarnedTest(unique_id, failures, str(result.get("message") or ""), str(result.get("compiled_code") or ""))


def failing_rows(warehouse: Path, warned: list[WarnedTest], attempts: int = 10) -> tuple[list[WarnedTest], str | None]:
    """Each warned test with the rows it found ("<day> <subject>"), from its compiled SQL run
    read-only on the DuckDB warehouse the build wrote. When the warehouse cannot be read (an
    ingest holding it past the attempts), the tests come back as they were with the reason: each
    then counts as one condition."""
    import time

    import duckdb

    if not warned:
        return warned, None
    for attempt in range(attempts):
        try:
            con = duckdb.connect(str(warehouse), read_only=True)
            break
        except duckdb.Error as e:
            if attempt == attempts - 1:
                return warned, f"{warehouse}: {e}"
            time.sleep(2)  # an ingest's load holds the file for seconds
    out = []
    try:
        for w in warned:
            if not w.compiled_sql:
                out.append(w)
                continue
            try:
                cur = con.execute(f"select * from ({w.compiled_sql}) as found")
            except duckdb.Error as e:
                return warned, f"{w.unique_id}: {e}"
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
            out.append(
                WarnedTest(
                    w.unique_id,
                    w.failures,
                    w.message,
                    w.compiled_sql,
                    tuple(sorted(f"{r.get('day')} {r.get('subject', '')}".strip() for r in rows)),
                )
            )
    finally:
        con.close()
    return out, None


def test_name(unique_id: str) -> str:
    """A dbt test's name from its node id (test.<project>.<name>[.<hash>]): the hash follows the
    test's arguments, so a changed threshold keeps the name and its conditions."""
    parts = unique_id.split(".")
    return parts[2] if len(parts) >= 3 and parts[0] == "test" else unique_id


def conditions_of(warned: list[WarnedTest]) -> dict[str, str]:
    """condition -> its test's name: one per row a test found (test, day, subject), or the test
    itself when its rows are not known."""
    out: dict[str, str] = {}
    for w in warned:
        name = test_name(w.unique_id)
        for key in [f"{name} | {row}" for row in w.rows] or [name]:
            out[key] = name
    return out


def open_conditions_file(alerts_dir: Path, dag_id: str) -> Path:
    return Path(alerts_dir) / f"{dag_id}.open-conditions.json"


def _write_atomic(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    os.replace(tmp, path)


def new_conditions(
    alerts_dir: Path, dag_id: str, run_id: str, warned: list[WarnedTest], judged: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Remember which conditions were alerted, so that each is alerted once: returns (new, still
    open). A condition of a test that ran to a verdict (``judged``) and no longer found it is
    forgotten, so if it comes back it is alerted again; one of a test that did not run (a
    partial selection, a build that stopped) stays remembered."""
    path = open_conditions_file(alerts_dir, dag_id)
    known: dict[str, dict] = {}
    if path.exists():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {e.lineno}, column {e.colno}: not JSON ({e.msg})") from e
        if not isinstance(doc, dict) or doc.get("format_version") != CONDITIONS_FORMAT_VERSION:
            raise ValueError(
                f"{path}: field 'format_version': expected {CONDITIONS_FORMAT_VERSION}, got "
                f"{doc.get('format_version') if isinstance(doc, dict) else doc!r}"
            )
        known = doc.get("open") or {}
    now = conditions_of(warned)
    judged = {test_name(t) for t in judged} | set(now.values())
    kept = {k: v for k, v in known.items() if k in now or v.get("test") not in judged}
    new = [k for k in now if k not in kept]
    for k in new:
        kept[k] = {
            "test": now[k],
            "first_alerted_run": run_id,
            "first_alerted_at": datetime.now(timezone.utc).isoformat(),
        }
    _write_atomic(path, {"format_version": CONDITIONS_FORMAT_VERSION, "dag_id": dag_id, "open": kept})
    return new, [k for k in now if k not in new]


def record_alert(
    alerts_dir: Path,
    dag_id: str,
    run_id: str,
    tests: list[str],
    results: list[str],
    failures: list[int | None] | None = None,
    conditions: list[str] | None = None,
    still_open: list[str] | None = None,
) -> Path:
    """Write what warned in a DAG run to <alerts_dir>/<dag_id>/<run_id>.json (alerts_dir: Paths.alerts);
    returns the file. ``failures``: the rows each test found, in the order of ``tests``;
    ``conditions``: the ones this run alerts for (new since the last alert), ``still_open``: those
    alerted before and still found.

    The mark a site manager (and a monitoring check) can see without the Airflow UI; written
    aside and renamed, so a reader never sees half a file.
    """
    folder = Path(alerts_dir) / dag_id
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in run_id)
    path = folder / f"{safe}.json"
    _write_atomic(
        path,
        {
            "format_version": ALERT_FORMAT_VERSION,
            "dag_id": dag_id,
            "run_id": run_id,
            "tests": tests,
            "results": results,
            "failures": failures,
            "conditions": conditions or [],
            "still_open": still_open or [],
            "written_at": datetime.now(timezone.utc).isoformat(),
        },
    )
    return path
