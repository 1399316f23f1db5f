"""Small inline SVG charts for the evaluation report, generated without any plotting library.

Every function returns one ``<svg>`` element as a string, meant to be pasted into an
HTML page: no external references, no script, text set in the page's own font. Colours
come from the Okabe–Ito palette, which stays distinguishable for the common forms of
colour blindness; line charts add dash patterns and marker shapes, so a series can be
told apart even in a black-and-white print.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

#: Okabe–Ito, reordered so the first colours have the best contrast on white; yellow last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: Diverging colours: blue for "challenger better", vermillion for "baseline better".
WIN_COLOR, LOSS_COLOR = "#0072B2", "#D55E00"
_DASHES = ("", "6 3", "2 3", "8 3 2 3", "4 4", "1 2", "10 2", "3 1 1 1")
_MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down", "plus", "cross", "circle")
_INK, _GRID, _MUTED = "#1a1a1a", "#d9d9d9", "#595959"


def series_colors(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per series name, in order; cycles after eight series."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _n(x: float) -> str:
    """A compact coordinate: one decimal is plenty at screen resolution."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def _text(x: float, y: float, body: str, anchor: str = "start", cls: str = "", extra: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{klass}{extra}>{escape(body)}</text>'


def _svg_open(width: float, height: float, label: str) -> str:
    # No xmlns: inline SVG in HTML5 does not need it, and the page then holds no URL at all.
    return (f'<svg viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" height="{_n(height)}" '
            f'role="img" aria-label="{escape(label)}" class="chart">')


def _marker(shape: str, x: float, y: float, color: str, tip: str) -> str:
    """A marker of ``shape`` centred on (x, y) with a hover tooltip."""
    title = f"<title>{escape(tip)}</title>"
    r = 3.6
    if shape == "circle":
        return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" fill="{color}">{title}</circle>'
    if shape == "square":
        return f'<rect x="{_n(x - r)}" y="{_n(y - r)}" width="{_n(2 * r)}" height="{_n(2 * r)}" fill="{color}">{title}</rect>'
    if shape in ("plus", "cross"):
        d = (f"M{_n(x - r)} {_n(y)}H{_n(x + r)}M{_n(x)} {_n(y - r)}V{_n(y + r)}" if shape == "plus" else
             f"M{_n(x - r)} {_n(y - r)}L{_n(x + r)} {_n(y + r)}M{_n(x - r)} {_n(y + r)}L{_n(x + r)} {_n(y - r)}")
        return f'<path d="{d}" stroke="{color}" stroke-width="2.2" fill="none">{title}</path>'
    points = {
        "triangle": [(x, y - r - 0.8), (x + r + 0.4, y + r - 0.4), (x - r - 0.4, y + r - 0.4)],
        "triangle-down": [(x, y + r + 0.8), (x + r + 0.4, y - r + 0.4), (x - r - 0.4, y - r + 0.4)],
        "diamond": [(x, y - r - 0.8), (x + r + 0.8, y), (x, y + r + 0.8), (x - r - 0.8, y)],
    }[shape]
    pts = " ".join(f"{_n(px)},{_n(py)}" for px, py in points)
    return f'<polygon points="{pts}" fill="{color}">{title}</polygon>'


def _entry_width(name: str) -> float:
    # A rough text width: SVG cannot measure text without a browser, 7 px a character is safe at 12 px.
    return 32 + 7.2 * len(name) + 18


def _legend_layout(names: Sequence[str], across: float | None) -> list[tuple[float, float]]:
    """(dx, dy) of each legend entry: one per row, or flowing left to right and wrapping at ``across``."""
    if across is None:
        return [(0.0, 18.0 * i) for i in range(len(names))]
    out, cx, cy = [], 0.0, 0.0
    for i, name in enumerate(names):
        if i and cx + _entry_width(name) > across:
            cx, cy = 0.0, cy + 18
        out.append((cx, cy))
        cx += _entry_width(name)
    return out


def _legend(items: Sequence[tuple[str, str, int | None]], x: float, y: float, line: bool,
            across: float | None = None) -> list[str]:
    """A legend; ``line`` draws each series' dash pattern and marker, else a colour swatch."""
    out = []
    for (name, color, style), (dx, dy) in zip(items, _legend_layout([i[0] for i in items], across)):
        ex, cy = x + dx, y + dy
        if line and style is not None:
            dash = _DASHES[style % len(_DASHES)]
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<line x1="{_n(ex)}" y1="{_n(cy)}" x2="{_n(ex + 26)}" y2="{_n(cy)}" stroke="{color}" '
                       f'stroke-width="2"{dash_attr}/>')
            out.append(_marker(_MARKERS[style % len(_MARKERS)], ex + 13, cy, color, name))
        else:
            out.append(f'<rect x="{_n(ex + 6)}" y="{_n(cy - 6)}" width="14" height="12" fill="{color}"/>')
        out.append(_text(ex + 32, cy + 4, name))
    return out


