"""What the Airflow DAGs (dags/) call: one function per task, each for one data interval.

Every function here takes plain values (paths, datetimes, lists) and returns a small dict that
Airflow can keep as XCom; none imports Airflow, so each can be run and tested by hand.

Idempotency: a task for the interval [start, end) selects its input deterministically from that
interval (a job belongs to the interval its ``end_time`` falls in, a file access likewise, a job
tag goes with its job), and the warehouse upserts by natural key, so rerunning or back-filling an
interval never duplicates rows.

Configuration is read by :func:`setting`: Airflow Variable ``tierlens_<name>`` when the DAG passes
a Variable lookup, else environment ``TIERLENS_<NAME>``, else the default. dags/README.md lists
every setting.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .config import home
from .resources import shipped
from .records import Batch, RecordKind

#: Sources the ingest DAG knows, in task order. Each is switched on by listing it in
#: ``TIERLENS_SOURCES`` (comma-separated).
SOURCES = ("synthetic", "slurm", "condor", "xrootd")

#: Every setting, its default and meaning: dags/README.md renders the same list.
SETTINGS: dict[str, tuple[str, str]] = {
    "home": ("", "tierlens home folder; default $TIERLENS_HOME, else ~/.local/share/tierlens"),
    "warehouse": ("", "DuckDB warehouse file; default <home>/warehouse.duckdb"),
    "sources": ("", "comma-separated sources the ingest DAG loads: synthetic, slurm, condor, xrootd"),
    "ingest_schedule": ("@hourly", "schedule of tierlens_ingest (cron or preset)"),
    "report_schedule": ("@weekly", "schedule of tierlens_report"),
    "simulate_schedule": ("@weekly", "schedule of tierlens_simulate"),
    "simulate_caches": ("", "cache configurations tierlens_simulate replays, policy:size comma-separated "
                            "(e.g. lru:11TB,slac2:11TB); empty: the DAG skips"),
    "simulate_role": ("", "replay only accesses to servers of this role (origin, cache); default all"),
    "simulate_efficiency": ("analysis", "job class tierlens_simulate predicts efficiency for ('all': every "
                                        "class); empty: no efficiency prediction"),
    "efficiency_jobs_per_node": ("4,8,16", "jobs per node of the efficiency what-if grid, comma-separated"),
    "start_date": ("2026-10-01", "first data interval of the scheduled DAGs (UTC date)"),
    "catchup": ("false", "back-fill every interval since start_date when the DAG is switched on"),
    "pool": ("tierlens_warehouse", "Airflow pool (1 slot) serialising every task that writes the warehouse"),
    "dbt_executable": ("", "dbt binary (dbt-duckdb) for Cosmos; default the dbt beside this Python"),
    "dbt_project_dir": ("", "dbt project; default the one shipped with tierlens (dbt/ of a checkout)"),
    "dbt_target": ("duckdb", "dbt target (dbt/profiles.yml) the transform DAG builds: duckdb, spark (local "
                             "session) or spark_thrift (a cluster, deploy/spark/README.md)"),
    "lake": ("", "Parquet lake the spark targets read; the ingest DAG's publish task exports it for them; "
                 "default <home>/lake"),
    "spark_warehouse": ("", "spark.sql.warehouse.dir of the spark (session) target; default <home>/spark-warehouse"),
    "dbt_select": ("", "dbt node selection rendered by Cosmos, comma-separated (e.g. +job_efficiency); "
                       "default the whole project"),
    "report_dir": ("", "folder of the weekly reports, one sub-folder per interval; default <home>/reports"),
    "report_email": ("", "comma-separated recipients; empty: no e-mail (uses Airflow's smtp_default)"),
    "task_timeout_minutes": ("60", "execution timeout of each task"),
    "retries": ("2", "retries per task"),
    "retry_delay_minutes": ("5", "delay between retries"),
    "synthetic_start": ("2026-10-01", "synthetic site: first simulated day (UTC)"),
    "synthetic_days": ("30", "synthetic site: days simulated"),
    "synthetic_seed": ("42", "synthetic site: seed"),
    "synthetic_nodes_per_type": ("2", "synthetic site: worker nodes per storage type"),
    "slurm_sacct": ("sacct", "sacct command"),
    "slurm_clusters": ("", "sacct --clusters"),
    "slurm_spool": ("", "comma-separated spool folders of the SPANK plugin (job tags)"),
    "condor_history": ("", "comma-separated HTCondor history files or SPOOL folders"),
    "condor_cluster": ("htcondor", "pool name for ads without TierlensCluster"),
    "xrootd_dir": ("", "folder where `tierlens collect xrootd` writes file_access Parquet batches"),
    # Completeness alerts of tierlens_transform (tests on marts.data_completeness, per day x subject)
    "completeness_min_cpu_hours_tagged": ("0.90", "warn when a cluster-day has a smaller share of CPU hours "
                                                  "from plugin-tagged jobs"),
    "completeness_min_bytes_joined": ("0.80", "warn when a server-day has a smaller share of bytes read "
                                              "joined to jobs"),
    "completeness_max_kernel_drops": ("0", "warn when a collector-day has more datagrams dropped by the kernel"),
    "completeness_floor_cpu_hours_tagged": ("0.50", "fail the transform when a cluster-day's tagged CPU-hours "
                                                    "share is below this hard floor"),
    "completeness_floor_bytes_joined": ("0.30", "fail the transform when a server-day's joined bytes share "
                                                "is below this hard floor"),
    "alert_email": ("", "comma-separated recipients of completeness warnings; empty: no e-mail (uses "
                        "Airflow's smtp_default)"),
}

#: The completeness settings and the environment variables the dbt tests read them from.
COMPLETENESS_SETTINGS = ("completeness_min_cpu_hours_tagged", "completeness_min_bytes_joined",
                         "completeness_max_kernel_drops", "completeness_floor_cpu_hours_tagged",
                         "completeness_floor_bytes_joined")


def setting(name: str, lookup: Callable[[str], str | None] | None = None) -> str:
    """Airflow Variable ``tierlens_<name>`` (through ``lookup``), else ``TIERLENS_<NAME>``, else default."""
    if name not in SETTINGS:
        raise KeyError(f"unknown tierlens setting {name!r}")
    if lookup is not None:
        try:
            value = lookup(f"tierlens_{name}")
        except Exception:  # noqa: BLE001 - no metadata database reachable: fall back to environment
            value = None
        if value not in (None, ""):
            return str(value)
    return os.environ.get(f"TIERLENS_{name.upper()}", SETTINGS[name][0])


def settings_list(name: str, lookup=None) -> list[str]:
    return [s.strip() for s in setting(name, lookup).split(",") if s.strip()]


def tierlens_home(lookup=None) -> Path:
    h = setting("home", lookup)
    return Path(h).expanduser() if h else home()


def warehouse_path(lookup=None) -> Path:
    w = setting("warehouse", lookup)
    return Path(w).expanduser() if w else tierlens_home(lookup) / "warehouse.duckdb"


DBT_TARGETS = ("duckdb", "spark", "spark_thrift")


def dbt_target(lookup=None) -> str:
    """The profiles.yml target the transform DAG builds; a clear error for an unknown one."""
    target = setting("dbt_target", lookup).strip() or "duckdb"
    if target not in DBT_TARGETS:
        raise ValueError(f"dbt_target {target!r} is not one of {', '.join(DBT_TARGETS)} (dbt/profiles.yml)")
    return target


def lake_path(lookup=None) -> Path:
    lake = setting("lake", lookup)
    return Path(lake).expanduser() if lake else tierlens_home(lookup) / "lake"


def dbt_env(lookup=None) -> dict[str, str]:
    """Environment of the dbt subprocesses: the warehouse, and for the Spark targets the lake."""
    env = {
        "TIERLENS_WAREHOUSE": str(warehouse_path(lookup).resolve()),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "False",
        "DO_NOT_TRACK": "1",
    }
    env.update(completeness_env(lookup))
    if dbt_target(lookup) != "duckdb":
        env["TIERLENS_LAKE"] = str(lake_path(lookup).resolve())
        spark_wh = setting("spark_warehouse", lookup)
        env["TIERLENS_SPARK_WAREHOUSE"] = str(
            Path(spark_wh).expanduser().resolve() if spark_wh else tierlens_home(lookup) / "spark-warehouse")
    return env


def publish(warehouse: Path, lookup=None) -> dict:
    """Rows per raw table; with a Spark dbt target, the lake is exported for it first."""
    if dbt_target(lookup) != "duckdb":
        from .warehouse import export_lake

        export_lake(warehouse, lake_path(lookup))
    return counts(warehouse)


def dbt_project_dir(lookup=None) -> Path:
    d = setting("dbt_project_dir", lookup)
    return Path(d).expanduser() if d else shipped("dbt")


def dbt_executable(lookup=None) -> str:
    exe = setting("dbt_executable", lookup)
    if exe:
        return exe
    from .transform import _dbt_executable

    return _dbt_executable()[0]


# ---- selecting one interval's rows ------------------------------------------------------------
def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _in_interval(table: pa.Table, column: str, start: datetime, end: datetime) -> pa.Array:
    col = table.column(column)
    mask = pc.and_(pc.greater_equal(col, pa.scalar(_utc(start), col.type)),
                   pc.less(col, pa.scalar(_utc(end), col.type)))
    return pc.fill_null(mask, False)


def _job_keys(table: pa.Table) -> list[tuple]:
    cols = [table.column(c).to_pylist() for c in ("batch_system", "cluster", "job_id", "step_id")]
    return list(zip(*cols))


def _take(batch: Batch, mask: pa.Array, source: str) -> Batch | None:
    idx = pc.indices_nonzero(mask).to_pylist() if len(mask) else []
    if not idx:
        return None
    locs = [batch.location(i) for i in idx]
    return Batch(batch.kind, batch.table.take(pa.array(idx, pa.int64())), source, locations=locs)


def interval_batches(batches: Iterable[Batch], start: datetime, end: datetime) -> Iterator[Batch]:
    """Keep the rows of ``batches`` that belong to [start, end): deterministic for the interval.

    job and file_access rows by their ``end_time`` (a job still running has none and waits for
    the interval it ends in); job_tag rows go with a job of the same stream kept here, or, for a
    tag-only stream (a spool), by ``tagged_at``; node and storage_catalog rows always (an
    inventory, upserted). Parse rejects travel in a batch of their own whose identity does not
    depend on the interval, so the warehouse records them once.
    """
    label = f"{_utc(start).isoformat()}..{_utc(end).isoformat()}"
    kept_jobs: set[tuple] = set()
    saw_jobs = False
    tags: list[Batch] = []
    for b in batches:
        if b.rejects:
            yield Batch(b.kind, b.table.schema.empty_table(), b.source, locations=[], rejects=b.rejects)
        src = f"{b.source}@{label}"
        if b.kind in (RecordKind.JOB, RecordKind.FILE_ACCESS):
            mask = _in_interval(b.table, "end_time", start, end)
            out = _take(b, mask, src)
            if b.kind is RecordKind.JOB:
                saw_jobs = True
                if out is not None:
                    kept_jobs.update(_job_keys(out.table))
            if out is not None:
                yield out
        elif b.kind is RecordKind.JOB_TAG:
            tags.append(b)  # decided once every job of the stream is known
        elif b.table.num_rows:
            yield Batch(b.kind, b.table, b.source, locations=b.locations, row_offset=b.row_offset)
    for b in tags:
        if saw_jobs:
            keys = _job_keys(b.table)
            mask = pa.array([k in kept_jobs or (k[0], k[1], k[2], "") in kept_jobs for k in keys], pa.bool_())
        else:
            mask = _in_interval(b.table, "tagged_at", start, end)
        out = _take(b, mask, f"{b.source}@{label}")
        if out is not None:
            yield out


# ---- sources ----------------------------------------------------------------------------------
def _summary(source: str, start: datetime, end: datetime, summary) -> dict:
    return {"source": source, "start": _utc(start).isoformat(), "end": _utc(end).isoformat(),
            "batches": summary.batches, "rows_in": dict(summary.rows_in),
            "rows_loaded": dict(summary.rows_loaded), "rows_rejected": dict(summary.rows_rejected)}


def _load(source: str, batches: Iterable[Batch], warehouse: Path, start: datetime, end: datetime) -> dict:
    from .pipeline import ingest

    warehouse = Path(warehouse)
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    return _summary(source, start, end, ingest(interval_batches(batches, start, end), warehouse))


def synthetic_options(start: str = "2026-10-01", days: float = 30, seed: int = 42, nodes_per_type: int = 2):
    from .sources.synthetic import SyntheticOptions, demo_site

    t0 = datetime.fromisoformat(start)
    return SyntheticOptions(days=float(days), seed=int(seed), start=_utc(t0),
                            site=demo_site(nodes_per_type=int(nodes_per_type)))


def _synthetic_key(options) -> str:
    spec = {"days": options.days, "seed": options.seed, "start": options.start.isoformat(),
            "warmup": options.warmup_days, "nodes": [n.name for n in options.site.nodes],
            "cluster": options.site.cluster}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def synthetic_site_files(options, cache_dir: Path) -> Path:
    """Simulate the synthetic site once and keep its records as Parquet, one file per record kind.

    The same options give the same folder (and byte-identical data), so every interval of a run
    or a rerun reads one simulation; written to a temporary folder and renamed into place.
    """
    from .sources.synthetic import generate

    target = Path(cache_dir) / _synthetic_key(options)
    if (target / "_SUCCESS").exists():
        return target
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    writers: dict[RecordKind, pq.ParquetWriter] = {}
    try:
        for b in generate(options):
            w = writers.get(b.kind)
            if w is None:
                w = writers[b.kind] = pq.ParquetWriter(tmp / f"{b.kind.value}.parquet", b.table.schema)
            w.write_table(b.table)
    finally:
        for w in writers.values():
            w.close()
    (tmp / "_SUCCESS").write_text(json.dumps({"days": options.days, "seed": options.seed}))
    try:
        tmp.rename(target)
    except OSError:  # another task got there first: its copy is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def synthetic_batches(options, cache_dir: Path, rows: int = 100_000) -> Iterator[Batch]:
    folder = synthetic_site_files(options, cache_dir)
    source = f"synthetic:{folder.name}"
    for kind in (RecordKind.NODE, RecordKind.JOB, RecordKind.JOB_TAG, RecordKind.FILE_ACCESS):
        path = folder / f"{kind.value}.parquet"
        if not path.exists():
            continue
        first = 0
        for rb in pq.ParquetFile(path).iter_batches(batch_size=rows):
            yield Batch(kind, pa.Table.from_batches([rb]), source, row_offset=first)
            first += rb.num_rows


def ingest_synthetic(warehouse: Path, start: datetime, end: datetime, options, cache_dir: Path) -> dict:
    """The synthetic demo site as a source: the records of one simulation that fall in [start, end)."""
    return _load("synthetic", synthetic_batches(options, cache_dir), warehouse, start, end)


def ingest_slurm(warehouse: Path, start: datetime, end: datetime, sacct: str = "sacct",
                 clusters: str | None = None, spool_dirs: Iterable[Path] = (),
                 window_hours: float = 6.0) -> dict:
    """Jobs and steps that ended in [start, end) from sacct (explicit window, no watermark), plus
    the SPANK plugin's spool tags of those jobs."""
    from itertools import chain

    from .sources.slurm import spool_batches
    from .sources.slurm.sacct import SacctError, SacctRunner, sacct_batches

    runner = SacctRunner(sacct=sacct, clusters=clusters or None)
    retry: list = []
    batches: Iterable[Batch] = sacct_batches(runner, _utc(start).timestamp(), _utc(end).timestamp(),
                                             window_hours * 3600, [], retry=retry)
    dirs = [Path(d) for d in spool_dirs]
    if dirs:
        batches = chain(batches, spool_batches(dirs))
    summary = _load("slurm", batches, warehouse, start, end)
    if retry:
        # what was complete is loaded; failing the task makes the scheduler run this interval again
        raise SacctError("incomplete sacct output: " + " | ".join(r.describe() for r in retry))
    return summary


