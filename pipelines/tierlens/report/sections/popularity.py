"""File popularity, the SLAC caching algorithms' view (marts.file_popularity)."""

from __future__ import annotations

from .. import fmt, plots
from ..page import Column
from ..period import ReportPeriod
from ..reader import MartReader
from ..spec import ANALYSIS, PlotSpec, SectionOut, SectionSpec, TableSpec

PERIODS = range(1, 11)
TOP = 25


def _days(n: int) -> str:
    return f"{n} day{'s' if n != 1 else ''}"


def _window_label(recent_days: int | None, period: ReportPeriod | None) -> str:
    """The recent window as the data cover it: a 5-day window over a report of 3 days holds the
    reads of those 3 days, and saying "the last 5 days" would claim two days nobody measured."""
    if recent_days is None:
        return "Files read in the recent window"
    if period is None or period.days >= recent_days:
        return f"Files read in the last {_days(recent_days)}"
    return (
        f"Files read in the last {_days(period.days)} (the report's whole period, shorter than the "
        f"{recent_days}-day window)"
    )


def body(wh: MartReader, s: SectionOut) -> None:
    counts = [r["reads_recent"] for r in wh.rows("SELECT reads_recent FROM marts.file_popularity")]
    periods = ", ".join(f"accesses_p{p:02d}" for p in PERIODS)
    top = wh.rows(f"""
        SELECT popularity_rank, file_lfn, file_size_bytes / 1e9 AS file_gb, reads_recent,
               mean_read_fraction, score, {periods}, reference_time
        FROM marts.file_popularity ORDER BY popularity_rank LIMIT {TOP}
    """)
    totals = wh.rows("""
        SELECT count(*) AS files, sum(reads_recent) AS reads, any_value(recent_days) AS recent_days,
               any_value(reference_time) AS reference_time
        FROM marts.file_popularity
    """)[0]
    reads = sorted(counts, reverse=True)
    top_share = sum(reads[: max(1, len(reads) // 10)]) / (sum(reads) or 1)
    s.fact("As of", fmt.text(totals["reference_time"]))
    s.fact(_window_label(totals["recent_days"], s.period), fmt.integer(totals["files"]))
    s.fact("Reads in that window", fmt.integer(totals["reads"]))
    s.fact("Share of reads going to the top 10 % of files", fmt.pct(top_share))
    s.figure("rank_frequency", counts)
    s.table("file_popularity_top", top)
    s.note(
        "P1 … P10: accesses in each 12-hour period before the reference time, P1 the latest. "
        "Source: marts.file_popularity (all files there and in sql/file_popularity.sql)."
    )


SPEC = SectionSpec(
    id="popularity",
    title="File popularity",
    intro="Which files are hot? The SLAC caching algorithms' view: accesses in each of the last ten "
    "12-hour periods, reads in the recent window and the fraction of each file they read, ranked "
    "by reads × fraction (SLAC algorithm 2).",
    body=body,
    marts=("file_popularity",),
    empty_hint="No file accesses yet.",
    group=ANALYSIS,
    tables=(
        TableSpec(
            "file_popularity_top",
            f"The {TOP} highest-ranked files",
            (
                Column("popularity_rank", "rank", "int"),
                Column("file_lfn", "file"),
                Column("file_gb", "GB", "gb"),
                Column("reads_recent", "recent reads", "int"),
                Column("mean_read_fraction", "mean fraction read", "pct"),
                Column("score", "score", "num"),
                *[Column(f"accesses_p{p:02d}", f"P{p}", "int") for p in PERIODS],
            ),
        ),
    ),
    plots=(
        PlotSpec(
            "rank_frequency",
            plots.popularity_distribution,
            "Rank-frequency plot of reads per file",
            "Reads per file in the recent window against the file's rank (log-log): a straight line is "
            "Zipf-like popularity, the case where a small cache holds most of the reads.",
            "file_popularity_top",
        ),
    ),
)
