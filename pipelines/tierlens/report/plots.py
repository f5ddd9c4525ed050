"""The report's figures, one small function per figure.

Every function takes plain Python rows, draws on a fresh ``Figure`` attached to an Agg canvas
(``FigureCanvasAgg``, explicitly: no pyplot, no global backend switch, safe in a server or a
notebook) and returns a ``data:image/png;base64,...`` URI to embed in the HTML.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

# SLAC poster colours: blue = delivered by the cache, green = staged into it.
BLUE = "#1f5fbf"
GREEN = "#2e9e44"
ARM_COLOURS = ("#d9822b", "#1f5fbf", "#7a4fb5", "#2e9e44", "#888888")
MEAN_MARKER_COLOUR = "#222222"
LIMIT_COLOUR = "#c0392b"

_RC = {
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


def _new_figure(width: float = 9.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _to_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _f(value: Any) -> float:
    """Float for plotting; NULL becomes NaN (a gap in a line, no bar)."""
    if value is None:
        return math.nan
    return float(value)


def _date_axis(ax) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))


def _marker(n_points: int) -> str | None:
    return "o" if n_points <= 60 else None


def efficiency_by_storage(groups: Sequence[dict[str, Any]]) -> str:
    """Grouped bars: efficiency (ratio of sums) per storage type, one bar per A/B arm.

    ``groups`` rows have ``storage_label``, ``arm_label``, ``efficiency`` and
    ``mean_job_efficiency``; the job-weighted mean job efficiency is drawn as a diamond on its bar.
    """
    with matplotlib.rc_context(_RC):
        storages = list(dict.fromkeys(g["storage_label"] for g in groups))
        arms = list(dict.fromkeys(g["arm_label"] for g in groups))
        by_key = {(g["storage_label"], g["arm_label"]): g for g in groups}
        fig = _new_figure(max(6.0, min(14.0, 1.2 * len(storages) * max(1, len(arms)) + 3)), 4.2)
        ax = fig.add_subplot()
        width = 0.8 / max(1, len(arms))
        top = 1.0
        for i, arm in enumerate(arms):
            xs, effs, means = [], [], []
            for j, storage in enumerate(storages):
                row = by_key.get((storage, arm))
                if row is None:
                    continue
                xs.append(j - 0.4 + width * (i + 0.5))
                effs.append(_f(row["efficiency"]))
                means.append(_f(row["mean_job_efficiency"]))
            colour = ARM_COLOURS[i % len(ARM_COLOURS)]
            bars = ax.bar(xs, effs, width * 0.9, color=colour, label=f"{arm}: Σcpu / Σ(wall×cores)")
            ax.bar_label(bars, labels=[("" if math.isnan(e) else f"{e * 100:.1f}%") for e in effs],
                         padding=2, fontsize=8)
            ax.scatter(xs, means, marker="D", s=22, color=MEAN_MARKER_COLOUR, zorder=3,
                       label="mean job efficiency (job-weighted)" if i == 0 else None)
            top = max([top] + [v for v in effs + means if not math.isnan(v)])
        ax.axhline(1.0, color=LIMIT_COLOUR, linestyle="--", linewidth=1, label="100 %")
        ax.set_xticks(range(len(storages)), storages)
        ax.set_ylim(0, top * 1.15)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
        ax.set_ylabel("CPU efficiency")
        ax.set_xlabel("storage type of the job's scratch")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return _to_data_uri(fig)


def ab_daily(days: Sequence[dict[str, Any]]) -> str:
    """Two lines over days: efficiency of arm A and of arm B (ab_comparison, day grain)."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.8)
        ax = fig.add_subplot()
        xs = [d["period_start"] for d in days]
        marker = _marker(len(xs))
        ax.plot(xs, [_f(d["efficiency_a"]) for d in days], color=ARM_COLOURS[0], marker=marker,
                markersize=4, label="arm A")
        ax.plot(xs, [_f(d["efficiency_b"]) for d in days], color=ARM_COLOURS[1], marker=marker,
                markersize=4, label="arm B")
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))
        ax.set_ylabel("CPU efficiency (Σcpu / Σ(wall×cores))")
        _date_axis(ax)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def cache_gb_per_hour(hours_: Sequence[dict[str, Any]]) -> str:
    """The SLAC plot: GB/hour delivered from the cache (blue) and staged into it (green)."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.8)
        ax = fig.add_subplot()
        xs = [h["hour"] for h in hours_]
        marker = _marker(len(xs))
        ax.plot(xs, [_f(h["gb_delivered_from_cache"]) for h in hours_], color=BLUE, marker=marker,
                markersize=3, label="GB delivered from cache")
        ax.plot(xs, [_f(h["gb_staged_in"]) for h in hours_], color=GREEN, marker=marker,
                markersize=3, label="GB staged in")
        ax.set_ylabel("GB / hour")
        ax.set_ylim(bottom=0)
        _date_axis(ax)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def cache_hit_ratio(hours_: Sequence[dict[str, Any]]) -> str:
    """Hit ratio per hour, by requests and by bytes, all cache servers together."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.2)
        ax = fig.add_subplot()
        xs = [h["hour"] for h in hours_]
        marker = _marker(len(xs))
        ax.plot(xs, [_f(h["hit_ratio_requests"]) for h in hours_], color="#7a4fb5", marker=marker,
                markersize=3, label="hit ratio by requests")
        ax.plot(xs, [_f(h["hit_ratio_bytes"]) for h in hours_], color=BLUE, marker=marker,
                markersize=3, linestyle="--", label="hit ratio by bytes")
        ax.set_ylim(0, 1.05)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
        ax.set_ylabel("hit ratio")
        _date_axis(ax)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def ab_difference_with_ci(days: Sequence[dict[str, Any]]) -> str:
    """Efficiency difference B − A per day with its 95 % bootstrap interval as an error bar.

    ``days`` rows have ``period_start``, ``efficiency_difference``, ``efficiency_ci_low``,
    ``efficiency_ci_high`` and ``enough_data``; days without enough data are drawn hollow and grey.
    """
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.8)
        ax = fig.add_subplot()
        for enough, colour, label in ((True, ARM_COLOURS[1], "B − A, enough data"),
                                      (False, "#999999", "B − A, not enough data to conclude")):
            rows = [d for d in days if bool(d.get("enough_data")) == enough
                    and d.get("efficiency_difference") is not None]
            if not rows:
                continue
            xs = [d["period_start"] for d in rows]
            ys = [_f(d["efficiency_difference"]) for d in rows]
            lo = [y - _f(d["efficiency_ci_low"]) if d.get("efficiency_ci_low") is not None else 0.0
                  for y, d in zip(ys, rows)]
            hi = [_f(d["efficiency_ci_high"]) - y if d.get("efficiency_ci_high") is not None else 0.0
                  for y, d in zip(ys, rows)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=colour, ecolor=colour, capsize=3,
                        markersize=5, markerfacecolor=colour if enough else "white", label=label)
        ax.axhline(0.0, color=LIMIT_COLOUR, linestyle="--", linewidth=1)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=1))
        ax.set_ylabel("efficiency B − A (points)")
        _date_axis(ax)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def occupancy_efficiency(rows: Sequence[dict[str, Any]]) -> str:
    """Per storage type: efficiency over all node-hours beside the fully occupied ones only."""
    with matplotlib.rc_context(_RC):
        storages = list(dict.fromkeys(r["storage_type"] for r in rows))
        by_key = {(r["storage_type"], r["scope"]): r for r in rows}
        fig = _new_figure(max(6.0, min(12.0, 1.1 * len(storages) + 3)), 4.0)
        ax = fig.add_subplot()
        top = 1.0
        for i, (scope, label) in enumerate((("all", "all node-hours"),
                                            ("fully_occupied", "fully occupied node-hours"))):
            xs = [j - 0.2 + 0.4 * i for j in range(len(storages))]
            ys = [_f(by_key.get((s, scope), {}).get("efficiency")) for s in storages]
            bars = ax.bar(xs, ys, 0.38, color=ARM_COLOURS[i], label=label)
            ax.bar_label(bars, labels=[("" if math.isnan(y) else f"{y * 100:.1f}%") for y in ys],
                         padding=2, fontsize=8)
            top = max([top] + [y for y in ys if not math.isnan(y)])
        ax.set_xticks(range(len(storages)), [str(s) for s in storages])
        ax.set_ylim(0, top * 1.15)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
        ax.set_ylabel("CPU efficiency (Σcpu / Σ allocated core-time)")
        ax.set_xlabel("storage type of the node's scratch")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def popularity_distribution(counts: Sequence[float]) -> str:
    """Rank/frequency plot of recent reads per file (log-log), most read file first."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.6)
        ax = fig.add_subplot()
        ys = sorted((float(c) for c in counts if c), reverse=True)
        ax.plot(range(1, len(ys) + 1), ys, color=BLUE, marker=_marker(len(ys)), markersize=3)
        if ys:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("file rank (1 = most read)")
        ax.set_ylabel("reads in the recent window")
        return _to_data_uri(fig)


def fairness_distribution(rows: Sequence[dict[str, Any]]) -> str:
    """Histogram of Jain's fairness index over server × window groups, one series per server."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.6)
        ax = fig.add_subplot()
        servers = list(dict.fromkeys(r["server_host"] for r in rows))
        data = [[_f(r["jain_index"]) for r in rows if r["server_host"] == s and r["jain_index"] is not None]
                for s in servers]
        ax.hist(data, bins=[i / 20 for i in range(21)], label=[str(s) for s in servers],
                color=[ARM_COLOURS[i % len(ARM_COLOURS)] for i in range(len(servers))], stacked=True)
        ax.set_xlim(0, 1.0)
        ax.set_xlabel("Jain's fairness index of the clients' bandwidths (1 = perfectly fair)")
        ax.set_ylabel("server × window groups")
        ax.legend(loc="upper left", fontsize=8)
        return _to_data_uri(fig)


