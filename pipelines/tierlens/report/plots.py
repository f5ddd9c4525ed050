"""The report's figures, one small function per figure.

Every function takes plain Python rows, draws on a fresh ``Figure`` attached to an Agg canvas
(``FigureCanvasAgg``, explicitly: no pyplot, no global backend switch, safe in a server or a
notebook) under the report's style, and (through ``_png``) returns a ``data:image/png;base64,...``
URI to embed in the HTML.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

import matplotlib
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, DateFormatter, DayLocator, date2num
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter

from . import labels

# SLAC poster colours: blue = delivered by the cache, green = staged into it.
BLUE = "#1f5fbf"
GREEN = "#2e9e44"
ARM_COLOURS = ("#d9822b", "#1f5fbf", "#7a4fb5", "#2e9e44", "#888888")
#: More categories than ARM_COLOURS (six storage types, many servers): Tableau's ten, then twenty.
_MANY_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
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

P = ParamSpec("P")


def _png(draw: Callable[P, Figure]) -> Callable[P, str]:
    """Draw under the report's style and return the figure as a PNG data URI."""

    @functools.wraps(draw)
    def render(*args: P.args, **kwargs: P.kwargs) -> str:
        with matplotlib.rc_context(_RC):
            return _to_data_uri(draw(*args, **kwargs))

    return render


def _axes(width: float = 9.0, height: float = 3.8) -> Axes:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig.add_subplot()


def _to_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _f(value: Any) -> float:
    """Float for plotting; NULL becomes NaN (a gap in a line, no bar)."""
    if value is None:
        return math.nan
    return float(value)


def colours(n: int) -> list[str]:
    """``n`` colours, no two alike: a category keeps its colour only within one figure, so two
    series must never share one (the sixth storage type drew in the first one's colour)."""
    if n <= len(ARM_COLOURS):
        return list(ARM_COLOURS[:n])
    if n <= len(_MANY_COLOURS):
        return list(_MANY_COLOURS[:n])
    cmap = matplotlib.colormaps["tab20"] if n <= 20 else matplotlib.colormaps["turbo"]
    return [matplotlib.colors.to_hex(cmap(i / max(1, n - 1) if n > 20 else i)) for i in range(n)]


def _is_daily(xs: Sequence[Any]) -> bool:
    """Whether ``xs`` are days: dates, or datetimes at midnight."""
    values = [x for x in xs if x is not None]
    return bool(values) and all(
        (isinstance(x, dt.date) and not isinstance(x, dt.datetime))
        or (isinstance(x, dt.datetime) and (x.hour, x.minute, x.second, x.microsecond) == (0, 0, 0, 0))
        for x in values
    )


def _date_axis(ax: Axes, xs: Sequence[Any] = ()) -> None:
    """Dates on x. Days get one tick per day (or per few days), never hours between two points,
    and half a day of margin each side so a short series does not sit on the frame."""
    if _is_daily(xs):
        days = sorted({x if not isinstance(x, dt.datetime) else x.date() for x in xs if x is not None})
        ax.xaxis.set_major_locator(DayLocator(interval=max(1, math.ceil(len(days) / 10))))
        ax.xaxis.set_major_formatter(DateFormatter("%Y-%m-%d" if len(days) <= 3 else "%m-%d"))
        first, last = date2num(days[0]), date2num(days[-1])
        ax.set_xlim(first - 0.5, last + 0.5)
        return
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    # the year alone beside the axis: its default offset names the last tick's day, which the
    # margin puts after the data (hours to 23:00 on the 3rd read '2026-Oct-04')
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, offset_formats=["", "%Y", "%Y", "%Y", "%Y", "%Y"]))
    _within_the_data(ax, xs)


def _within_the_data(ax: Axes, xs: Sequence[Any]) -> None:
    """The axis from the first time to the last with half a step's margin (never a tick at the
    midnight after the last hour, which would show a day the data do not reach)."""
    times = sorted(date2num(x) for x in xs if x is not None)
    if len(times) < 2:
        return
    step = min(b - a for a, b in zip(times, times[1:]) if b > a) if times[-1] > times[0] else 0.0
    if step:
        ax.set_xlim(times[0] - step / 2, times[-1] + step / 2)


