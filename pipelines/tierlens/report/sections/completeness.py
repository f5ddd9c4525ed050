"""Data completeness: what share of what happened reached tierlens and was joined (marts.data_completeness)."""

from __future__ import annotations

from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, SectionOut, SectionSpec, TableSpec
from .common import share_sql


def _shares(*measures: str) -> str:
    return ", ".join(f"{share_sql(m)} AS {m}" for m in measures)


# A day is provisional while jobs that could still add to it may be running (the mart's final_from).
_STATUS = "CASE WHEN bool_or(provisional) THEN 'provisional' ELSE 'final' END AS status"


def body(wh: MartReader, s: SectionOut) -> None:
    s.table(
        "completeness_by_cluster",
        wh.rows(f"""
        SELECT "day", subject AS cluster,
               sum(denominator) FILTER (WHERE measure = 'jobs_tagged') AS jobs,
               sum(denominator) FILTER (WHERE measure = 'cpu_hours_tagged') AS cpu_hours,
               {
            _shares(
                "jobs_tagged",
                "cpu_hours_tagged",
                "jobs_with_exact_accesses",
                "jobs_with_inferred_accesses_only",
                "jobs_without_accesses",
            )
        },
               sum(numerator) FILTER (WHERE measure = 'tags_without_job') AS tags_without_job,
               {_STATUS}
        FROM marts.data_completeness WHERE grain = 'cluster' GROUP BY ALL ORDER BY "day", cluster
    """),
    )
    s.table(
        "completeness_by_server",
        wh.rows(f"""
        SELECT "day", subject AS server,
               sum(denominator) FILTER (WHERE measure = 'accesses_exact') AS accesses,
               {
            _shares(
                "accesses_exact",
                "accesses_inferred",
                "accesses_unmatched",
                "bytes_joined",
                "cache_accesses_gstream_only",
                "sequence_gaps",
            )
        },
               sum(numerator) FILTER (WHERE measure = 'cache_stage_in_accesses') AS cache_stage_in_accesses,
               {_STATUS}
        FROM marts.data_completeness WHERE grain = 'server' GROUP BY ALL ORDER BY "day", server
    """),
    )
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
        TableSpec(
            "completeness_by_cluster",
            "Jobs per day and cluster",
            (
                Column("day", "day"),
                Column("cluster", "cluster"),
                Column("jobs", "jobs", "int"),
                Column("cpu_hours", "CPU hours", "hours"),
                Column("jobs_tagged", "jobs tagged", "pct"),
                Column("cpu_hours_tagged", "CPU hours tagged", "pct"),
                Column("jobs_with_exact_accesses", "accesses exact", "pct"),
                Column("jobs_with_inferred_accesses_only", "inferred only", "pct"),
                Column("jobs_without_accesses", "no accesses", "pct"),
                Column("tags_without_job", "tags without job", "int"),
                Column("status", "figures"),
            ),
        ),
        TableSpec(
            "completeness_by_server",
            "File accesses per day and server",
            (
                Column("day", "day"),
                Column("server", "server"),
                Column("accesses", "accesses", "int"),
                Column("accesses_exact", "exact", "pct"),
                Column("accesses_inferred", "inferred", "pct"),
                Column("accesses_unmatched", "no job", "pct"),
                Column("bytes_joined", "bytes joined", "pct"),
                Column("cache_accesses_gstream_only", "cache: g-stream only", "pct"),
                Column("sequence_gaps", "sequence gaps", "pct"),
                Column("cache_stage_in_accesses", "cache stage-in", "int"),
                Column("status", "figures"),
            ),
        ),
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