def ingest_condor(warehouse: Path, start: datetime, end: datetime, history: Iterable[Path],
                  cluster: str = "htcondor") -> dict:
    """Jobs that ended in [start, end) from HTCondor history files (incl. rotated history.*)."""
    from .sources.condor.history import history_batches

    paths = [Path(p) for p in history]
    if not paths:
        raise ValueError("condor source: set TIERLENS_CONDOR_HISTORY (history files or SPOOL folders)")
    return _load("condor", history_batches(paths, cluster), warehouse, start, end)


def ingest_xrootd(warehouse: Path, start: datetime, end: datetime, batch_dir: Path) -> dict:
    """File accesses that ended in [start, end) from the collector's Parquet batches."""
    from .pipeline import parquet_batches

    files = sorted(Path(batch_dir).glob("*.parquet"))
    return _load("xrootd", parquet_batches(RecordKind.FILE_ACCESS, files), warehouse, start, end)


# ---- downstream stages ------------------------------------------------------------------------
def build_report(warehouse: Path, out_dir: Path) -> dict:
    """The report from the published snapshot (the working file when none is published yet)."""
    from .report import build_report as _build
    from .warehouse.publish import reader_path

    r = _build(reader_path(warehouse), Path(out_dir))
    return {"html": str(r.html_path), "csv": [str(p) for p in r.csv_paths], "no_data": list(r.no_data)}