def _share_from_zero(ax: Axes) -> None:
    """A share's axis from 0 to at least 100 %: a zoomed axis (77-80 %) makes a small difference
    look large."""
    top = max(1.0, ax.get_ylim()[1])
    ax.set_ylim(0, top * 1.02 if top > 1.0 else 1.05)


#: Differences of two shares in percentage points: 0.029 -> '+2.9', beside a label saying points.
POINTS = FuncFormatter(lambda v, _pos: f"{v * 100:+.1f}" if abs(v) > 1e-12 else "0")


def _percent(axis: Axis, decimals: int | None) -> None:
    axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=decimals))


def _legend_above(ax: Axes) -> None:
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)


def _marker(n_points: int) -> str | None:
    return "o" if n_points <= 60 else None


@dataclass(frozen=True)
class _Line:
    key: str
    label: str
    colour: str
    linestyle: str = "-"


def _lines_over_time(
    rows: Sequence[dict[str, Any]],
    x_key: str,
    lines: Sequence[_Line],
    *,
    ylabel: str,
    height: float = 3.8,
    markersize: float = 3,
) -> Axes:
    """One line per ``lines`` entry over the dates or times in ``x_key``; the caller adds the legend."""
    ax = _axes(9.0, height)
    xs = [r[x_key] for r in rows]
    marker = _marker(len(xs))
    for line in lines:
        ax.plot(
            xs,
            [_f(r[line.key]) for r in rows],
            color=line.colour,
            marker=marker,
            markersize=markersize,
            linestyle=line.linestyle,
            label=line.label,
        )
    ax.set_ylabel(ylabel)
    _date_axis(ax, xs)
    return ax


def _labelled_bars(ax: Axes, xs: Sequence[float], heights: Sequence[float], width: float, **style: Any) -> None:
    """Bars with their value as a percentage on top (none for a missing value)."""
    bars = ax.bar(xs, heights, width, **style)
    ax.bar_label(bars, labels=[("" if math.isnan(h) else f"{h * 100:.1f}%") for h in heights], padding=2, fontsize=8)


def _efficiency_bars_axes(ax: Axes, top: float, xlabel: str, ylabel: str) -> None:
    ax.set_ylim(0, top * 1.15)
    _percent(ax.yaxis, 0)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", visible=False)


@_png
def efficiency_by_storage(groups: Sequence[dict[str, Any]]) -> Figure:
    """Grouped bars: efficiency (ratio of sums) per storage type, one bar per A/B arm.

    ``groups`` rows have ``storage_label``, ``arm_label``, ``efficiency`` and
    ``mean_job_efficiency``; the job-weighted mean job efficiency is drawn as a diamond on its bar.
    """
    storages = list(dict.fromkeys(g["storage_label"] for g in groups))
    arms = list(dict.fromkeys(g["arm_label"] for g in groups))
    by_key = {(g["storage_label"], g["arm_label"]): g for g in groups}
    ax = _axes(max(6.0, min(14.0, 1.2 * len(storages) * max(1, len(arms)) + 3)), 4.2)
    width = 0.8 / max(1, len(arms))
    top = 1.0
    palette = colours(len(arms))
    for i, arm in enumerate(arms):
        xs, effs, means = [], [], []
        for j, storage in enumerate(storages):
            row = by_key.get((storage, arm))
            if row is None:
                continue
            xs.append(j - 0.4 + width * (i + 0.5))
            effs.append(_f(row["efficiency"]))
            means.append(_f(row["mean_job_efficiency"]))
        _labelled_bars(ax, xs, effs, width * 0.9, color=palette[i], label=f"{arm}: Σcpu / Σ(wall×cores)")
        ax.scatter(
            xs,
            means,
            marker="D",
            s=22,
            color=MEAN_MARKER_COLOUR,
            zorder=3,
            label="mean job efficiency (job-weighted)" if i == 0 else None,
        )
        top = max([top] + [v for v in effs + means if not math.isnan(v)])
    ax.axhline(1.0, color=LIMIT_COLOUR, linestyle="--", linewidth=1, label="100 %")
    ax.set_xticks(range(len(storages)), storages)
    _efficiency_bars_axes(ax, top, "storage type of the job's scratch", "CPU efficiency")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return ax.figure