def grouped_hbar(groups: Sequence[str], series: Sequence[str], values: Mapping[str, Mapping[str, float | None]],
                 colors: Mapping[str, str], label: str) -> str:
    """Horizontal bars on a 0–1 scale: one group per metric, one bar per series, value at the bar's end.

    ``values`` maps series → group → value; a missing value draws no bar and says "n/a".
    """
    bar_h, bar_gap, group_gap = 13.0, 3.0, 16.0
    label_w, plot_w, value_w = 110.0, 760.0, 48.0
    layout = _legend_layout(series, plot_w)
    top = (layout[-1][1] if layout else 0.0) + 36
    group_h = len(series) * (bar_h + bar_gap) - bar_gap
    plot_h = len(groups) * (group_h + group_gap) - group_gap if groups else 0
    width, height = label_w + plot_w + value_w + 10, top + plot_h + 30
    out = [_svg_open(width, height, label)]
    out += _legend([(s, colors[s], None) for s in series], label_w - 6, 12, line=False, across=plot_w)
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        x = label_w + tick * plot_w
        out.append(f'<line x1="{_n(x)}" y1="{_n(top - 4)}" x2="{_n(x)}" y2="{_n(top + plot_h + 4)}" '
                   f'stroke="{_GRID}" stroke-width="1"/>')
        out.append(_text(x, top + plot_h + 18, f"{tick:.1f}", "middle", "tick"))
    for g, group in enumerate(groups):
        y0 = top + g * (group_h + group_gap)
        out.append(_text(label_w - 10, y0 + group_h / 2 + 4, group, "end", "axis-label"))
        for i, name in enumerate(series):
            v = values.get(name, {}).get(group)
            y = y0 + i * (bar_h + bar_gap)
            if v is None:
                out.append(_text(label_w + 4, y + bar_h - 2, "n/a", "start", "value"))
                continue
            w = max(0.0, min(1.0, v)) * plot_w
            out.append(f'<rect x="{_n(label_w)}" y="{_n(y)}" width="{_n(w)}" height="{_n(bar_h)}" '
                       f'fill="{colors[name]}"><title>{escape(f"{name} {group} = {v:.3f}")}</title></rect>')
            out.append(_text(label_w + w + 4, y + bar_h - 2.5, f"{v:.3f}", "start", "value"))
    out.append(f'<line x1="{_n(label_w)}" y1="{_n(top - 4)}" x2="{_n(label_w)}" y2="{_n(top + plot_h + 4)}" '
               f'stroke="{_INK}" stroke-width="1"/>')
    out.append("</svg>")
    return "".join(out)