def interval_folder(base: Path, start: datetime, end: datetime) -> Path:
    """reports/<start>_<end> (UTC dates or hours): one folder per interval, replaced on rerun."""
    fmt = "%Y-%m-%d" if (end - start) >= timedelta(days=1) else "%Y-%m-%dT%H"
    return Path(base) / f"{_utc(start).strftime(fmt)}_{_utc(end).strftime(fmt)}"


def publish_snapshot(warehouse: Path, lookup=None) -> str | None:
    """After a transform: copy the warehouse to the snapshot readers open (None: the dbt target
    is not DuckDB, so the warehouse did not change)."""
    if dbt_target(lookup) != "duckdb":
        return None
    from .warehouse.publish import publish

    return str(publish(Path(warehouse)))


def counts(warehouse: Path) -> dict[str, int]:
    from .warehouse import Warehouse

    with Warehouse(warehouse, read_only=True) as wh:
        return wh.counts()


# ---- Airflow glue (imported lazily: the functions above never need Airflow) -------------------
#: Name and URI of the Asset tierlens_ingest updates and tierlens_transform is scheduled on.
RAW_ASSET_NAME, RAW_ASSET_URI = "tierlens_raw", "tierlens://warehouse/raw"

_PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0",
            "@monthly": "0 0 1 * *"}


