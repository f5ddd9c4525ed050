"""Text on a figure placed where it can be read: measured, not guessed.

A label at a fixed offset from its point collides with its neighbours' wherever points cluster
(the buying guide's configurations sit within a few points of efficiency of each other), and a
change's name drawn down its marker runs through the data line. So a label is placed after the
figure is laid out: its text is measured with the canvas's renderer, and it goes at the nearest
candidate position (rings of growing distance around its point) whose box lies within the axes and
meets no other label, no marker, no legend, no error bar (a point's interval whiskers and their
caps: a label over a probe's wide interval hides where the interval ends) and, where asked, no data
line. A label set away from its point gets a thin leader line to it.

The layout is frozen once measured (``freeze``): constrained layout would otherwise move the axes
again when the figure is saved, and every measured box with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.container import ErrorbarContainer
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

#: Distances (pixels) from a point to the nearest side of its label, tried nearest first.
RINGS = (3, 8, 14, 22, 32, 45, 60, 80, 105, 135, 170, 210, 260, 320)
#: Half the side of the box a marker occupies (a 6 pt marker is 8 px across at 100 dpi).
MARKER_HALF = 4.5
#: Room kept around each label (pixels), so two labels never touch.
GAP = 1.0
#: A label further than this from its point gets a leader line.
LEADER_FROM = 10


def freeze(ax: Axes) -> RendererBase:
    """Lay the figure out once and keep it so; the renderer that measures text."""
    fig = ax.figure
    fig.canvas.draw()
    fig.set_layout_engine("none")
    return fig.canvas.get_renderer()


def text_size(ax: Axes, renderer: RendererBase, text: str, **style: object) -> tuple[float, float]:
    """Width and height in pixels of ``text`` drawn with ``style``."""
    probe = ax.text(0, 0, text, **style)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def taken_by(ax: Axes, renderer: RendererBase) -> list[Bbox]:
    """What a new label must not cover: the texts already on the axes and its legend."""
    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]
    legend = ax.get_legend()
    if legend is not None:
        boxes.append(legend.get_window_extent(renderer))
    return boxes


def error_bars(ax: Axes) -> tuple[list[Path], list[Bbox]]:
    """The error bars drawn on ``ax``, in pixels: each whisker as a segment, each cap as the box
    its marker covers."""
    whiskers: list[Path] = []
    caps: list[Bbox] = []
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        _data_line, cap_lines, bar_collections = container.lines
        for collection in bar_collections:
            to_pixels = collection.get_transform()
            for segment in collection.get_segments():
                xy = to_pixels.transform(np.asarray(segment, dtype=float))
                if np.isfinite(xy).all():
                    whiskers.append(Path(xy))
        for cap in cap_lines:
            # a cap is a marker ('|' or '_') drawn at each whisker's end, markersize points long
            half = cap.get_markersize() * ax.figure.dpi / 72 / 2 + cap.get_markeredgewidth()
            for x, y in cap.get_transform().transform(cap.get_xydata()):
                if np.isfinite(x) and np.isfinite(y):
                    caps.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    return whiskers, caps


def _ring(px: float, py: float, w: float, h: float, distance: float) -> Iterable[Bbox]:
    """Boxes of a ``w`` x ``h`` label around (px, py), their nearest side ``distance`` away: right
    of the point first (where a reader looks), then above, below, left and the diagonals."""
    steps = 8 if distance < 30 else 16
    angles = sorted(range(steps), key=lambda k: (min(k, steps - k), k > steps // 2))
    for k in angles:
        a = 2 * math.pi * k / steps
        cx = px + math.cos(a) * (distance + w / 2)
        cy = py + math.sin(a) * (distance + h / 2)
        yield Bbox.from_bounds(cx - w / 2, cy - h / 2, w, h)


def _free(box: Bbox, frame: Bbox, taken: Sequence[Bbox], lines: Sequence[Path], gap: float = GAP) -> bool:
    if not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1):
        return False
    padded = box.padded(gap)
    return not any(padded.overlaps(t) for t in taken) and not any(
        p.intersects_bbox(padded, filled=False) for p in lines
    )


def marker_boxes(ax: Axes, xs: Sequence[float], ys: Sequence[float]) -> list[Bbox]:
    """The boxes the markers at (xs, ys) cover, in pixels."""
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    return [
        Bbox.from_extents(x - MARKER_HALF, y - MARKER_HALF, x + MARKER_HALF, y + MARKER_HALF)
        for x, y in pts
        if np.isfinite(x) and np.isfinite(y)
    ]


def label_points(
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    labels: Sequence[str],
    renderer: RendererBase,
    avoid: Sequence[Bbox] = (),
    **style: object,
) -> list[Annotation]:
    """Each label beside its point (xs, ys in data), none on another label, a marker, an error bar
    drawn on ``ax``, the legend or ``avoid`` (other markers, in pixels); in the order given, so the
    first rows get the nearest places."""
    frame = ax.get_window_extent(renderer)
    whiskers, caps = error_bars(ax)
    taken = taken_by(ax, renderer) + marker_boxes(ax, xs, ys) + caps + list(avoid)
    placed = []
    for x, y, label in zip(xs, ys, labels):
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        px, py = ax.transData.transform((x, y))
        w, h = text_size(ax, renderer, label, **style)
        box, distance = _first_free(px, py, w, h, frame, taken, whiskers)
        taken.append(box)
        placed.append(
            ax.annotate(
                label,
                (x, y),
                xytext=(box.x0 - px, box.y0 - py),
                textcoords="offset pixels",
                ha="left",
                va="bottom",
                # a light ground, so an error bar behind the text (where the error bars left no
                # room clear of them) does not strike it through
                bbox=dict(boxstyle="square,pad=0.05", facecolor="white", edgecolor="none", alpha=0.8),
                arrowprops=(
                    dict(arrowstyle="-", color="#777777", linewidth=0.6, shrinkA=0, shrinkB=MARKER_HALF)
                    if distance > LEADER_FROM
                    else None
                ),
                **style,
            )
        )
    return placed


def _first_free(
    px: float, py: float, w: float, h: float, frame: Bbox, taken: Sequence[Bbox], lines: Sequence[Path] = ()
) -> tuple[Bbox, float]:
    """The nearest free box for a label of ``w`` x ``h`` at (px, py), and its distance. When the
    ``lines`` (error bars) leave no room, the nearest box clear of everything else: a label over a
    whisker is still read, a label over another label is not. The nearest box within the frame
    at all when every ring is full (no figure of the report has that many labels)."""
    for obstacles in (lines, ()):
        for distance in RINGS:
            for box in _ring(px, py, w, h, distance):
                if _free(box, frame, taken, obstacles):
                    return box, distance
    return _clamped(Bbox.from_bounds(px + RINGS[0], py, w, h), frame), RINGS[0]


def _clamped(box: Bbox, frame: Bbox) -> Bbox:
    x0 = min(max(box.x0, frame.x0), frame.x1 - box.width)
    y0 = min(max(box.y0, frame.y0), frame.y1 - box.height)
    return Bbox.from_bounds(x0, y0, box.width, box.height)


def beside_vertical(
    ax: Axes,
    x_pixel: float,
    size: tuple[float, float],
    renderer: RendererBase,
    lines: Sequence[Path],
    taken: Sequence[Bbox] = (),
) -> Bbox | None:
    """A box of ``size`` (w, h pixels) just left or right of the vertical line at ``x_pixel``, as
    high in the axes as it can be while it crosses none of ``lines`` (data lines, in pixels) and
    none of ``taken``; None when no height is free."""
    frame = ax.get_window_extent(renderer)
    w, h = size
    lefts = (x_pixel - 2 - w, x_pixel + 2)
    y = frame.y1 - h - 2
    while y >= frame.y0 + 2:
        for x0 in lefts:
            box = Bbox.from_bounds(x0, y, w, h)
            # clear of the data line by a few pixels: text touching a line reads as struck through
            if _free(box, frame, taken, lines, gap=4):
                return box
        y -= 3
    return None


def data_path(ax: Axes, xy: np.ndarray) -> Path:
    """A data line's points (in data units, NaN = gap) as a path in pixels, gaps left out."""
    keep = np.isfinite(xy).all(axis=1)
    return Path(ax.transData.transform(xy[keep]))