@_png
def ab_daily(days: Sequence[dict[str, Any]]) -> Figure:
    """Two lines over days: efficiency of arm A and of arm B (ab_comparison, day grain)."""
    ax = _lines_over_time(
        days,
        "period_start",
        (_Line("efficiency_a", "arm A", ARM_COLOURS[0]), _Line("efficiency_b", "arm B", ARM_COLOURS[1])),
        ylabel="CPU efficiency (Σcpu / Σ(wall×cores))",
        markersize=4,
    )
    _share_from_zero(ax)
    _percent(ax.yaxis, None)
    _legend_above(ax)
    return ax.figure


@_png
def cache_gb_per_hour(hours_: Sequence[dict[str, Any]]) -> Figure:
    """The SLAC plot: GB/hour delivered from the cache (blue) and staged into it (green)."""
    ax = _lines_over_time(
        hours_,
        "hour",
        (
            _Line("gb_delivered_from_cache", "GB delivered from cache", BLUE),
            _Line("gb_staged_in", "GB staged in", GREEN),
        ),
        ylabel="GB / hour",
    )
    ax.set_ylim(bottom=0)
    _legend_above(ax)
    return ax.figure


@_png
def cache_hit_ratio(hours_: Sequence[dict[str, Any]]) -> Figure:
    """Hit ratio per hour, by requests and by bytes, all cache servers together."""
    ax = _lines_over_time(
        hours_,
        "hour",
        (
            _Line("hit_ratio_requests", "hit ratio by requests", "#7a4fb5"),
            _Line("hit_ratio_bytes", "hit ratio by bytes", BLUE, "--"),
        ),
        ylabel="hit ratio",
        height=3.2,
    )
    ax.set_ylim(0, 1.05)
    _percent(ax.yaxis, 0)
    _legend_above(ax)
    return ax.figure


@_png
def ab_difference_with_ci(days: Sequence[dict[str, Any]]) -> Figure:
    """Efficiency difference B − A per day with its 95 % bootstrap interval as an error bar.

    ``days`` rows have ``period_start``, ``efficiency_difference``, ``efficiency_ci_low``,
    ``efficiency_ci_high`` and ``enough_data``; days without enough data are drawn hollow and grey.
    """
    ax = _axes(9.0, 3.8)
    for enough, colour, label in (
        (True, ARM_COLOURS[1], "B − A, enough data"),
        (False, "#999999", "B − A, not enough data to conclude"),
    ):
        rows = [d for d in days if bool(d.get("enough_data")) == enough and d.get("efficiency_difference") is not None]
        if not rows:
            continue
        xs = [d["period_start"] for d in rows]
        ys = [_f(d["efficiency_difference"]) for d in rows]
        lo = [
            y - _f(d["efficiency_ci_low"]) if d.get("efficiency_ci_low") is not None else 0.0 for y, d in zip(ys, rows)
        ]
        hi = [
            _f(d["efficiency_ci_high"]) - y if d.get("efficiency_ci_high") is not None else 0.0
            for y, d in zip(ys, rows)
        ]
        ax.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            fmt="o",
            color=colour,
            ecolor=colour,
            capsize=3,
            markersize=5,
            markerfacecolor=colour if enough else "white",
            label=label,
        )
    ax.axhline(0.0, color=LIMIT_COLOUR, linestyle="--", linewidth=1)
    ax.yaxis.set_major_formatter(POINTS)
    ax.set_ylabel("efficiency B − A (percentage points)")
    _date_axis(ax, [d["period_start"] for d in days if d.get("efficiency_difference") is not None])
    _legend_above(ax)
    return ax.figure