def airflow_var(key: str) -> str | None:
    """An Airflow Variable, or None (also when no metadata database is reachable)."""
    try:
        from airflow.sdk import Variable

        return Variable.get(key, default=None)
    except Exception:  # noqa: BLE001 - parsing outside a running Airflow: environment only
        return None


def dag_setting(name: str) -> str:
    return setting(name, airflow_var)


def raw_asset():
    from airflow.sdk import Asset

    return Asset(name=RAW_ASSET_NAME, uri=RAW_ASSET_URI)


def dag_timetable(name: str):
    """A cron schedule with real data intervals [previous tick, this tick) in UTC.

    (Airflow 3's plain ``schedule="@hourly"`` makes zero-length intervals; the tasks select
    their input by interval, so they need the interval.)
    """
    from airflow.timetables.interval import CronDataIntervalTimetable

    cron = dag_setting(name)
    return CronDataIntervalTimetable(_PRESETS.get(cron, cron), timezone="UTC")


def dag_start_date() -> datetime:
    return _utc(datetime.fromisoformat(dag_setting("start_date")))


def dag_catchup() -> bool:
    return dag_setting("catchup").strip().lower() in ("1", "true", "yes", "on")


def dag_default_args() -> dict:
    return {
        "owner": "tierlens",
        "retries": int(dag_setting("retries")),
        "retry_delay": timedelta(minutes=float(dag_setting("retry_delay_minutes"))),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=60),
        "execution_timeout": timedelta(minutes=float(dag_setting("task_timeout_minutes"))),
        # DuckDB has one writer at a time: every task touching the warehouse takes this pool's slot.
        "pool": dag_setting("pool"),
    }


