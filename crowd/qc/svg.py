"""Small server-side SVG charts for report pages: histograms, line plots (with optional
error bars and reference lines) and intervals. No JavaScript and no external requests.

Every chart is an `<svg role="img">` whose `aria-label`, `<title>` and `<desc>` say what it
shows, so a screen reader gets the figures, not a picture. Colours come from the page's
stylesheet through classes (`chart-bar`, `chart-line-0`, ...) with inline fallbacks. The
functions return SafeStrings: every piece of text is escaped here.

A viewBox scales a chart's text with its figure: a WIDE chart's 12-unit labels are 7 px on a
phone. `chart_sizes` draws a chart for both boxes and lets the stylesheet show the one that fits.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

import numpy as np
from django.utils.safestring import SafeString, mark_safe

LEFT, RIGHT, TOP, BOTTOM = 56, 16, 32, 52  # margins holding the axes' text
CHARACTER_WIDTH, LINE_HEIGHT = 7, 16  # of the 12-unit text, at most (the widest characters aside)
PALETTE = ("#2456a6", "#b42318", "#1f7a3d", "#9a5b00", "#6b3fa0")

Point = tuple[float, float] | tuple[float, float, float]


@dataclass(frozen=True)
class Box:
    """A chart's size in SVG user units; the text is 12 units high in any box."""

    name: str
    width: int
    height: int


WIDE = Box("wide", 520, 300)  # a desktop's figure: about one user unit per CSS pixel
NARROW = Box("narrow", 300, 250)  # a phone's figure (311 px wide at 390 px): about the same


@dataclass(frozen=True)
class _Frame:
    """Maps data coordinates onto the plotting area inside the margins of `box`."""

    x_low: float
    x_high: float
    y_low: float
    y_high: float
    box: Box = WIDE

    def x(self, value: float) -> float:
        return LEFT + (value - self.x_low) / (self.x_high - self.x_low) * (self.box.width - LEFT - RIGHT)

    def y(self, value: float) -> float:
        plot_height = self.box.height - TOP - BOTTOM
        return self.box.height - BOTTOM - (value - self.y_low) / (self.y_high - self.y_low) * plot_height


def chart_sizes(draw: Callable[[Box], SafeString]) -> SafeString:
    """The chart `draw` draws, for a WIDE and a NARROW box, in a `div.chart-sizes`: the
    stylesheet shows the NARROW one in a narrow figure, so its text keeps its size."""
    return mark_safe(f'<div class="chart-sizes">{draw(WIDE)}{draw(NARROW)}</div>')


def histogram_svg(
    values: Iterable[float | None],
    bins: int = 20,
    *,
    value_range: tuple[float, float] | None = None,
    cutoff: float | None = None,
    cutoff_label: str = "cut-off",
    title: str,
    x_label: str,
    y_label: str = "count",
) -> SafeString:
    """Bars of `bins` equal-width bins over `value_range` (default: the values' range); a
    dashed vertical line at `cutoff`. None and non-finite values are left out."""
    data = np.array([value for value in values if value is not None and math.isfinite(value)], float)
    low, high = value_range or ((data.min(), data.max()) if data.size else (0.0, 1.0))
    if high <= low:
        low, high = low - 0.5, high + 0.5
    counts, _edges = np.histogram(data, bins=bins, range=(low, high))
    return binned_histogram_svg(
        [int(count) for count in counts],
        value_range=(float(low), float(high)),
        cutoff=cutoff,
        cutoff_label=cutoff_label,
        title=title,
        x_label=x_label,
        y_label=y_label,
    )


def binned_histogram_svg(
    counts: Sequence[int],
    *,
    value_range: tuple[float, float],
    cutoff: float | None = None,
    cutoff_label: str = "cut-off",
    title: str,
    x_label: str,
    y_label: str = "count",
    box: Box = WIDE,
) -> SafeString:
    """The same chart from counts already binned: `counts[i]` values in the i-th of
    len(counts) equal-width bins over `value_range` (as stored by a job, so a page draws
    the chart without the values). The count axis runs to the whole tick above the
    tallest bar, so the bar ends inside the plot."""
    low, high = value_range
    bins = len(counts)
    edges = np.linspace(low, high, bins + 1)
    total = int(sum(counts))
    frame = _Frame(low, high, 0.0, _tick_above(max(counts), minimum_step=1) if total else 1.0, box)
    parts = _axes(frame, x_label, y_label, integer_y=True)
    for count, left, right in zip(counts, edges[:-1], edges[1:]):
        if count:
            top = frame.y(count)
            parts.append(
                f'<rect class="chart-bar" fill="{PALETTE[0]}" x="{frame.x(left) + 0.5:.1f}" y="{top:.1f}" '
                f'width="{max(frame.x(right) - frame.x(left) - 1, 1):.1f}" height="{frame.y(0) - top:.1f}">'
                f"<title>{_number(left)} to {_number(right)}: {count}</title></rect>"
            )
    summary = f"{total} values in {bins} bins from {_number(low)} to {_number(high)}"
    if cutoff is not None:
        parts.append(_vertical_line(frame, cutoff, f"{cutoff_label} {cutoff:.2f}"))
        summary += f"; {cutoff_label} {cutoff:.2f}"
    if not total:
        parts.append(_no_data(frame))
    return _svg(title, summary + ".", parts, box)