@_png
def occupancy_efficiency(rows: Sequence[dict[str, Any]]) -> Figure:
    """Per storage type: efficiency over all node-hours beside the fully occupied ones only."""
    storages = list(dict.fromkeys(r["storage_type"] for r in rows))
    by_key = {(r["storage_type"], r["scope"]): r for r in rows}
    ax = _axes(max(6.0, min(12.0, 1.1 * len(storages) + 3)), 4.0)
    top = 1.0
    for i, (scope, label) in enumerate((("all", "all node-hours"), ("fully_occupied", "fully occupied node-hours"))):
        ys = [_f(by_key.get((s, scope), {}).get("efficiency")) for s in storages]
        _labelled_bars(
            ax, [j - 0.2 + 0.4 * i for j in range(len(storages))], ys, 0.38, color=ARM_COLOURS[i], label=label
        )
        top = max([top] + [y for y in ys if not math.isnan(y)])
    ax.set_xticks(range(len(storages)), [str(s) for s in storages])
    _efficiency_bars_axes(
        ax, top, "storage type of the node's scratch", "CPU efficiency (Σcpu / Σ allocated core-time)"
    )
    _legend_above(ax)
    return ax.figure


@_png
def popularity_distribution(counts: Sequence[float]) -> Figure:
    """Rank/frequency plot of recent reads per file (log-log), most read file first."""
    ax = _axes(9.0, 3.6)
    ys = sorted((float(c) for c in counts if c), reverse=True)
    ax.plot(range(1, len(ys) + 1), ys, color=BLUE, marker=_marker(len(ys)), markersize=3)
    if ys:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("file rank (1 = most read)")
    ax.set_ylabel("reads in the recent window")
    return ax.figure


@_png
def fairness_distribution(rows: Sequence[dict[str, Any]]) -> Figure:
    """Histogram of Jain's fairness index over server × window groups, one series per server."""
    ax = _axes(9.0, 3.6)
    servers = list(dict.fromkeys(r["server_host"] for r in rows))
    data = [
        [_f(r["jain_index"]) for r in rows if r["server_host"] == s and r["jain_index"] is not None] for s in servers
    ]
    ax.hist(
        data,
        bins=[i / 20 for i in range(21)],
        label=[str(s) for s in servers],
        color=colours(len(servers)),
        stacked=True,
    )
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of groups
    ax.set_xlim(0, 1.0)
    ax.set_xlabel("Jain's fairness index of the clients' bandwidths (1 = perfectly fair)")
    ax.set_ylabel("server × window groups")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


@_png
def measured_vs_predicted(rows: Sequence[dict[str, Any]]) -> Figure:
    """Scatter of measured (x) against predicted (y) efficiency with 95 % bars and the diagonal;
    open markers for the leave-one-out predictions."""
    ax = _axes(6.5, 5.0)
    xs = [_f(r["measured_efficiency"]) for r in rows]
    ys = [_f(r["predicted_efficiency"]) for r in rows]
    lo = [y - _f(r["efficiency_low"]) for y, r in zip(ys, rows)]
    hi = [_f(r["efficiency_high"]) - y for y, r in zip(ys, rows)]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=ARM_COLOURS[0], capsize=3, label="predicted (95 %)")
    loo = [_f(r["loo_predicted_efficiency"]) for r in rows]
    ax.scatter(xs, loo, facecolors="none", edgecolors=ARM_COLOURS[1], label="left out of the fit")
    values = [v for v in xs + ys + loo if not math.isnan(v)]
    a, b = min(values) - 0.03, max(values) + 0.03
    ax.plot([a, b], [a, b], color="grey", linewidth=1, linestyle="--", label="measured = predicted")
    ax.set_xlim(a, b)
    ax.set_ylim(a, b)
    for axis in (ax.xaxis, ax.yaxis):
        _percent(axis, 0)
    ax.set_xlabel("measured CPU efficiency")
    ax.set_ylabel("predicted CPU efficiency")
    ax.legend(loc="upper left", fontsize=8)
    renderer = labels.freeze(ax)
    labels.label_points(
        ax,
        xs,
        ys,
        [f"{r['storage_type']} {r['ab_arm'] or ''}".strip() for r in rows],
        renderer,
        avoid=labels.marker_boxes(ax, xs, loo),
        fontsize=7,
    )
    return ax.figure


#: The whole site's line where it is context, not what a change's effect is measured on.
CONTEXT_COLOUR = "#9aa0aa"


