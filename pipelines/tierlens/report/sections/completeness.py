"""Data completeness: what share of what happened reached tierlens and was joined (marts.data_completeness)."""

from __future__ import annotations

from dataclasses import dataclass

from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, SectionOut, SectionSpec, TableSpec
from .common import share_sql

# A day is provisional while jobs that could still add to it may be running (the mart's final_from).
_STATUS = "CASE WHEN bool_or(provisional) THEN 'provisional' ELSE 'final' END AS status"


def _share(measure: str, label: str) -> Column:
    """The column of a measure's share (numerator / denominator), keyed by the measure."""
    return Column(measure, label, "pct")


@dataclass(frozen=True)
class _DailyShares:
    """A table of one grain of marts.data_completeness, a row per day and subject (a cluster, a
    server): what the shares are of (a measure's denominator), the shares, one count (a measure's
    numerator) and whether the day's figures are final. Its query and its columns are both made
    from here, so that each measure is named once."""

    name: str
    caption: str
    grain: str
    #: (measure, column): the measure's denominator, the total its share is of
    totals: tuple[tuple[str, Column], ...]
    #: each share's column, keyed by its measure
    shares: tuple[Column, ...]
    #: a measure's numerator alone, keyed by the measure
    count: Column

    def sql(self) -> str:
        totals = "".join(
            f"sum(denominator) FILTER (WHERE measure = '{m}') AS {c.key},\n               " for m, c in self.totals
        )
        shares = ", ".join(f"{share_sql(c.key)} AS {c.key}" for c in self.shares)
        count = self.count.key
        return f"""
        SELECT "day", subject AS {self.grain},
               {totals}{shares},
               sum(numerator) FILTER (WHERE measure = '{count}') AS {count},
               {_STATUS}
        FROM marts.data_completeness WHERE grain = '{self.grain}' GROUP BY ALL ORDER BY "day", {self.grain}
    """

    def spec(self) -> TableSpec:
        return TableSpec(
            self.name,
            self.caption,
            (
                Column("day", "day"),
                Column(self.grain, self.grain),
                *(c for _, c in self.totals),
                *self.shares,
                self.count,
                Column("status", "figures"),
            ),
        )


_BY_CLUSTER = _DailyShares(
    "completeness_by_cluster",
    "Jobs per day and cluster",
    "cluster",
    totals=(
        ("jobs_tagged", Column("jobs", "jobs", "int")),
        ("cpu_hours_tagged", Column("cpu_hours", "CPU hours", "hours")),
    ),
    shares=(
        _share("jobs_tagged", "jobs tagged"),
        _share("cpu_hours_tagged", "CPU hours tagged"),
        _share("jobs_with_exact_accesses", "accesses exact"),
        _share("jobs_with_inferred_accesses_only", "inferred only"),
        _share("jobs_without_accesses", "no accesses"),
    ),
    count=Column("tags_without_job", "tags without job", "int"),
)
_BY_SERVER = _DailyShares(
    "completeness_by_server",
    "File accesses per day and server",
    "server",
    totals=(("accesses_exact", Column("accesses", "accesses", "int")),),
    shares=(
        _share("accesses_exact", "exact"),
        _share("accesses_inferred", "inferred"),
        _share("accesses_unmatched", "no job"),
        _share("bytes_joined", "bytes joined"),
        _share("cache_accesses_gstream_only", "cache: g-stream only"),
        _share("sequence_gaps", "sequence gaps"),
    ),
    count=Column("cache_stage_in_accesses", "cache stage-in", "int"),
)


def body(wh: MartReader, s: SectionOut) -> None:
    for table in (_BY_CLUSTER, _BY_SERVER):
        s.table(table.name, wh.rows(table.sql()))
    collector = wh.rows("""
        SELECT "day", subject AS collector, measure, numerator, denominator, share
        FROM marts.data_completeness WHERE grain = 'collector' ORDER BY "day", collector, measure
    """)
    s.table("completeness_collector", collector, shown=bool(collector))
    rejects = wh.rows("""
        SELECT subject AS source, detail AS kind_and_reason, sum(numerator) AS rejected, sum(denominator) AS records
        FROM marts.data_completeness WHERE grain = 'source' AND measure = 'rejected_records'
        GROUP BY ALL ORDER BY rejected DESC, source
    """)
    s.table("completeness_rejects", rejects, shown=bool(rejects))
    empty = wh.rows("""
        SELECT "day", subject AS source, detail AS why, numerator AS intervals, denominator AS of_intervals
        FROM marts.data_completeness WHERE grain = 'source' AND measure = 'intervals_loaded_nothing'
        ORDER BY "day", source, why
    """)
    s.table("completeness_empty_intervals", empty, shown=bool(empty))
    s.note(
        "Accesses a cache made to an origin to stage a file in belong to no job and are counted "
        "apart (cache stage-in). Until the collector records reconciled hit/miss evidence every "
        "cache access counts as g-stream only. A provisional day can still change: jobs that "
        "ended later may yet be joined to its accesses, or their records arrive late (final "
        "from the day after it plus dbt vars job_lateness_days, and max_wall_days for servers); "
        "completeness alerts judge final days only. Source: marts.data_completeness."
    )


SPEC = SectionSpec(
    id="completeness",
    title="Data completeness",
    intro="What share of what happened reached tierlens and was joined: jobs tagged by a plugin, jobs "
    "whose file accesses were found (exactly through the identity the plugin handed the job, or "
    "inferred from host and time), accesses and bytes that joined no job, what the collector "
    "lost, the records rejected on loading, and the scheduled ingest intervals that brought nothing "
    "(outside the source's window, no new records, its files missing, unreachable).",
    body=body,
    marts=("data_completeness",),
    group=OPERATIONS,
    tables=(
        _BY_CLUSTER.spec(),
        _BY_SERVER.spec(),
        TableSpec(
            "completeness_collector",
            "Collector losses",
            (
                Column("day", "day"),
                Column("collector", "collector"),
                Column("measure", "what"),
                Column("numerator", "count", "int"),
                Column("denominator", "of", "int"),
                Column("share", "share", "pct"),
            ),
        ),
        TableSpec(
            "completeness_rejects",
            "Rejected records by source and reason",
            (
                Column("source", "source"),
                Column("kind_and_reason", "record: reason"),
                Column("rejected", "rejected", "int"),
                Column("records", "records in its batches", "int"),
            ),
        ),
        TableSpec(
            "completeness_empty_intervals",
            "Scheduled ingest intervals that loaded nothing",
            (
                Column("day", "day"),
                Column("source", "source"),
                Column("why", "why"),
                Column("intervals", "intervals", "int"),
                Column("of_intervals", "of intervals run", "int"),
            ),
        ),
    ),
)