def line_chart(xs: Sequence[int], series: Mapping[str, Sequence[float | None]], colors: Mapping[str, str],
               x_label: str, y_label: str, label: str) -> str:
    """Lines over integer ``xs``, with marker shapes, dash patterns and a legend.

    The y axis spans the data rounded out to tenths within 0–1 rather than all of 0–1:
    close curves are the usual case, and a line (unlike a bar) does not mislead when the
    axis does not start at zero. The tick labels say where it starts.
    """
    left, right, top, bottom = 52.0, 170.0, 14.0, 44.0
    plot_w, plot_h = 700.0, 300.0
    width, height = left + plot_w + right, top + plot_h + bottom
    lo, hi = (min(xs), max(xs)) if xs else (0, 1)
    ys = [y for values in series.values() for y in values if y is not None]
    y_lo = max(0.0, math.floor(min(ys, default=0.0) * 10 + 1e-9) / 10)
    y_hi = min(1.0, math.ceil(max(ys, default=1.0) * 10 - 1e-9) / 10)
    if y_hi - y_lo < 0.2:  # a flat set of curves still gets a readable band around it
        y_lo, y_hi = max(0.0, y_lo - 0.1), min(1.0, y_hi + 0.1)
    y_step = 0.1 if y_hi - y_lo <= 0.6 + 1e-9 else 0.2
    # Snap both ends to the tick step, so the top and bottom of the axis are labelled.
    y_lo = max(0.0, math.floor(y_lo / y_step + 1e-9) * y_step)
    y_hi = min(1.0, math.ceil(y_hi / y_step - 1e-9) * y_step)

    def sx(x: float) -> float:
        return left + (plot_w / 2 if hi == lo else (x - lo) / (hi - lo) * plot_w)

    def sy(y: float) -> float:
        return top + (y_hi - max(y_lo, min(y_hi, y))) / (y_hi - y_lo) * plot_h

    out = [_svg_open(width, height, label)]
    for i in range(round((y_hi - y_lo) / y_step) + 1):
        tick = y_lo + i * y_step
        out.append(f'<line x1="{_n(left)}" y1="{_n(sy(tick))}" x2="{_n(left + plot_w)}" y2="{_n(sy(tick))}" '
                   f'stroke="{_GRID}" stroke-width="1"/>')
        out.append(_text(left - 6, sy(tick) + 4, f"{tick:.1f}", "end", "tick"))
    step = max(1, math.ceil(len(xs) / 12))  # at most ~12 x tick labels, however deep the cut-off
    for i, x in enumerate(xs):
        if i % step == 0 or i == len(xs) - 1:
            out.append(f'<line x1="{_n(sx(x))}" y1="{_n(top + plot_h)}" x2="{_n(sx(x))}" y2="{_n(top + plot_h + 4)}" '
                       f'stroke="{_INK}"/>')
            out.append(_text(sx(x), top + plot_h + 17, str(x), "middle", "tick"))
    out.append(f'<path d="M{_n(left)} {_n(top)}V{_n(top + plot_h)}H{_n(left + plot_w)}" stroke="{_INK}" '
               f'fill="none" stroke-width="1"/>')
    out.append(_text(left + plot_w / 2, height - 6, x_label, "middle", "axis-label"))
    out.append(_text(14, top + plot_h / 2, y_label, "middle", "axis-label",
                     f' transform="rotate(-90 14 {_n(top + plot_h / 2)})"'))
    for s, (name, values) in enumerate(series.items()):
        color = colors[name]
        pts = [(x, y) for x, y in zip(xs, values) if y is not None]
        dash = _DASHES[s % len(_DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        if len(pts) > 1:
            path = " ".join(f"{_n(sx(x))},{_n(sy(y))}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash_attr}/>')
        for x, y in pts:
            out.append(_marker(_MARKERS[s % len(_MARKERS)], sx(x), sy(y), color, f"{name}: {y_label} at {x} = {y:.3f}"))
    out += _legend([(name, colors[name], i) for i, name in enumerate(series)], left + plot_w + 16, top + 10, line=True)
    out.append("</svg>")
    return "".join(out)


def diverging_bars(items: Sequence[tuple[str, float]], pos_label: str, neg_label: str, y_label: str,
                   label: str) -> str:
    """One vertical bar per item, sorted from the largest gain to the largest loss, around a zero line.

    ``items`` are (tooltip, difference) pairs. Sets larger than the plot is wide are thinned
    to evenly spaced quantiles of the sorted differences, which keeps the shape of the curve.
    """
    left, right, top, bottom = 52.0, 12.0, 22.0, 36.0
    plot_w, plot_h = 1000.0, 240.0
    width, height = left + plot_w + right, top + plot_h + bottom
    ordered = sorted(items, key=lambda it: it[1], reverse=True)
    n = len(ordered)
    cols = int(plot_w // 2)
    shown = ordered if n <= cols else [ordered[round(i * (n - 1) / (cols - 1))] for i in range(cols)]
    peak = max((abs(v) for _, v in shown), default=0.0)
    span = max(0.2, math.ceil(peak * 5 - 1e-9) / 5)  # round up to a fifth: ticks stay at one decimal

    def sy(v: float) -> float:
        return top + plot_h / 2 - v / span * (plot_h / 2)

    out = [_svg_open(width, height, label)]
    for tick in (-span, -span / 2, 0.0, span / 2, span):
        out.append(f'<line x1="{_n(left)}" y1="{_n(sy(tick))}" x2="{_n(left + plot_w)}" y2="{_n(sy(tick))}" '
                   f'stroke="{_GRID if tick else _INK}" stroke-width="1"/>')
        out.append(_text(left - 6, sy(tick) + 4, f"{tick:+.1f}" if tick else "0", "end", "tick"))
    bw = min(24.0, plot_w / max(1, len(shown)))  # a handful of queries should not make slabs
    tied = [i for i, (_, v) in enumerate(shown) if abs(v) < 1e-12]
    if tied:  # name the flat stretch in the middle, or it reads as missing data
        mid = left + (tied[0] + tied[-1] + 1) / 2 * bw
        out.append(_text(mid, sy(0) - 6, f"{round(len(tied) * n / len(shown))} ties", "middle", "tick"))
    for i, (tip, v) in enumerate(shown):
        if abs(v) < 1e-12:
            continue  # ties draw nothing; their count is printed next to the chart
        y, h = (sy(v), sy(0) - sy(v)) if v > 0 else (sy(0), sy(v) - sy(0))
        color = WIN_COLOR if v > 0 else LOSS_COLOR
        out.append(f'<rect x="{_n(left + i * bw + bw * 0.08)}" y="{_n(y)}" width="{_n(max(0.6, bw * 0.84))}" '
                   f'height="{_n(max(0.8, h))}" fill="{color}"><title>{escape(f"{tip}: {v:+.3f}")}</title></rect>')
    # The arrows carry the colour; the words stay dark, since vermillion text on white is too faint.
    out.append(f'<text x="{_n(left + 6)}" y="{_n(top - 8)}" class="axis-label"><tspan fill="{WIN_COLOR}">▲</tspan> '
               f'{escape(pos_label)}</text>')
    out.append(f'<text x="{_n(left + plot_w - 6)}" y="{_n(top + plot_h + 16)}" text-anchor="end" class="axis-label">'
               f'<tspan fill="{LOSS_COLOR}">▼</tspan> {escape(neg_label)}</text>')
    out.append(_text(left + 6, top + plot_h + 16, f"{n} queries, sorted by difference", "start", "tick"))
    out.append(_text(14, top + plot_h / 2, y_label, "middle", "axis-label",
                     f' transform="rotate(-90 14 {_n(top + plot_h / 2)})"'))
    out.append("</svg>")
    return "".join(out)


def risk_coverage_chart(points: Sequence[Mapping[str, float | None]], label: str = "accuracy against coverage",
                        mark: float | None = None) -> str:
    """Accuracy of the answered questions (y) against the share answered (x), one marker per
    confidence threshold (hover: threshold, coverage, accuracy); ``mark`` rings one threshold.

    Both axes span 0–1: coverage and accuracy are shares, and the curve's start (answer
    everything) and end (answer little) are what the chart is read for."""
    left, right, top, bottom = 52.0, 24.0, 14.0, 44.0
    plot_w, plot_h = 520.0, 300.0
    width, height = left + plot_w + right, top + plot_h + bottom

    def sx(x: float) -> float:
        return left + max(0.0, min(1.0, x)) * plot_w

    def sy(y: float) -> float:
        return top + (1.0 - max(0.0, min(1.0, y))) * plot_h

    out = [_svg_open(width, height, label)]
    for i in range(6):
        t = i / 5
        out.append(f'<line x1="{_n(left)}" y1="{_n(sy(t))}" x2="{_n(left + plot_w)}" y2="{_n(sy(t))}" '
                   f'stroke="{_GRID}" stroke-width="1"/>')
        out.append(_text(left - 6, sy(t) + 4, f"{t:.1f}", "end", "tick"))
        out.append(_text(sx(t), top + plot_h + 17, f"{t:.1f}", "middle", "tick"))
    out.append(f'<path d="M{_n(left)} {_n(top)}V{_n(top + plot_h)}H{_n(left + plot_w)}" stroke="{_INK}" '
               f'fill="none" stroke-width="1"/>')
    out.append(_text(left + plot_w / 2, height - 6, "coverage (share of questions answered)", "middle", "axis-label"))
    out.append(_text(14, top + plot_h / 2, "accuracy of answered", "middle", "axis-label",
                     f' transform="rotate(-90 14 {_n(top + plot_h / 2)})"'))
    pts = [(float(p["coverage"] or 0.0), float(p["accuracy"] or 0.0), float(p.get("threshold") or 0.0))
           for p in points if p.get("coverage") is not None and p.get("accuracy") is not None]
    if len(pts) > 1:
        path = " ".join(f"{_n(sx(c))},{_n(sy(a))}" for c, a, _ in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[0]}" stroke-width="2"/>')
    for c, a, t in pts:
        out.append(_marker("circle", sx(c), sy(a), PALETTE[0],
                           f"confidence >= {t:.2f}: coverage {c:.3f}, accuracy {a:.3f}"))
        if mark is not None and abs(t - mark) < 1e-9:
            out.append(f'<circle cx="{_n(sx(c))}" cy="{_n(sy(a))}" r="7" fill="none" stroke="{PALETTE[3]}" '
                       f'stroke-width="2"><title>{escape(f"default threshold {t:.2f}")}</title></circle>')
    out.append("</svg>")
    return "".join(out)
