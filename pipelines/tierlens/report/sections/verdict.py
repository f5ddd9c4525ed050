"""The verdict that opens the report: how much of the data is behind its figures, per week."""

from __future__ import annotations

from .. import fmt
from ..page import Column
from ..reader import MartReader
from ..spec import OPERATIONS, SectionOut, SectionSpec, TableSpec
from .common import share_sql


def _verdict(r: dict) -> str:
    parts = [
        f"{fmt.pct(r['cpu_hours_tagged'])} of CPU hours tagged" if r["cpu_hours"] else "no jobs",
        f"{fmt.pct(r['bytes_joined'])} of bytes joined to jobs"
        if r["bytes_joined"] is not None
        else "no file accesses",
    ]
    if r["kernel_drops"]:
        parts.append(f"{fmt.integer(r['kernel_drops'])} datagrams dropped by the kernel")
    if r["rejected_records"]:
        parts.append(f"{fmt.integer(r['rejected_records'])} records rejected")
    text = ", ".join(parts)
    return text + " (provisional: jobs still running may add to it)" if r["provisional"] else text


def body(wh: MartReader, s: SectionOut) -> None:
    rows = wh.rows(f"""
        SELECT cast(date_trunc('week', "day") AS date) AS week_start,
               {share_sql("cpu_hours_tagged")} AS cpu_hours_tagged,
               sum(denominator) FILTER (WHERE measure = 'cpu_hours_tagged') AS cpu_hours,
               {share_sql("bytes_joined")} AS bytes_joined,
               sum(numerator) FILTER (WHERE measure = 'kernel_drops') AS kernel_drops,
               sum(numerator) FILTER (WHERE measure = 'rejected_records') AS rejected_records,
               bool_or(provisional) AS provisional
        FROM marts.data_completeness GROUP BY ALL ORDER BY week_start
    """)
    for r in rows:
        r["verdict"] = _verdict(r)
        s.fact(f"Week of {fmt.text(r['week_start'])}", r["verdict"])
    s.table("verdict", rows)
    s.note("Source: marts.data_completeness (section Data completeness below has the detail).")


SPEC = SectionSpec(
    id="verdict",
    title="How much of the data is behind these figures",
    intro="One line per week (ISO weeks, UTC): the share of CPU hours from jobs a plugin tagged with "
    "their storage and arm, and the share of the bytes read from XRootD servers that joined to a "
    "job (exactly or by inference). What is missing is missing from every figure below.",
    body=body,
    marts=("data_completeness",),
    group=OPERATIONS,
    tables=(
        TableSpec(
            "verdict",
            "Verdict per week",
            (
                Column("week_start", "week starting"),
                Column("cpu_hours_tagged", "CPU hours tagged", "pct"),
                Column("cpu_hours", "CPU hours", "hours"),
                Column("bytes_joined", "bytes joined", "pct"),
                Column("kernel_drops", "kernel drops", "int"),
                Column("rejected_records", "rejected", "int"),
                Column("provisional", "provisional"),
                Column("verdict", "verdict"),
            ),
            shown=False,
        ),
    ),
)