def line_svg(
    series: Mapping[str, Sequence[Point]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    references: Mapping[str, float] | None = None,
    empty: str = "no data yet",
    box: Box = WIDE,
) -> SafeString:
    """One line with point markers per named series; a point `(x, y, error)` also gets an
    error bar y ± error. Points with a non-finite y are left out (the line skips them).
    `references` draws labelled dashed horizontal lines (e.g. published figures); `empty`
    is what the chart says when it has no point."""
    clean = {name: [point for point in points if math.isfinite(point[1])] for name, points in series.items()}
    references = references or {}
    frame = _Frame(
        *(x_range or _extent(point[0] for points in clean.values() for point in points)),
        *(y_range or _extent([*_y_extremes(clean), *references.values()])),
        box,
    )
    integer_x = all(float(point[0]).is_integer() for points in clean.values() for point in points)
    parts = _axes(frame, x_label, y_label, integer_x=integer_x)
    for label, value in references.items():
        parts.append(_horizontal_line(frame, value, label))
    described = []
    for index, (name, points) in enumerate(clean.items()):
        colour = PALETTE[index % len(PALETTE)]
        parts.extend(_series(frame, points, index, colour))
        described.append(f"{name}: " + ", ".join(_describe(point) for point in points))
        if len(clean) > 1:
            x = LEFT + index * 140
            parts.append(
                f'<rect x="{x}" y="6" width="10" height="10" fill="{colour}"></rect>'
                f'<text x="{x + 14}" y="15">{escape(name)}</text>'
            )
    if not any(clean.values()):
        parts.append(_no_data(frame, empty))
        return _svg(title, empty, parts, box)
    return _svg(title, "; ".join(described), parts, box)


def interval_svg(
    intervals: Sequence[tuple[float, float, float, str]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_range: tuple[float, float] | None = None,
    box: Box = WIDE,
) -> SafeString:
    """A marker at y with a bar from y − error to y + error per `(x, y, error, name)`, not
    joined by a line: e.g. TrueSkill μ ± σ by rank. `name` is the point's tooltip.
    Intervals with a non-finite y or error are left out. The y axis runs from the tick below
    the lowest bar to the tick above the highest, so every bar ends inside the plot."""
    clean = [item for item in intervals if math.isfinite(item[1]) and math.isfinite(item[2])]
    frame = _Frame(
        *(x_range or _extent(item[0] for item in clean)),
        *_widened_to_ticks(*_extent([value for _x, y, error, _name in clean for value in (y - error, y + error)])),
        box,
    )
    integer_x = all(float(item[0]).is_integer() for item in clean)
    parts = _axes(frame, x_label, y_label, integer_x=integer_x)
    for x_value, y_value, error, name in clean:
        x, y = frame.x(x_value), frame.y(y_value)
        low, high = frame.y(y_value - error), frame.y(y_value + error)
        parts.append(
            f'<g class="chart-interval"><title>{escape(name)}: {_number(y_value)} ± {_number(error)}</title>'
            f'<path stroke="{PALETTE[0]}" d="M{x:.1f},{low:.1f}V{high:.1f}"></path>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{PALETTE[0]}"></circle></g>'
        )
    if not clean:
        parts.append(_no_data(frame))
        return _svg(title, "no data", parts, box)
    centres = [item[1] for item in clean]
    errors = [item[2] for item in clean]
    summary = (
        f"{len(clean)} intervals; centres from {_number(min(centres))} to {_number(max(centres))}, "
        f"half-widths from {_number(min(errors))} to {_number(max(errors))}"
    )
    return _svg(title, summary, parts, box)


def _series(frame: _Frame, points: Sequence[Point], index: int, colour: str) -> list[str]:
    parts = []
    if len(points) > 1:
        path = " ".join(f"{frame.x(p[0]):.1f},{frame.y(p[1]):.1f}" for p in points)
        parts.append(
            f'<polyline class="chart-line-{index}" fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{path}"></polyline>'
        )
    for point in points:
        x, y = frame.x(point[0]), frame.y(point[1])
        if len(point) > 2 and math.isfinite(point[2]):
            low, high = frame.y(point[1] - point[2]), frame.y(point[1] + point[2])
            parts.append(
                f'<path stroke="{colour}" d="M{x:.1f},{low:.1f}V{high:.1f}M{x - 4:.1f},{low:.1f}h8'
                f'M{x - 4:.1f},{high:.1f}h8"></path>'
            )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"><title>{_describe(point)}</title></circle>'
        )
    return parts


def _describe(point: Point) -> str:
    text = f"({_number(point[0])}, {_number(point[1])}"
    if len(point) > 2 and math.isfinite(point[2]):
        text += f" ± {_number(point[2])}"
    return text + ")"


def _y_extremes(series: Mapping[str, Sequence[Point]]) -> list[float]:
    values = []
    for points in series.values():
        for point in points:
            error = point[2] if len(point) > 2 and math.isfinite(point[2]) else 0.0
            values += [point[1] - error, point[1] + error]
    return values


def _extent(values: Iterable[float]) -> tuple[float, float]:
    values = [value for value in values if math.isfinite(value)]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    return (low - 0.5, high + 0.5) if low == high else (low, high)


def _tick_step(low: float, high: float, count: int = 5) -> float:
    """The round distance (1, 2 or 5 × 10^k) between about `count` ticks over [low, high]."""
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values within [low, high]."""
    step = _tick_step(low, high, count)
    first = math.ceil(low / step - 1e-9) * step
    return [round(first + k * step, 10) for k in range(int((high - first) / step + 1e-9) + 1)]


def _widened_to_ticks(low: float, high: float) -> tuple[float, float]:
    """[low, high] widened to the nearest tick values around it."""
    step = _tick_step(low, high)
    return math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step


def _tick_above(high: float, minimum_step: float = 0.0) -> float:
    """The first tick above `high` (> 0) on an axis from 0, at least `minimum_step` apart:
    room above the highest mark, under a labelled line. The step is found again on the
    taller axis, as `_axes` finds it: for 10, 0–10's step 2 gives 12, between 0–12's ticks
    10 and 15; 0–12's step 5 gives 15."""
    step = max(minimum_step, _tick_step(0.0, high))
    step = max(minimum_step, _tick_step(0.0, (math.floor(high / step + 1e-9) + 1) * step))
    return (math.floor(high / step + 1e-9) + 1) * step


def _axes(frame: _Frame, x_label: str, y_label: str, integer_x: bool = False, integer_y: bool = False) -> list[str]:
    bottom, right = frame.box.height - BOTTOM, frame.box.width - RIGHT
    parts = [f'<path class="chart-axis" stroke="#5a6474" fill="none" d="M{LEFT},{TOP}V{bottom}H{right}"></path>']
    for tick in _ticks(frame.x_low, frame.x_high):
        if integer_x and tick != int(tick):
            continue
        x = frame.x(tick)
        parts.append(
            f'<path stroke="#5a6474" d="M{x:.1f},{bottom}v5"></path>'
            f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">{_number(tick)}</text>'
        )
    for tick in _ticks(frame.y_low, frame.y_high):
        if integer_y and tick != int(tick):
            continue
        y = frame.y(tick)
        parts.append(
            f'<path stroke="#d9dde3" d="M{LEFT},{y:.1f}H{right}"></path>'
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>'
        )
    parts.append(
        f'<text x="{(LEFT + right) / 2}" y="{frame.box.height - 10}" text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text transform="translate(14 {(TOP + bottom) / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text>"
    )
    return parts


def _vertical_line(frame: _Frame, value: float, label: str) -> str:
    """A dashed line at x = `value`, labelled above the plot: on the side with more room, so
    the label stays inside a NARROW box."""
    x = frame.x(min(max(value, frame.x_low), frame.x_high))
    right_half = x > (LEFT + frame.box.width - RIGHT) / 2
    text_x, anchor = (x - 4, "end") if right_half else (x + 4, "start")
    return (
        f'<path class="chart-marker" stroke="#b42318" stroke-width="2" stroke-dasharray="6 4" '
        f'd="M{x:.1f},{TOP - 6}V{frame.box.height - BOTTOM}"></path>'
        f'<text x="{text_x:.1f}" y="{TOP - 10}" text-anchor="{anchor}" fill="#b42318">{escape(label)}</text>'
    )


def _horizontal_line(frame: _Frame, value: float, label: str) -> str:
    y, right = frame.y(value), frame.box.width - RIGHT
    return (
        f'<path class="chart-marker" stroke="#9a5b00" stroke-dasharray="6 4" d="M{LEFT},{y:.1f}H{right}">'
        f'</path><text x="{right - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#9a5b00">'
        f"{escape(label)}</text>"
    )


def _no_data(frame: _Frame, text: str = "no data yet") -> str:
    """`text` in the middle of the plot, in lines that fit its width."""
    width, height = frame.box.width, frame.box.height
    x, middle = (LEFT + width - RIGHT) / 2, (TOP + height - BOTTOM) / 2
    lines = textwrap.wrap(text, (width - LEFT - RIGHT) // CHARACTER_WIDTH)
    first = middle + 4 - (len(lines) - 1) * LINE_HEIGHT / 2
    spans = "\n".join(
        f'<tspan x="{x}" y="{first + index * LINE_HEIGHT}">{escape(line)}</tspan>' for index, line in enumerate(lines)
    )
    return f'<text text-anchor="middle" class="muted">{spans}</text>'


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _svg(title: str, summary: str, parts: list[str], box: Box = WIDE) -> SafeString:
    label = escape(f"{title}. {summary}")
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {box.width} {box.height}" role="img" '
        f'aria-label="{label}" class="chart chart-{box.name}" font-family="system-ui, sans-serif" font-size="12">'
        f"<title>{escape(title)}</title><desc>{escape(summary)}</desc>" + "".join(parts) + "</svg>"
    )
