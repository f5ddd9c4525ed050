"""The simulate DAG's tasks: the interval's file accesses replayed through cache configurations, and
the efficiency model calibrated on its jobs and asked about configurations not deployed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..ingest.intervals import utc


class MartsMissing(RuntimeError):
    """The warehouse has not been through dbt yet (no marts.job_io_profile)."""


def predict_efficiency(
    warehouse: Path,
    start: datetime,
    end: datetime,
    job_class: str,
    jobs_per_node: list[float],
    caches: list,
    state_dir: Path | None = None,
) -> dict:
    """Calibrate the efficiency model on the jobs that ended in [start, end), predict the grid
    (no cache plus each ``caches`` entry, simulator.whatif.CacheOption), write the run back and
    rebuild the marts that compare measured and predicted. A rerun of the same interval replaces its run."""
    from ..simulator import store, whatif
    from ..transform import refresh_efficiency_marts
    from ..warehouse import Warehouse

    options = whatif.EfficiencyOptions(
        job_class=None if job_class == "all" else job_class,
        jobs_per_node=tuple(jobs_per_node),
        caches=(whatif.CacheOption(),) + tuple(caches),
        start=utc(start).isoformat(),
        end=utc(end).isoformat(),
    )
    with Warehouse(warehouse) as w:
        has_profile = w.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
            "'marts' AND table_name = 'job_io_profile'"
        ).fetchone()[0]
        if not has_profile:
            raise MartsMissing(f"{warehouse} has no marts.job_io_profile: run the transform first")
        run = whatif.run(w.con, options)
        run_id = store.write_efficiency(w.con, run)
    refresh_efficiency_marts(Path(warehouse), state_dir or Path(warehouse).parent / "dbt-efficiency")
    return {
        "run_id": run_id,
        "jobs": len(run.profiles),
        "structural_error": run.calibration.structural_error,
        "predictions": run.predictions.num_rows,
    }


def simulate_caches(
    warehouse: Path, start: datetime, end: datetime, caches: list, role: str | None = None, ssd: str | None = None
) -> dict:
    """Replay the file accesses opened in [start, end) through each cache configuration
    (simulator.whatif.CacheOption) and write the runs to the warehouse (sim_cache_runs, sim_cache_hourly).

    A run's id hashes its parameters and the trace's content, so rerunning an interval replaces
    its rows and never adds to them.
    """
    from ..simulator import CacheParams, from_warehouse, simulate, store
    from ..warehouse import Warehouse

    if not caches:
        raise ValueError("simulate: set TIERLENS_SIMULATE_CACHES, e.g. lru:11TB,slac2:11TB")
    params = [CacheParams(c.policy, c.capacity_bytes) for c in caches]
    with Warehouse(warehouse, read_only=True) as w:
        trace = from_warehouse(w.con, None, role or None, utc(start).isoformat(), utc(end).isoformat())
    if len(trace) == 0:
        return {"accesses": 0, "runs": []}
    results = [simulate(trace, p) for p in params]
    runs = []
    with Warehouse(warehouse) as w:
        ssd_row = store.catalog_ssd(w.con, ssd or None)
        for r in results:
            runs.append(
                {
                    "run_id": store.write_run(w.con, r, ssd_row),
                    "policy": r.params.policy,
                    "capacity_bytes": r.params.capacity_bytes,
                    "hit_ratio": r.hit_ratio,
                    "byte_hit_ratio": r.byte_hit_ratio,
                }
            )
    return {"accesses": len(trace), "runs": runs}