# ---- the simulator (tierlens.simulator) -------------------------------------------------------
def parse_cache_configs(text: str) -> list[tuple[str, str]]:
    """``policy:size`` pairs, comma-separated: 'lru:11TB,slac2:11TB' -> [('lru', '11TB'), ...]."""
    out = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        policy, sep, size = item.partition(":")
        if not sep or not policy.strip() or not size.strip():
            raise ValueError(f"cache configuration {item!r}: expected policy:size, e.g. lru:11TB")
        out.append((policy.strip().lower(), size.strip()))
    return out


class MartsMissing(RuntimeError):
    """The warehouse has not been through dbt yet (no marts.job_io_profile)."""


def predict_efficiency(warehouse: Path, start: datetime, end: datetime, job_class: str,
                       jobs_per_node: list[float], caches: list[tuple[str, str]],
                       state_dir: Path | None = None) -> dict:
    """Calibrate the efficiency model on the jobs that ended in [start, end), predict the grid
    (no cache plus each ``caches`` entry), write the run back and rebuild the marts that compare
    measured and predicted. A rerun of the same interval replaces its run."""
    from .simulator import store, whatif
    from .simulator.command import parse_bytes
    from .transform import refresh_efficiency_marts
    from .warehouse import Warehouse

    options = whatif.EfficiencyOptions(
        job_class=None if job_class == "all" else job_class, jobs_per_node=tuple(jobs_per_node),
        caches=(whatif.CacheOption(),) + tuple(whatif.CacheOption(p, parse_bytes(sz)) for p, sz in caches),
        start=_utc(start).isoformat(), end=_utc(end).isoformat())
    with Warehouse(warehouse) as w:
        has_profile = w.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                                    "'marts' AND table_name = 'job_io_profile'").fetchone()[0]
        if not has_profile:
            raise MartsMissing(f"{warehouse} has no marts.job_io_profile: run the transform first")
        run = whatif.run(w.con, options)
        run_id = store.write_efficiency(w.con, run)
    refresh_efficiency_marts(Path(warehouse), state_dir or Path(warehouse).parent / "dbt-efficiency")
    return {"run_id": run_id, "jobs": len(run.profiles), "structural_error": run.calibration.structural_error,
            "predictions": run.predictions.num_rows}


