"""The buying guide's figures: price against efficiency, and the what-if grid as a heat map.

Drawn like every report figure (``plots._png``: a fresh Agg figure under the report's style,
returned as a PNG data URI); kept apart from ``plots`` so the guide's figures can change without
touching the shared ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from .labels import freeze, label_points
from .plots import ARM_COLOURS, _axes, _f, _png

#: One colour per kind of evidence, in the order a reader trusts them.
EVIDENCE_COLOURS = {"measured": ARM_COLOURS[1], "probe": ARM_COLOURS[0], "datasheet": ARM_COLOURS[4]}


@_png
def price_against_efficiency(rows: Sequence[dict[str, Any]]) -> Figure:
    """Whole-node price per 1000 delivered core-hours (y) against predicted efficiency (x), both
    with their 95 % intervals as error bars; colour = what the prediction rests on."""
    ax = _axes(9.0, 5.0)
    for evidence, colour in EVIDENCE_COLOURS.items():
        pts = [r for r in rows if r["evidence"] == evidence]
        if not pts:
            continue
        xs = [_f(r["efficiency"]) for r in pts]
        ys = [_f(r["price_per_1000_core_hours"]) for r in pts]
        xerr = [
            [x - _f(r["efficiency_low"]) for x, r in zip(xs, pts)],
            [_f(r["efficiency_high"]) - x for x, r in zip(xs, pts)],
        ]
        yerr = [
            [y - _f(r["price_per_1000_core_hours_low"]) for y, r in zip(ys, pts)],
            [_f(r["price_per_1000_core_hours_high"]) - y for y, r in zip(ys, pts)],
        ]
        ax.errorbar(
            xs, ys, xerr=xerr, yerr=yerr, fmt="o", color=colour, capsize=2, elinewidth=1, label=f"{evidence} (95 %)"
        )
    _cut_long_intervals(ax, rows)
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    currency = next((r["currency"] for r in rows if r.get("currency")), "")
    ax.set_xlabel("predicted CPU efficiency")
    ax.set_ylabel(f"whole-node price per 1000 core-hours {currency}".strip())
    ax.legend(loc="upper right", fontsize=8)
    # placed once everything else is drawn, measured against it (labels.py); in the rows' order
    # (cheapest first), so the options a reader wants most get the places nearest their points
    drawn = [r for r in rows if r["evidence"] in EVIDENCE_COLOURS]
    label_points(
        ax,
        [_f(r["efficiency"]) for r in drawn],
        [_f(r["price_per_1000_core_hours"]) for r in drawn],
        [f"{r['config_name']} ×{r['jobs_per_node']:g}" for r in drawn],
        freeze(ax),
        fontsize=7,
    )
    return ax.figure


#: The price axis ends at this multiple of the dearest configuration's price: an interval
#: reaching further (a prediction near 0 % efficiency has a price interval of millions) is cut
#: there and marked, or it would press every point onto the axis.
PRICE_AXIS_HEADROOM = 1.6


def _cut_long_intervals(ax: Any, rows: Sequence[dict[str, Any]]) -> None:
    prices = [p for p in (_f(r["price_per_1000_core_hours"]) for r in rows) if not math.isnan(p)]
    if not prices:
        return
    top = PRICE_AXIS_HEADROOM * max(prices)
    cut = [r for r in rows if _f(r["price_per_1000_core_hours_high"]) > top]
    if not cut:
        return
    ax.set_ylim(0.0, top)
    for r in cut:
        ax.annotate(
            "↑ interval cut",
            (_f(r["efficiency"]), top),
            fontsize=7,
            ha="center",
            va="top",
            xytext=(0, -2),
            textcoords="offset points",
        )


@_png
def what_if_heat_map(rows: Sequence[dict[str, Any]]) -> Figure:
    """Predicted efficiency of storage type (rows) × jobs per node (columns), one panel per cache,
    each cell labelled with its value."""
    caches = list(dict.fromkeys(r["cache"] for r in rows))
    types = sorted({r["storage_type"] for r in rows})
    jobs = sorted({_f(r["jobs_per_node"]) for r in rows})
    value = {(r["cache"], r["storage_type"], _f(r["jobs_per_node"])): _f(r["predicted_efficiency"]) for r in rows}
    ax0 = _axes(min(4.0 + 3.2 * len(caches), 14.0), 1.2 + 0.45 * len(types))
    fig = ax0.figure
    fig.delaxes(ax0)
    axes = fig.subplots(1, len(caches), sharey=True, squeeze=False)[0]
    image = None
    for ax, cache in zip(axes, caches):
        grid = [[value.get((cache, st, n), math.nan) for n in jobs] for st in types]
        image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
        for i, line in enumerate(grid):
            for j, v in enumerate(line):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(jobs)), [f"{n:g}" for n in jobs])
        ax.set_yticks(range(len(types)), types)
        ax.set_xlabel("jobs per node")
        ax.set_title(f"cache {cache}", fontsize=9)
        ax.grid(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes), format=PercentFormatter(xmax=1.0, decimals=0), label="predicted efficiency")
    return fig
