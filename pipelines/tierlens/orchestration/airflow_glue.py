"""What the DAG files need from Airflow itself: Variables, the raw Asset, timetables, default args.

Airflow is imported inside each function, so the rest of tierlens (and its tests) never needs it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .intervals import utc
from .settings import setting

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
    return utc(datetime.fromisoformat(dag_setting("start_date")))


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


def dag_kwargs(dag_id: str, schedule_setting: str | None = None, **overrides) -> dict:
    """What every tierlens DAG shares: its schedule (a timetable from ``schedule_setting``), start,
    catch-up, one run at a time, the default args and the tag; ``overrides`` replace any of them."""
    kwargs = {"dag_id": dag_id, "start_date": dag_start_date(), "catchup": dag_catchup(), "max_active_runs": 1,
              "default_args": dag_default_args(), "tags": ["tierlens"]}
    if schedule_setting is not None:
        kwargs["schedule"] = dag_timetable(schedule_setting)
    return kwargs | overrides