@_png
def efficiency_timeline_with_changes(days: Sequence[dict[str, Any]], changes: Sequence[dict[str, Any]]) -> Figure:
    """Daily efficiency (Σcpu / Σ(wall×cores)) of each population in ``days`` (key ``population``:
    the jobs a change applies to, 'site' for all) with a vertical line at each recorded change.
    The site's line is drawn faint when other populations are plotted: it is context, while the
    effect in the table is for the change's scope."""
    populations = list(dict.fromkeys(r.get("population", "site") for r in days))
    scoped = [p for p in populations if p != "site"]
    ax = _axes(9.0, 3.8)
    xs = sorted({r["day"] for r in days})
    marker = _marker(len(xs))
    for population in ["site", *scoped] if "site" in populations else scoped:
        rows = [r for r in days if r.get("population", "site") == population]
        if population == "site" and scoped:
            style: dict[str, Any] = {
                "color": CONTEXT_COLOUR,
                "alpha": 0.7,
                "linewidth": 1.0,
                "label": "whole site, per day (context)",
                "zorder": 1,
            }
        else:
            colour = BLUE if not scoped else colours(len(scoped) + 1)[1 + scoped.index(population)]
            style = {"color": colour, "linewidth": 1.8, "label": f"{population}, per day", "zorder": 3}
        ax.plot([r["day"] for r in rows], [_f(r["efficiency"]) for r in rows], marker=marker, markersize=4, **style)
    ax.set_ylabel("CPU efficiency")
    _date_axis(ax, xs)
    data_lines = list(ax.get_lines())
    for i, c in enumerate(changes):
        ax.axvline(c["changed_at"], color=LIMIT_COLOUR, linestyle="--", linewidth=1, label="change" if i == 0 else None)
    _share_from_zero(ax)
    _percent(ax.yaxis, None)
    _legend_above(ax)
    _name_changes(ax, changes, data_lines)
    return ax.figure


def _name_changes(ax: Axes, changes: Sequence[dict[str, Any]], data_lines: Sequence[Line2D]) -> None:
    """Each change's name down its line, at a height where it crosses none of ``data_lines`` and no
    other name (measured: labels.py); above the axes, level, when the line leaves no such height."""
    renderer = labels.freeze(ax)
    series = [line.get_xydata() for line in data_lines]
    data = [labels.data_path(ax, xy) for xy in series]
    taken = [b for xy in series for b in labels.marker_boxes(ax, xy[:, 0], xy[:, 1])]
    frame = ax.get_window_extent(renderer)
    style: dict[str, Any] = {"fontsize": 7, "color": LIMIT_COLOUR}
    for c in changes:
        name = str(c["label"])
        x = ax.transData.transform((date2num(c["changed_at"]), 0))[0]
        if not frame.x0 <= x <= frame.x1:
            continue  # a change outside the days drawn: its line is not in view either
        w, h = labels.text_size(ax, renderer, name, **style)
        box = labels.beside_vertical(ax, x, (h, w), renderer, data, taken)
        if box is None:
            ax.annotate(
                name,
                (c["changed_at"], 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                **style,
            )
            continue
        taken = [*taken, box]
        ax.annotate(name, (box.x0, box.y0), xycoords="figure pixels", rotation=90, ha="left", va="bottom", **style)


@_png
def efficiency_by_input_size(rows: Sequence[dict[str, Any]]) -> Figure:
    """IFCA's plot: efficiency (ratio of sums) against bytes read per job, one line per series.

    ``rows`` have ``series`` (e.g. a storage type, or 'before'/'after' a change), ``bin`` (label,
    in size order) and ``efficiency``.
    """
    ax = _axes(9.0, 3.8)
    bins = list(dict.fromkeys(r["bin"] for r in rows))
    series = list(dict.fromkeys(r["series"] for r in rows))
    by_key = {(r["series"], r["bin"]): r for r in rows}
    for name, colour in zip(series, colours(len(series))):
        pts = [(j, _f(by_key[(name, b)]["efficiency"])) for j, b in enumerate(bins) if (name, b) in by_key]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=4, color=colour, label=str(name))
    ax.set_xticks(range(len(bins)), bins)
    _share_from_zero(ax)
    _percent(ax.yaxis, None)
    ax.set_ylabel("CPU efficiency")
    ax.set_xlabel("bytes read per job")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return ax.figure
