"""The report's figures, drawn and inspected (not compared as images): one test per class of
defect a reader trips over. Distinct colours per category; share axes from zero; a difference of
shares labelled and ticked in points; a daily series ticked by day, never by hour; labels that
overlap each other or the data they name."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from itertools import combinations

import pytest
from matplotlib.colors import to_hex
from matplotlib.dates import date2num, num2date
from matplotlib.path import Path
from matplotlib.text import Text

from tierlens.report import buying_plots, fmt, plots

STORAGE_TYPES = ["hdd", "ssd", "nvme", "raid0", "raid1", "nfs"]


def _figure(plot, *args):
    """The Figure a report plot draws (its undecorated function), rendered so ticks exist."""
    fig = plot.__wrapped__(*args)
    fig.canvas.draw()
    return fig


@pytest.mark.parametrize("n", [1, 2, 5, 6, 10, 11, 20, 25])
def test_colours_are_distinct_for_any_number_of_categories(n):
    assert len(set(plots.colours(n))) == n


def test_efficiency_by_input_size_draws_each_storage_type_in_its_own_colour():
    rows = [
        {"series": s, "bin": b, "efficiency": 0.5 + 0.05 * i}
        for i, s in enumerate(STORAGE_TYPES)
        for b in ("< 1 GB", "1-10 GB")
    ]
    (ax,) = _figure(plots.efficiency_by_input_size, rows).axes
    lines = {line.get_label(): to_hex(line.get_color()) for line in ax.get_lines()}
    assert set(lines) == set(STORAGE_TYPES)
    assert len(set(lines.values())) == len(STORAGE_TYPES), lines
    assert ax.get_ylim()[0] == 0


def test_ab_daily_axis_starts_at_zero_and_ticks_days_not_hours():
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    days = [
        {"period_start": t0 + timedelta(days=i), "efficiency_a": 0.78 + 0.01 * i, "efficiency_b": 0.80}
        for i in range(2)
    ]
    (ax,) = _figure(plots.ab_daily, days).axes
    low, high = ax.get_ylim()
    assert low == 0 and high >= 1.0  # not zoomed to 77-81 %
    ticks = [num2date(t) for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all((t.hour, t.minute) == (0, 0) for t in ticks), ticks
    assert len(ticks) == 2


def test_a_difference_of_shares_is_in_points_on_the_axis_and_in_tables():
    days = [
        {
            "period_start": date(2026, 10, 1) + timedelta(days=i),
            "efficiency_difference": 0.029,
            "efficiency_ci_low": 0.01,
            "efficiency_ci_high": 0.05,
            "enough_data": True,
        }
        for i in range(3)
    ]
    (ax,) = _figure(plots.ab_difference_with_ci, days).axes
    assert "points" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and not any("%" in t for t in labels), labels
    assert ax.get_ylim()[0] <= 0 <= ax.get_ylim()[1]  # the zero line is in view
    assert fmt.points(0.029) == "+2.9 pt" and fmt.points(-0.0386) == "-3.9 pt" and fmt.points(None) == fmt.MISSING
    assert fmt.FORMATTERS["points"] is fmt.points


def _text_boxes(ax):
    """Each text on ``ax`` and its rendered extent in pixels (the text alone, not its leader line)."""
    renderer = ax.figure.canvas.get_renderer()
    return [(t.get_text(), Text.get_window_extent(t, renderer)) for t in ax.texts]


#: The demo's crowded corner of the buying guide (seed 11): eleven measured options within 13
#: points of efficiency and 20 GBP, and probe-derived ones with intervals across the whole plot.
CLUSTER = [
    ("Enterprise NVMe", 16, 0.871, 10.75),
    ("Enterprise NVMe", 8, 0.872, 14.86),
    ("2xHDD RAID0", 16, 0.599, 12.07),
    ("2xHDD RAID0", 8, 0.763, 14.33),
    ("2xHDD RAID1", 8, 0.687, 15.90),
    ("2xHDD RAID1", 16, 0.450, 16.05),
    ("1xHDD", 8, 0.591, 18.31),
    ("1xHDD", 16, 0.348, 20.60),
    ("Enterprise NVMe", 4, 0.871, 26.90),
    ("2xHDD RAID0", 4, 0.803, 27.60),
    ("1xHDD", 4, 0.775, 28.20),
    ("2xHDD RAID1", 4, 0.733, 29.00),
    ("Enterprise NVMe", 1, 0.872, 104.5),
    ("2xHDD RAID0", 1, 0.812, 107.4),
    ("2xHDD RAID1", 1, 0.818, 106.2),
    ("1xHDD", 1, 0.795, 108.9),
]


def _option(name, per_node, efficiency, price, evidence="measured", width=0.012):
    return {
        "config_name": name,
        "jobs_per_node": per_node,
        "evidence": evidence,
        "currency": "GBP",
        "efficiency": efficiency,
        "efficiency_low": efficiency - width,
        "efficiency_high": efficiency + width,
        "price_per_1000_core_hours": price,
        "price_per_1000_core_hours_low": price * 0.97,
        "price_per_1000_core_hours_high": price * 1.03,
    }


def test_no_two_labels_of_the_buying_guide_overlap():
    rows = [_option(*c) for c in CLUSTER] + [
        _option("Consumer SSD", 16, 0.30, 95.0, "probe", 0.3),
        _option("Consumer SSD", 8, 0.53, 92.0, "probe", 0.33),
        _option("Consumer SSD", 1, 0.77, 182.0, "probe", 0.3),
    ]
    (ax,) = _figure(buying_plots.price_against_efficiency, rows).axes
    boxes = dict(_text_boxes(ax))
    names = [f"{r['config_name']} ×{r['jobs_per_node']:g}" for r in rows]
    assert set(names) <= set(boxes), sorted(boxes)
    crossing = [(a, b) for (a, box_a), (b, box_b) in combinations(boxes.items(), 2) if box_a.overlaps(box_b)]
    assert not crossing, crossing
    frame = ax.get_window_extent()
    pixels = ax.transData.transform([(r["efficiency"], r["price_per_1000_core_hours"]) for r in rows])
    for name in names:
        box = boxes[name]
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, name
        # no label on a marker: its own or another's
        assert not any(box.contains(x, y) for x, y in pixels), name
    legend = ax.get_legend().get_window_extent()
    assert not any(box.overlaps(legend) for box in boxes.values())


@pytest.mark.parametrize("level", [0.05, 0.5, 0.8, 0.97])
def test_a_change_is_named_clear_of_the_data_line(level):
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    days = [{"day": t0 + timedelta(days=i), "efficiency": level + 0.02 * (i % 2)} for i in range(3)]
    changes = [{"changed_at": t0 + timedelta(days=1, hours=12), "label": "synthetic-t2demo-1"}]
    (ax,) = _figure(plots.efficiency_timeline_with_changes, days, changes).axes
    ((text, box),) = [(t, b) for t, b in _text_boxes(ax) if t == "synthetic-t2demo-1"]
    (line,) = [line for line in ax.get_lines() if line.get_label() == "site, per day"]
    points = ax.transData.transform(line.get_xydata())
    assert not Path(points).intersects_bbox(box, filled=False), (level, box, points)
    assert not any(box.contains(x, y) for x, y in points)
    # beside its change's line, within the figure
    x = ax.transData.transform((date2num(changes[0]["changed_at"]), 0))[0]
    assert box.x1 <= x + 1 or box.x0 >= x - 1 or box.y0 >= ax.get_window_extent().y1
    figure = ax.figure.bbox
    assert figure.x0 <= box.x0 and box.x1 <= figure.x1 and figure.y0 <= box.y0 and box.y1 <= figure.y1


def test_an_hourly_axis_names_no_day_after_the_last_hour():
    """Hours to 23:00 on the 3rd: neither a tick nor the offset beside the axis may read the 4th
    (the axis is the data's, with half an hour's margin)."""
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    hours = [
        {"hour": t0 + timedelta(hours=h), "gb_delivered_from_cache": 100.0 + h % 7, "gb_staged_in": 50.0}
        for h in range(72)
    ]
    (ax,) = _figure(plots.cache_gb_per_hour, hours).axes
    right = num2date(ax.get_xlim()[1])
    assert right < datetime(2026, 10, 4, tzinfo=timezone.utc), right
    shown = [t.get_text() for t in ax.get_xticklabels()] + [ax.xaxis.get_offset_text().get_text()]
    assert shown and not any("Oct-04" in s or "10-04" in s for s in shown), shown


def test_two_changes_an_hour_apart_are_named_apart_and_clear_of_the_data():
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    days = [{"day": t0 + timedelta(days=i), "efficiency": 0.8} for i in range(3)]
    names = ("nfs-read-ahead-4MiB", "xcache-disk-swap")
    changes = [{"changed_at": t0 + timedelta(hours=36 + i), "label": n} for i, n in enumerate(names)]
    (ax,) = _figure(plots.efficiency_timeline_with_changes, days, changes).axes
    boxes = dict(_text_boxes(ax))
    assert set(names) <= set(boxes), boxes
    assert not boxes[names[0]].overlaps(boxes[names[1]]), boxes
    (line,) = [line for line in ax.get_lines() if line.get_label() == "site, per day"]
    path = Path(ax.transData.transform(line.get_xydata()))
    assert not any(path.intersects_bbox(boxes[n], filled=False) for n in names), boxes
    # both stay down their lines, within the axes (neither pushed above them)
    frame = ax.get_window_extent()
    assert all(frame.y0 <= boxes[n].y0 and boxes[n].y1 <= frame.y1 for n in names), boxes


def _whiskers(ax, rows):
    """Each option's two interval whiskers as segments in pixels, from its rows alone: efficiency
    low to high at its price, price low to high at its efficiency."""
    segments = []
    for r in rows:
        e, p = r["efficiency"], r["price_per_1000_core_hours"]
        for ends in (
            [(r["efficiency_low"], p), (r["efficiency_high"], p)],
            [(e, r["price_per_1000_core_hours_low"]), (e, r["price_per_1000_core_hours_high"])],
        ):
            segments.append((r["config_name"], Path(ax.transData.transform(ends))))
    return segments


def test_no_label_of_the_buying_guide_lies_on_an_error_bar():
    """The probe-derived options' intervals cross the plot: a label drawn over a whisker hides
    where an interval ends. Each label clear of every whisker (its own too) and of every marker."""
    rows = [_option(*c) for c in CLUSTER] + [
        _option("Consumer SSD", 16, 0.30, 95.0, "probe", 0.3),
        _option("Consumer SSD", 8, 0.53, 92.0, "probe", 0.33),
        _option("Consumer SSD", 1, 0.77, 182.0, "probe", 0.3),
    ]
    for r in rows[-3:]:
        r["price_per_1000_core_hours_low"] = r["price_per_1000_core_hours"] * 0.6
        r["price_per_1000_core_hours_high"] = r["price_per_1000_core_hours"] * 1.25
    (ax,) = _figure(buying_plots.price_against_efficiency, rows).axes
    boxes = dict(_text_boxes(ax))
    names = [f"{r['config_name']} ×{r['jobs_per_node']:g}" for r in rows]
    assert set(names) <= set(boxes), sorted(boxes)
    whiskers = _whiskers(ax, rows)
    on_a_whisker = [
        (name, option) for name in names for option, path in whiskers if path.intersects_bbox(boxes[name], filled=False)
    ]
    assert not on_a_whisker, on_a_whisker
    crossing = [(a, b) for a, b in combinations(names, 2) if boxes[a].overlaps(boxes[b])]
    assert not crossing, crossing


def test_the_changes_scope_is_the_plotted_line_and_the_site_only_faint_context():
    """Days of the NFS jobs an NFS-only change applies to, and of the whole site: the NFS line is
    drawn as the data (full colour, thicker, on top), the site's faint and said to be context."""
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    nfs = [0.60, 0.61, 0.70, 0.71]
    site = [0.78, 0.79, 0.81, 0.80]
    days = [
        {"population": p, "day": t0 + timedelta(days=i), "efficiency": e}
        for p, series in (("site", site), ("storage type nfs", nfs))
        for i, e in enumerate(series)
    ]
    changes = [{"changed_at": t0 + timedelta(days=2), "label": "nfs-tuning", "population": "storage type nfs"}]
    (ax,) = _figure(plots.efficiency_timeline_with_changes, days, changes).axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    scope, context = lines["storage type nfs, per day"], lines["whole site, per day (context)"]
    assert list(scope.get_ydata()) == nfs and list(context.get_ydata()) == site
    assert (context.get_alpha() or 1.0) < 1.0 and context.get_linewidth() < scope.get_linewidth()
    assert context.get_zorder() < scope.get_zorder()
    # the change's name clear of both lines
    ((_, box),) = [(t, b) for t, b in _text_boxes(ax) if t == "nfs-tuning"]
    for line in (scope, context):
        assert not Path(ax.transData.transform(line.get_xydata())).intersects_bbox(box, filled=False)
