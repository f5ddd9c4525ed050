"""Client fairness per server and time window, Fermilab style (marts.client_fairness)."""

from __future__ import annotations

from .. import plots
from ..page import Column
from ..reader import MartReader
from ..spec import ANALYSIS, PlotSpec, SectionOut, SectionSpec, TableSpec


def body(wh: MartReader, s: SectionOut) -> None:
    groups = wh.rows("""
        SELECT server_host, window_start, clients, jain_index, bandwidth_cv, bandwidth_ratio,
               completion_time_ratio, mean_bandwidth_mb_s
        FROM marts.client_fairness ORDER BY server_host, window_start
    """)
    servers = wh.rows("""
        SELECT server_host, count(*) AS windows, avg(clients) AS mean_clients,
               median(jain_index) AS median_jain_index, min(jain_index) AS worst_jain_index,
               median(bandwidth_cv) AS median_bandwidth_cv, median(bandwidth_ratio) AS median_bandwidth_ratio,
               median(completion_time_ratio) AS median_completion_time_ratio,
               median(mean_bandwidth_mb_s) AS median_client_mb_s
        FROM marts.client_fairness GROUP BY server_host ORDER BY median_jain_index, server_host
    """)
    s.figure("jain_index", groups)
    s.table("client_fairness_windows", groups)
    s.table("client_fairness_by_server", servers)
    s.note(
        "Fermilab found 49 Lustre clients within about 15 % of the mean bandwidth, the slowest taking "
        "1.77 times as long as the fastest. A client's bandwidth = its bytes read / its seconds of "
        "open access in the window; the completion-time ratio compares clients only when they read "
        "similar amounts. Source: marts.client_fairness."
    )


SPEC = SectionSpec(
    id="fairness",
    title="Client fairness",
    intro="Does each storage server share its bandwidth fairly among the clients reading from it at "
    "the same time? As in the Fermilab study: the spread of per-client bandwidth around the "
    "mean, the fastest/slowest ratio and Jain's fairness index, per server and time window.",
    body=body,
    marts=("client_fairness",),
    empty_hint="No window had two or more clients reading from one server.",
    group=ANALYSIS,
    tables=(
        TableSpec(
            "client_fairness_windows",
            "Per server and window",
            (
                Column("server_host", "server"),
                Column("window_start", "window start"),
                Column("clients", "clients", "int"),
                Column("jain_index", "Jain's index", "num"),
                Column("bandwidth_cv", "bandwidth CV", "pct"),
                Column("bandwidth_ratio", "fastest / slowest", "ratio"),
                Column("completion_time_ratio", "slowest / fastest time", "ratio"),
                Column("mean_bandwidth_mb_s", "mean MB/s", "num"),
            ),
            shown=False,
        ),
        TableSpec(
            "client_fairness_by_server",
            "By server (medians over windows)",
            (
                Column("server_host", "server"),
                Column("windows", "windows", "int"),
                Column("mean_clients", "mean clients", "num"),
                Column("median_jain_index", "median Jain's index", "num"),
                Column("worst_jain_index", "worst Jain's index", "num"),
                Column("median_bandwidth_cv", "median bandwidth spread (CV)", "pct"),
                Column("median_bandwidth_ratio", "median fastest / slowest bandwidth", "ratio"),
                Column("median_completion_time_ratio", "median slowest / fastest time", "ratio"),
                Column("median_client_mb_s", "median client MB/s", "num"),
            ),
        ),
    ),
    plots=(
        PlotSpec(
            "jain_index",
            plots.fairness_distribution,
            "Histogram of Jain's fairness index over server and time-window groups",
            "Jain's fairness index of the clients' bandwidths for each server and time window "
            "(1 = every client got the same bandwidth; 1/n = one client got everything).",
            "client_fairness_windows",
        ),
    ),
)
