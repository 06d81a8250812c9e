"""Learning curves as a PNG (Pillow only): one panel per simulated world, stacked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import ImageDraw

Colour = tuple[int, int, int]
BLUE, RED, GREEN = (0, 90, 200), (200, 40, 40), (40, 150, 60)
LINES: list[tuple[str, Colour]] = [("with Engram", BLUE), ("no memory", RED)]


@dataclass
class Panel:
    """Curves: per block, the episodes so far then each line's success rate."""

    title: str
    rows: Sequence[Sequence[float]]
    lines: list[tuple[str, Colour]] = field(default_factory=lambda: list(LINES))
    mark: tuple[int, str] | None = None  # an episode to mark, and why
    chance: float | None = None  # the agent without memory's Monte Carlo success rate
    legend_at: float = 0.95  # the success rate the legend starts at, clear of the lines


def draw(panels: list[Panel], path: Path) -> None:
    """Draw the panels one above the other into `path`."""
    from PIL import Image, ImageDraw

    w, h, pad = 900, 480, 60
    img = Image.new("RGB", (w, h * len(panels)), "white")
    d = ImageDraw.Draw(img)
    for i, panel in enumerate(panels):
        _panel(d, panel, top=i * h, size=(w, h), pad=pad)
    img.save(path)


def _panel(
    d: ImageDraw.ImageDraw, panel: Panel, *, top: int, size: tuple[int, int], pad: int
) -> None:
    w, h = size
    last = int(panel.rows[-1][0])

    def xy(n: float, rate: float) -> tuple[float, float]:
        return pad + (w - 2 * pad) * n / last, top + h - pad - (h - 2 * pad) * rate

    d.line([xy(0, 0), xy(last, 0)], fill="black")
    d.line([xy(0, 0), xy(0, 1)], fill="black")
    for tick in (0.25, 0.5, 0.75, 0.85, 1.0):
        d.line([xy(0, tick), xy(last, tick)], fill=(225, 225, 225))
        d.text((8, xy(0, tick)[1] - 6), f"{tick:.0%}", fill="black")
    for n in range(0, last + 1, max(100, last // 8 // 100 * 100)):
        d.text((xy(n, 0)[0] - 10, top + h - pad + 8), str(n), fill="black")
    if panel.chance is not None:
        d.line([xy(0, panel.chance), xy(last, panel.chance)], fill=(240, 170, 170))
        d.text((w - pad + 4, xy(0, panel.chance)[1] - 6), "chance", fill=RED)
    if panel.mark is not None:
        at, why = panel.mark
        d.line([xy(at, 0), xy(at, 1)], fill=(200, 120, 0))
        d.text((xy(at, 1)[0] + 4, top + pad - 4), why, fill=(200, 120, 0))
    for idx, (label, colour) in enumerate(panel.lines, start=1):
        d.line([xy(row[0], row[idx]) for row in panel.rows], fill=colour, width=3)
        d.text((w - pad - 200, xy(0, panel.legend_at)[1] + 18 * (idx - 1)), label, fill=colour)
    d.text((pad, top + 16), panel.title, fill="black")
    d.text((w // 2 - 30, top + h - 24), "episodes", fill="black")
