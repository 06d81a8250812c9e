"""Plots as inline SVG, drawn on the server: no script, no stylesheet from elsewhere.

Every point or bar carries a <title> (the browser shows it on hover) and a class the
stylesheet colours; nothing is styled inline, so the pages' CSP needs no 'unsafe-inline'.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from app.services.operations.dashboard import Point

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 28
LABELLED_BARS = 12


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _frame(title: str, low: float, high: float, first: str, last: str, body: list[str]) -> Markup:
    bottom = HEIGHT - BOTTOM
    parts = [
        f'<svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}"/>',
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{_fmt(high)}</text>',
        f'<text class="tick" x="{LEFT - 6}" y="{bottom}" text-anchor="end">{_fmt(low)}</text>',
        f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">{escape(first)}</text>',
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">'
        f"{escape(last)}</text>",
        *body,
        "</svg>",
    ]
    return Markup("".join(parts))


def _range(values: list[float], low: float | None, high: float | None) -> tuple[float, float]:
    lo = min(values) if low is None else low
    hi = max(values) if high is None else high
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi


def _y(value: float, lo: float, hi: float) -> float:
    span = HEIGHT - TOP - BOTTOM
    return round(TOP + span * (1 - (value - lo) / (hi - lo)), 2)


def empty(title: str) -> Markup:
    return Markup(f'<p class="empty">{escape(title)}: no data yet.</p>')


def line(
    points: list[Point], *, title: str, low: float | None = None, high: float | None = None
) -> Markup:
    """A line through the points that have a value, each marked by a circle."""
    known = [(i, label, v) for i, (label, v) in enumerate(points) if v is not None]
    if not known:
        return empty(title)
    lo, hi = _range([v for _, _, v in known], low, high)
    step = (WIDTH - LEFT - RIGHT) / max(1, len(points) - 1)
    xy = [
        (round(LEFT + step * i if len(points) > 1 else LEFT, 2), _y(v, lo, hi)) for i, _, v in known
    ]
    body = [f'<polyline class="series" points="{" ".join(f"{x},{y}" for x, y in xy)}"/>']
    for (x, y), (_, label, v) in zip(xy, known, strict=True):
        body.append(
            f'<circle class="pt" cx="{x}" cy="{y}" r="3.5">'
            f"<title>{escape(label)}: {_fmt(v)}</title></circle>"
        )
    return _frame(title, lo, hi, points[0][0], points[-1][0], body)


def bars(points: list[Point], *, title: str, high: float | None = None) -> Markup:
    """One bar per point (a missing value draws none)."""
    values = [v for _, v in points if v is not None]
    if not values:
        return empty(title)
    lo, hi = _range([0.0, *values], 0.0, high)
    slot = (WIDTH - LEFT - RIGHT) / len(points)
    width = max(1.0, slot * 0.7)
    bottom = HEIGHT - BOTTOM
    body = []
    for i, (label, v) in enumerate(points):
        if v is None:
            continue
        y = _y(v, lo, hi)
        x = round(LEFT + slot * i + (slot - width) / 2, 2)
        body.append(
            f'<rect class="bar" x="{x}" y="{y}" width="{round(width, 2)}" '
            f'height="{round(bottom - y, 2)}"><title>{escape(label)}: {_fmt(v)}</title></rect>'
        )
    if len(points) > LABELLED_BARS:
        return _frame(title, lo, hi, points[0][0], points[-1][0], body)
    # Few bars: each is named under itself.
    for i, (label, _) in enumerate(points):
        x = round(LEFT + slot * i + slot / 2, 2)
        body.append(
            f'<text class="tick" x="{x}" y="{HEIGHT - 8}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    return _frame(title, lo, hi, "", "", body)
