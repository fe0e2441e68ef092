"""Rates for people: the one rule every progress line, summary and dashboard sentence uses."""

from __future__ import annotations


def rate(per_second: float) -> str:
    """Whole numbers with thousands separators from 100 up, else three significant digits (a
    small campaign's 4 scenarios in 28 s read 0.143/s, not 0.0/s)."""
    return f"{per_second:,.0f}" if per_second >= 100 else f"{per_second:.3g}"
