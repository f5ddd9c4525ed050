"""tierlens.orchestration, the functions the Airflow DAGs call, without Airflow: settings, and the
interval selection that makes every ingest task idempotent for its data interval."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from tierlens import orchestration as tl
from tierlens.records import FILE_ACCESS, JOB, JOB_TAG, Batch, RecordKind, Reject

T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)


def test_settings_variable_then_environment_then_default(monkeypatch):
    monkeypatch.delenv("TIERLENS_INGEST_SCHEDULE", raising=False)
    assert tl.setting("ingest_schedule") == "@hourly"
    monkeypatch.setenv("TIERLENS_INGEST_SCHEDULE", "@daily")
    assert tl.setting("ingest_schedule") == "@daily"
    variables = {"tierlens_ingest_schedule": "*/30 * * * *"}
    assert tl.setting("ingest_schedule", variables.get) == "*/30 * * * *"
    assert tl.setting("ingest_schedule", {}.get) == "@daily"

    def broken(key):
        raise RuntimeError("no metadata database")

    assert tl.setting("ingest_schedule", broken) == "@daily"
    with pytest.raises(KeyError):
        tl.setting("no_such_setting")
    monkeypatch.setenv("TIERLENS_SOURCES", " synthetic, slurm ,")
    assert tl.settings_list("sources") == ["synthetic", "slurm"]


def test_every_setting_is_documented_in_dags_readme():
    readme = (Path(__file__).resolve().parents[1] / "dags" / "README.md").read_text()
    for name in tl.SETTINGS:
        assert f"| `{name}` | `TIERLENS_{name.upper()}` |" in readme, name


def _jobs(ends: list[datetime | None]) -> pa.Table:
    rows = [
        {f.name: None for f in JOB}
        | {
            "batch_system": "synthetic",
            "cluster": "c",
            "job_id": str(i),
            "step_id": "",
            "state": "COMPLETED",
            "allocated_cores": 1,
            "start_time": T0 - timedelta(hours=5),
            "end_time": e,
            "wall_seconds": 60.0,
            "cpu_user_seconds": 30.0,
            "cpu_system_seconds": 1.0,
        }
        for i, e in enumerate(ends)
    ]
    return pa.Table.from_pylist(rows, schema=JOB)


def _tags(n: int) -> pa.Table:
    rows = [
        {f.name: None for f in JOB_TAG}
        | {
            "batch_system": "synthetic",
            "cluster": "c",
            "job_id": str(i),
            "step_id": "",
            "node": "wn1",
            "storage_type": "ssd",
            "ab_arm": "A",
            "tagged_at": T0 - timedelta(hours=5),
        }
        for i in range(n)
    ]
    return pa.Table.from_pylist(rows, schema=JOB_TAG)


def test_interval_selection_partitions_the_records():
    ends = [T0 + timedelta(minutes=m) for m in (0, 30, 59, 60, 61, 150)] + [None]  # None: still running
    hours = [(T0 + timedelta(hours=h), T0 + timedelta(hours=h + 1)) for h in range(-1, 4)]
    seen: list[str] = []
    for a, b in hours:
        reject = Reject(RecordKind.JOB, "src", "file:line 9", "x", "unparsable", "raw")
        out = list(
            tl.interval_batches(
                [
                    Batch(RecordKind.JOB, _jobs(ends), "src", rejects=[reject]),
                    Batch(RecordKind.JOB_TAG, _tags(len(ends)), "src"),
                ],
                a,
                b,
            )
        )
        jobs = [r for o in out if o.kind is RecordKind.JOB for r in o.table.column("job_id").to_pylist()]
        tags = [r for o in out if o.kind is RecordKind.JOB_TAG for r in o.table.column("job_id").to_pylist()]
        assert tags == jobs  # a tag goes with its job
        assert all(a <= ends[int(j)] < b for j in jobs)
        seen += jobs
        # the parse reject travels alone, in a batch that is the same for every interval
        rejects = [o for o in out if o.rejects]
        assert len(rejects) == 1 and rejects[0].table.num_rows == 0 and rejects[0].source == "src"
    assert sorted(seen, key=int) == ["0", "1", "2", "3", "4", "5"]  # each finished job once; not "6"


def test_interval_selection_keeps_locations_and_is_deterministic():
    rows = [
        {f.name: None for f in FILE_ACCESS}
        | {
            "server_host": "xcache",
            "unique_id": f"u{i}",
            "file_lfn": "/f",
            "start_time": T0,
            "end_time": T0 + timedelta(minutes=40 * i),
            "close_seen": True,
        }
        for i in range(4)
    ]
    batch = Batch(RecordKind.FILE_ACCESS, pa.Table.from_pylist(rows, schema=FILE_ACCESS), "parquet:x.parquet")
    a, b = T0 + timedelta(minutes=30), T0 + timedelta(minutes=90)
    first = list(tl.interval_batches([batch], a, b))
    again = list(tl.interval_batches([batch], a, b))
    assert [o.table.column("unique_id").to_pylist() for o in first] == [["u1", "u2"]]
    assert [o.location(i) for o in first for i in range(o.table.num_rows)] == [
        "parquet:x.parquet:row 1",
        "parquet:x.parquet:row 2",
    ]
    assert [(o.source, o.table.equals(p.table)) for o, p in zip(first, again)] == [
        (f"parquet:x.parquet@{a.isoformat()}..{b.isoformat()}", True)
    ]


def test_interval_folder_names():
    assert tl.interval_folder(Path("/r"), T0, T0 + timedelta(days=7)).name == "2026-10-01_2026-10-08"
    assert tl.interval_folder(Path("/r"), T0, T0 + timedelta(hours=1)).name == "2026-10-01T00_2026-10-01T01"


# --- the build's verdict on each node, read once per run by the model tasks' triggers ----------


def test_build_outcome_gives_each_node_the_verdict_of_its_own_status_and_tests(tmp_path):
    import json

    from tierlens.orchestration.tasks import build_outcome

    results = [
        # (unique_id, dbt status)
        ("seed.p.catalog", "success"),
        ("model.p.clean", "success"),
        ("test.p.clean_unique", "pass"),
        ("test.p.clean_range", "warn"),
        ("model.p.failed_test", "success"),
        ("test.p.failed_test_not_null", "fail"),
        ("model.p.errored", "error"),
        ("model.p.downstream", "skipped"),
        ("test.p.downstream_unique", "skipped"),
        ("model.p.test_missing", "success"),
        ("model.p.shared_a", "success"),
        ("model.p.shared_b", "success"),
        ("test.p.relationship_a_b", "error"),
        ("model.p.untested", "success"),
    ]
    path = tmp_path / "run_results.json"
    path.write_text(json.dumps({"results": [{"unique_id": u, "status": s} for u, s in results] + [{"status": "x"}]}))
    tests_per_model = {
        "model.p.clean": ["test.p.clean_unique", "test.p.clean_range"],
        "model.p.failed_test": ["test.p.failed_test_not_null"],
        "model.p.downstream": ["test.p.downstream_unique"],
        "model.p.test_missing": ["test.p.test_missing_unique"],  # expected, never reported
        "model.p.shared_a": ["test.p.relationship_a_b"],
        "model.p.shared_b": ["test.p.relationship_a_b"],
        "model.p.not_built": ["test.p.not_built_unique"],
    }
    assert build_outcome(path, tests_per_model) == {
        "seed.p.catalog": "passed",
        "model.p.clean": "passed",  # a warned test passes (the completeness alert marks it)
        "model.p.failed_test": "not passed",
        "model.p.errored": "not passed",
        "model.p.downstream": "skipped",
        "model.p.test_missing": "not passed",
        "model.p.shared_a": "not passed",  # a test of two models counts for each
        "model.p.shared_b": "not passed",
        "model.p.untested": "passed",
        # model.p.not_built: not reported by the build, so no verdict (its task asks the worker)
    }


def test_the_build_outcome_is_read_once_for_every_watcher_of_a_run():
    import asyncio

    from tierlens.orchestration import airflow_glue

    reads: list[str] = []

    async def read(value):
        reads.append(value)
        await asyncio.sleep(0.01)
        return value

    async def watchers() -> None:
        airflow_glue._OUTCOME_READS.clear()
        run = ("tierlens_transform", "run-1")
        got = await asyncio.gather(
            *(asyncio.shield(airflow_glue.shared_read(run, lambda: read({"m": "passed"}))) for _ in range(47))
        )
        assert got == [{"m": "passed"}] * 47 and len(reads) == 1
        # the same run later: still the one read; another run reads its own
        assert await airflow_glue.shared_read(run, lambda: read({"m": "other"})) == {"m": "passed"}
        assert await airflow_glue.shared_read(("tierlens_transform", "run-2"), lambda: read({"n": 1})) == {"n": 1}
        assert len(reads) == 2
        # a read that found nothing (the build had not pushed it yet) is read again next time
        empty = ("tierlens_transform", "run-3")
        assert await airflow_glue.shared_read(empty, lambda: read(None)) is None
        assert await airflow_glue.shared_read(empty, lambda: read({"m": "passed"})) == {"m": "passed"}
        assert len(reads) == 4

    asyncio.run(watchers())
    airflow_glue._OUTCOME_READS.clear()


class _FakeTI:
    """What HeldNodeXComs needs of Airflow's task instance: XCom push and pull, and attributes."""

    task_id = "dbt_producer_watcher"

    def __init__(self) -> None:
        self.pushed: list[str] = []
        self.store: dict[str, object] = {}

    def xcom_push(self, key, value):
        self.pushed.append(key)
        self.store[key] = value

    def xcom_pull(self, task_ids=None, dag_id=None, key="return_value", **_):
        return self.store.get(key)


