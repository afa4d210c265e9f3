"""``after_paint(child, min_height)``: a costly child (a chart) drawn only after the page has painted without it.

The Metrics page's two charts took ~200 ms of the browser's main thread as they mounted (recharts lays
out and measures its axes), in the same task as the page's numbers, so nothing showed until both charts
were drawn. Wrapped, the numbers show first and the charts a frame later, in a box that keeps their place.
"""

# Tested by: tests/e2e/test_review_desk_browser.py

from __future__ import annotations

import reflex as rx


class AfterPaint(rx.Component):
    """``<AfterPaint>`` from ``assets/after_paint.js``. Props: ``min_height`` (CSS length: the place kept
    for the child until it is drawn); ``aria-busy`` is set on the empty box meanwhile."""

    library = "$/public/after_paint.js"
    tag = "AfterPaint"

    min_height: rx.Var[str]


def after_paint(child: rx.Component, min_height: str, testid: str = "") -> rx.Component:
    """``child`` drawn once the page has painted without it, in a box of ``min_height`` (``testid`` on the box)."""
    return AfterPaint.create(child, min_height=min_height, **({"custom_attrs": {"data-testid": testid}} if testid else {}))
