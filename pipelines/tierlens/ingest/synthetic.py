"""The synthetic demo site as a source: the records of one simulation that fall in an interval.

Imports nothing at its top but dataclasses: the DAG files read the options' defaults as Airflow
parses them (sources/registry.py), and the simulation's modules take over a second to import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from .interval import EmptyReason


@dataclass(frozen=True)
class SyntheticSourceOptions:
    """Which simulation; each field with a meaning is the setting ``synthetic_<field>`` of the DAGs."""

    start: str = field(
        default="",
        metadata={
            "meaning": "synthetic site: first simulated day (UTC); default start_date, so the first scheduled "
            "hours have data",
            # a first hour outside the simulated days would load nothing
            "or_setting": "start_date",
        },
    )
    # a week (the report's period): simulated by the first ingest task, ~3 s per node and day
    days: float = field(default=7.0, metadata={"meaning": "synthetic site: days simulated (after 3 days of warm-up)"})
    seed: int = field(default=42, metadata={"meaning": "synthetic site: seed"})
    nodes_per_type: int = field(default=2, metadata={"meaning": "synthetic site: worker nodes per storage type"})
    #: where simulations are kept, one folder each: the home's synthetic/ (not a setting of its own)
    cache_dir: str = field(default="", metadata={"home_folder": "synthetic"})


def load_interval(warehouse: Path, start: datetime, end: datetime, options: SyntheticSourceOptions) -> dict:
    """The records of the simulation ``options`` names that fall in [start, end)."""
    from pathlib import Path

    from ..config import paths
    from ..sources.synthetic.stored import batches, synthetic_options
    from .interval import load_interval as load

    site = synthetic_options(options.start, options.days, options.seed, options.nodes_per_type)
    cache = Path(options.cache_dir) if options.cache_dir else paths().synthetic
    return load("synthetic", batches(site, cache), warehouse, start, end, empty_reason(site.start, site.days))


def empty_reason(first: datetime, days: float) -> EmptyReason:
    """Outside the simulated days (synthetic_start and _days), or a quiet hour inside them."""
    from datetime import timedelta

    from .interval import Nothing, interval_text
    from .intervals import utc

    first = utc(first)
    last = first + timedelta(days=float(days))

    def why(start: datetime, end: datetime) -> str:
        window = f"the synthetic site simulates {interval_text(first, last)} (synthetic_start, synthetic_days)"
        if end <= first or start >= last:
            return Nothing(
                f"the interval {interval_text(start, end)} is outside its window: {window}", "outside_window"
            )
        return Nothing(f"no simulated job or file access ended in {interval_text(start, end)}; {window}")

    return why
