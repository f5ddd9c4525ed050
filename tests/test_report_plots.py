"""The report's figures, drawn and inspected (not compared as images): one test per class of
defect a reader trips over. Distinct colours per category; share axes from zero; a difference of
shares labelled and ticked in points; a daily series ticked by day, never by hour."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from matplotlib.colors import to_hex
from matplotlib.dates import num2date

from tierlens.report import fmt, plots

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