def measured_vs_predicted(rows: Sequence[dict[str, Any]]) -> str:
    """Scatter of measured (x) against predicted (y) efficiency with 95 % bars and the diagonal;
    open markers for the leave-one-out predictions."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(6.5, 5.0)
        ax = fig.add_subplot()
        xs = [_f(r["measured_efficiency"]) for r in rows]
        ys = [_f(r["predicted_efficiency"]) for r in rows]
        lo = [y - _f(r["efficiency_low"]) for y, r in zip(ys, rows)]
        hi = [_f(r["efficiency_high"]) - y for y, r in zip(ys, rows)]
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=ARM_COLOURS[0], capsize=3, label="predicted (95 %)")
        loo = [_f(r["loo_predicted_efficiency"]) for r in rows]
        ax.scatter(xs, loo, facecolors="none", edgecolors=ARM_COLOURS[1], label="left out of the fit")
        for x, y, r in zip(xs, ys, rows):
            ax.annotate(f"{r['storage_type']} {r['ab_arm'] or ''}".strip(), (x, y), fontsize=7,
                        xytext=(4, -10), textcoords="offset points")
        values = [v for v in xs + ys + loo if not math.isnan(v)]
        a, b = min(values) - 0.03, max(values) + 0.03
        ax.plot([a, b], [a, b], color="grey", linewidth=1, linestyle="--", label="measured = predicted")
        ax.set_xlim(a, b)
        ax.set_ylim(a, b)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
        ax.set_xlabel("measured CPU efficiency")
        ax.set_ylabel("predicted CPU efficiency")
        ax.legend(loc="upper left", fontsize=8)
        return _to_data_uri(fig)


def efficiency_timeline_with_changes(days: Sequence[dict[str, Any]], changes: Sequence[dict[str, Any]]) -> str:
    """Daily site efficiency (Σcpu / Σ(wall×cores)) with a vertical line at each recorded change."""
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.8)
        ax = fig.add_subplot()
        xs = [d["day"] for d in days]
        ax.plot(xs, [_f(d["efficiency"]) for d in days], color=BLUE, marker=_marker(len(xs)), markersize=4,
                label="site, per day")
        for i, c in enumerate(changes):
            ax.axvline(c["changed_at"], color=LIMIT_COLOUR, linestyle="--", linewidth=1,
                       label="change" if i == 0 else None)
            ax.annotate(str(c["label"]), (c["changed_at"], 1.0), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=7, color=LIMIT_COLOUR)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))
        ax.set_ylabel("CPU efficiency")
        _date_axis(ax)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return _to_data_uri(fig)


def efficiency_by_input_size(rows: Sequence[dict[str, Any]]) -> str:
    """IFCA's plot: efficiency (ratio of sums) against bytes read per job, one line per series.

    ``rows`` have ``series`` (e.g. a storage type, or 'before'/'after' a change), ``bin`` (label,
    in size order) and ``efficiency``.
    """
    with matplotlib.rc_context(_RC):
        fig = _new_figure(9.0, 3.8)
        ax = fig.add_subplot()
        bins = list(dict.fromkeys(r["bin"] for r in rows))
        series = list(dict.fromkeys(r["series"] for r in rows))
        by_key = {(r["series"], r["bin"]): r for r in rows}
        for i, name in enumerate(series):
            pts = [(j, _f(by_key[(name, b)]["efficiency"])) for j, b in enumerate(bins) if (name, b) in by_key]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=4,
                    color=ARM_COLOURS[i % len(ARM_COLOURS)], label=str(name))
        ax.set_xticks(range(len(bins)), bins)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))
        ax.set_ylabel("CPU efficiency")
        ax.set_xlabel("bytes read per job")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return _to_data_uri(fig)
