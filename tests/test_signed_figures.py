"""A signed figure that rounds to zero prints without its sign, in the terminal's tables as in the
report (tests/test_report.py covers the report's formats)."""

from __future__ import annotations

from tierlens.simulator.tables import _signed_points
from tierlens.units import unsigned_zero


def test_a_zero_has_no_sign_and_anything_else_keeps_it() -> None:
    assert [unsigned_zero(s) for s in ("-0.0", "+0.00", "-0", "-0.1", "+2.0", "0.0", "-", "")] == [
        "0.0",
        "0.00",
        "0",
        "-0.1",
        "+2.0",
        "0.0",
        "-",
        "",
    ]


def test_the_terminal_prints_a_held_out_types_error_as_the_report_does() -> None:
    assert [_signed_points(e) for e in (-0.0004, 0.0004, -0.012, 0.034)] == ["0.0", "0.0", "-1.2", "+3.4"]