def simulate_caches(warehouse: Path, start: datetime, end: datetime, configs: list[tuple[str, str]],
                    role: str | None = None, ssd: str | None = None) -> dict:
    """Replay the file accesses opened in [start, end) through each cache configuration and write
    the runs to the warehouse (sim_cache_runs, sim_cache_hourly).

    A run's id hashes its parameters and the trace's content, so rerunning an interval replaces
    its rows and never adds to them.
    """
    from .simulator import CacheParams, from_warehouse, simulate
    from .simulator import store
    from .simulator.command import parse_bytes
    from .warehouse import Warehouse

    if not configs:
        raise ValueError("simulate: set TIERLENS_SIMULATE_CACHES, e.g. lru:11TB,slac2:11TB")
    params = [CacheParams(p, parse_bytes(s)) for p, s in configs]
    with Warehouse(warehouse, read_only=True) as w:
        trace = from_warehouse(w.con, None, role or None, _utc(start).isoformat(), _utc(end).isoformat())
    if len(trace) == 0:
        return {"accesses": 0, "runs": []}
    results = [simulate(trace, p) for p in params]
    runs = []
    with Warehouse(warehouse) as w:
        ssd_row = store.catalog_ssd(w.con, ssd or None)
        for r in results:
            runs.append({"run_id": store.write_run(w.con, r, ssd_row), "policy": r.params.policy,
                         "capacity_bytes": r.params.capacity_bytes, "hit_ratio": r.hit_ratio,
                         "byte_hit_ratio": r.byte_hit_ratio})
    return {"accesses": len(trace), "runs": runs}


# ---------------------------------------------------------------------- completeness alerts


def completeness_env(lookup=None) -> dict[str, str]:
    """TIERLENS_COMPLETENESS_* for the dbt tests on marts.data_completeness, each a checked number."""
    env = {}
    for name in COMPLETENESS_SETTINGS:
        value = setting(name, lookup)
        try:
            float(value)
        except ValueError as e:
            raise ValueError(f"setting {name} must be a number, not {value!r}") from e
        env[f"TIERLENS_{name.upper()}"] = value
    return env


def record_alert(home_dir: Path, dag_id: str, run_id: str, tests: list[str], results: list[str]) -> Path:
    """Write what warned in a DAG run to <home>/alerts/<dag_id>/<run_id>.json; returns the file.

    The mark a site manager (and a monitoring check) can see without the Airflow UI; written
    aside and renamed, so a reader never sees half a file.
    """
    folder = home_dir / "alerts" / dag_id
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in run_id)
    path = folder / f"{safe}.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"dag_id": dag_id, "run_id": run_id, "tests": tests, "results": results,
                               "written_at": datetime.now(timezone.utc).isoformat()}, indent=1))
    os.replace(tmp, path)
    return path