def _cosmos_pushes(ti) -> None:
    """The pushes Cosmos' log parser makes for two models, one passed, one failed, and dbt's start."""
    for event in ("MainReportVersion", "AdapterRegistered"):  # Cosmos reads the list, then appends
        ti.xcom_push("dbt_startup_events", [*(ti.xcom_pull(key="dbt_startup_events") or []), event])
    ti.xcom_push("model__p__good_status", {"status": "success", "outlet_uris": []})
    ti.xcom_push("model__p__good_compiled_sql", "select 1")
    ti.xcom_push("model__p__good_tests_status", "pass")
    ti.xcom_push("model__p__bad_status", {"status": "error", "outlet_uris": []})
    ti.xcom_push("model__p__bad_compiled_sql", "select x")
    ti.xcom_push("model__p__bad_dbt_event", {"status": "error", "msg": "no such column x"})
    ti.xcom_push("test__p__unique_bad_id__0a_dbt_event", {"status": "error"})


def test_the_producer_pushes_only_the_node_xcoms_a_reader_needs():
    from tierlens.orchestration import airflow_glue as af

    ti = _FakeTI()
    held = af.HeldNodeXComs(ti)
    held.xcom_push("producer_cmd_flags", ["--threads", "2"])  # not a node's: pushed at once
    _cosmos_pushes(held)
    assert ti.pushed == ["producer_cmd_flags"]
    assert held.xcom_pull(key="dbt_startup_events") == ["MainReportVersion", "AdapterRegistered"]
    held._cosmos_xcom_backup_buffer = {}  # attributes are the task instance's
    assert ti._cosmos_xcom_backup_buffer == {} and held.task_id == "dbt_producer_watcher"
    # the outcome says which did not pass: their XComs (and the tests'), nothing of the one that did
    outcome = {"model.p.good": af.NODE_PASSED, "model.p.bad": af.NODE_NOT_PASSED}
    assert af.release_node_xcoms({"ti": held}, outcome) == 4
    assert ti.pushed[1:] == [
        "model__p__bad_status",
        "model__p__bad_compiled_sql",
        "model__p__bad_dbt_event",
        "test__p__unique_bad_id__0a_dbt_event",
    ]
    assert af.release_node_xcoms({"ti": held}, None) == 0  # once
    held.xcom_push("task_status", "completed")
    held.xcom_push("model__p__late_status", {"status": "success"})  # released: straight through
    assert ti.pushed[-2:] == ["task_status", "model__p__late_status"]
    assert af.release_node_xcoms({"ti": ti}, outcome) == 0  # a task instance that holds nothing


