"""hiershapes drawing: every class is a polygon normalised to fill its box; PIL renders the scene.

``OUTLINES[synset] = (vertices in [0,1]², width/height aspect)``. A drawn object fills its pixel box
exactly (the box is tight by construction), so the box written to the grounded JSON is the truth.
Rendering is supersampled (drawn at k× then box-reduced) for anti-aliased edges. Fill styles:
``solid``; ``outlined`` (a 2-px border); ``striped`` (diagonal stripes inside a border).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageChops, ImageDraw

Point = tuple[float, float]
FILLS: tuple[str, ...] = ("solid", "striped", "outlined")


def _normalise(points: Sequence[Point]) -> tuple[tuple[Point, ...], float]:
    """Scale points to fill [0,1]² exactly; return them and the original width/height ratio."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    return tuple(((x - x0) / (x1 - x0), (y - y0) / (y1 - y0)) for x, y in points), (x1 - x0) / (y1 - y0)


def _regular(n: int, radius_ratio: float | None = None) -> list[Point]:
    """Regular n-gon (or 2n-point star when ``radius_ratio`` is given), pointing up, y down."""
    points = []
    steps = 2 * n if radius_ratio is not None else n
    for k in range(steps):
        angle = -math.pi / 2 + 2 * math.pi * k / steps
        r = radius_ratio if (radius_ratio is not None and k % 2) else 1.0
        points.append((r * math.cos(angle), r * math.sin(angle)))
    return points


def _arc(cx: float, cy: float, rx: float, ry: float, t0: float, t1: float, n: int) -> list[Point]:
    return [(cx + rx * math.cos(t0 + (t1 - t0) * i / (n - 1)), cy + ry * math.sin(t0 + (t1 - t0) * i / (n - 1))) for i in range(n)]


def _heart(n: int = 64) -> list[Point]:
    # The classic parametric heart; y flipped so the point is at the bottom.
    return [(16 * math.sin(t) ** 3, -(13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)))
            for t in (2 * math.pi * i / n for i in range(n))]


def _crescent(n: int = 32) -> list[Point]:
    outer = _arc(0, 0, 1, 1, math.pi / 2, 3 * math.pi / 2, n)  # left half of a circle
    inner = _arc(0, 0, 0.4, 1, 3 * math.pi / 2, math.pi / 2, n)[1:-1]  # back along a thinner half-ellipse
    return outer + inner


def _with_aspect(points: Sequence[Point], aspect: float) -> tuple[tuple[Point, ...], float]:
    return _normalise(points)[0], aspect


@lru_cache(maxsize=None)
def outlines() -> dict[str, tuple[tuple[Point, ...], float]]:
    """Synset name -> (unit polygon, aspect). Classes without an entry cannot be drawn."""
    square = [(0, 0), (1, 0), (1, 1), (0, 1)]
    return {
        "square.n.01": _with_aspect(square, 1.0),
        "rectangle.n.01": _with_aspect(square, 1.8),
        "rhombus.n.01": _with_aspect([(0.5, 0), (1, 0.5), (0.5, 1), (0, 0.5)], 0.7),
        "trapezoid.n.01": _with_aspect([(0.25, 0), (0.75, 0), (1, 1), (0, 1)], 1.5),
        "parallelogram.n.01": _with_aspect([(0.35, 0), (1, 0), (0.65, 1), (0, 1)], 1.6),
        "triangle.n.01": _with_aspect([(0.5, 0), (1, 1), (0, 1)], 2 / math.sqrt(3)),
        "pentagon.n.03": _normalise(_regular(5)),
        "hexagon.n.01": _normalise(_regular(6)),
        "heptagon.n.01": _normalise(_regular(7)),
        "octagon.n.01": _normalise([(math.cos(a), math.sin(a)) for a in (math.pi / 8 + k * math.pi / 4 for k in range(8))]),
        "circle.n.01": _with_aspect(_arc(0, 0, 1, 1, 0, 2 * math.pi, 49)[:-1], 1.0),
        "ellipse.n.01": _with_aspect(_arc(0, 0, 1, 1, 0, 2 * math.pi, 49)[:-1], 1.7),
        "semicircle.n.01": _normalise(_arc(0, 0, 1, 1, math.pi, 2 * math.pi, 25)),
        "star.n.05": _normalise(_regular(5, radius_ratio=0.42)),
        "heart.n.07": _normalise(_heart()),
        "crescent.n.01": _normalise(_crescent()),
    }


@dataclass(frozen=True)
class Drawn:
    """One object to draw: its class synset, RGB colour, fill style and pixel box (x0, y0, x1, y1)."""

    synset: str
    rgb: tuple[int, int, int]
    fill: str
    box: tuple[int, int, int, int]


def aspect_of(synset: str) -> float:
    try:
        return outlines()[synset][1]
    except KeyError:
        raise ValueError(f"class {synset!r} has no drawing; drawable: {sorted(outlines())}") from None


@lru_cache(maxsize=8)
def _stripes(side: int, period: int) -> Image.Image:
    """Diagonal stripe mask (255 on, 0 off) of a side×side supersampled canvas."""
    mask = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(mask)
    for offset in range(-side, side, period):
        draw.polygon([(offset, 0), (offset + period // 2, 0), (offset + period // 2 + side, side), (offset + side, side)], fill=255)
    return mask


def _scaled(points: Sequence[Point], box: tuple[float, float, float, float]) -> list[Point]:
    x0, y0, x1, y1 = box
    return [(x0 + u * (x1 - x0), y0 + v * (y1 - y0)) for u, v in points]


def render(size: int, objects: Sequence[Drawn], background: tuple[int, int, int], supersample: int = 4) -> Image.Image:
    """The scene as a size×size RGB image."""
    k = supersample
    side = size * k
    canvas = Image.new("RGB", (side, side), background)
    border = max(1, round(1.5 * k))  # ~1.5 px at the output resolution
    for obj in objects:
        points = outlines()[obj.synset][0]
        x0, y0, x1, y1 = obj.box
        w, h = (x1 - x0) * k, (y1 - y0) * k
        # Drawn in a local box-sized mask (fast), pixel edges at 0 and w-1 / h-1.
        outer = (0, 0, w - 1, h - 1)
        mask = Image.new("L", (w, h), 0)
        ImageDraw.Draw(mask).polygon(_scaled(points, outer), fill=255)
        if obj.fill == "solid":
            paint = mask
        else:
            # Border = shape minus the shape shrunk by the border width towards its box centre.
            sx, sy = max(w - 1 - 2 * border, 1) / (w - 1), max(h - 1 - 2 * border, 1) / (h - 1)
            cx, cy = (w - 1) / 2, (h - 1) / 2
            inner_box = (cx - sx * cx, cy - sy * cy, cx + sx * cx, cy + sy * cy)
            inner = Image.new("L", (w, h), 0)
            ImageDraw.Draw(inner).polygon(_scaled(points, inner_box), fill=255)
            paint = ImageChops.subtract(mask, inner)
            if obj.fill == "striped":
                stripes = _stripes(side, 4 * k).crop((x0 * k, y0 * k, x0 * k + w, y0 * k + h))
                paint = ImageChops.lighter(paint, ImageChops.multiply(inner, stripes))
        canvas.paste(obj.rgb, (x0 * k, y0 * k, x0 * k + w, y0 * k + h), paint)
    return canvas.reduce(k) if k > 1 else canvas