def test_a_build_without_an_outcome_pushes_every_node_xcom_before_its_end():
    from tierlens.orchestration import airflow_glue as af

    ti = _FakeTI()
    held = af.HeldNodeXComs(ti)
    _cosmos_pushes(held)
    # Cosmos' last push, the build returned without results or raised: everything first
    held.xcom_push("task_status", "completed")
    assert ti.pushed[0] == "dbt_startup_events" and ti.pushed[-1] == "task_status" and len(ti.pushed) == 9
    assert ti.store["model__p__good_status"] == {"status": "success", "outlet_uris": []}
    # a producer cut short: its failure callback pushes them
    ti2 = _FakeTI()
    held2 = af.HeldNodeXComs(ti2)
    _cosmos_pushes(held2)
    af._release_on_failure({"ti": held2})
    assert len(ti2.pushed) == 8

    class Producer:
        on_failure_callback = print

    producer = Producer()
    af.release_held_on_failure(producer)
    assert producer.on_failure_callback == [af._release_on_failure, print]


def test_python_marts_take_the_ab_parameters_from_the_projects_vars(tmp_path):
    """On a Spark target the transform DAG computes ab_uncertainty with the parameters the dbt
    model would take from the project's vars (ab_uncertainty.yml's ab_params)."""
    from tierlens.analysis.uncertainty import ABParams, ab_params_from_vars
    from tierlens.orchestration.spark_marts import project_vars
    from tierlens.resources import dbt_project_dir

    # the shipped project sets the arms only, to ABParams' own defaults
    assert ab_params_from_vars(project_vars(dbt_project_dir())) == ABParams()
    site = tmp_path / "site"
    site.mkdir()
    (site / "dbt_project.yml").write_text(
        "name: site\nvars:\n  arm_a: HDD\n  arm_b: SSD\n  ab_block: day\n  ab_seed: 7\n  high_hit_ratio: 0.9\n"
    )
    assert ab_params_from_vars(project_vars(site)) == ABParams(
        arm_a="HDD", arm_b="SSD", block="day", seed=7, high_hit_ratio=0.9
    )
    (site / "dbt_project.yml").write_text("name: site\nvars:\n  ab_block: week\n")
    with pytest.raises(ValueError, match="ab_block"):
        ab_params_from_vars(project_vars(site))
    (site / "dbt_project.yml").write_text("name: site\nvars: [arm_a\n")
    with pytest.raises(ValueError, match="dbt_project.yml"):
        project_vars(site)
