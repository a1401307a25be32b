"""The lab's one chart: a small accessible horizontal bar chart drawn as SVG on the server."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def bar_chart_svg(*, title: str, bars: Sequence[tuple[str, float]], unit: str = "", good_max: float | None = None,
                  width: int = 720, bar_height: int = 28) -> str:
    """A small accessible horizontal bar chart. Bars above ``good_max`` are drawn in the warning colour."""
    label_width, gap, top = 260, 10, 36
    height = top + len(bars) * (bar_height + gap) + 10
    biggest = max([value for _, value in bars] + [1])
    scale = (width - label_width - 70) / biggest
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="chart-title" class="chart">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<text x="0" y="20" class="chart-title">{escape(title)}</text>',
    ]
    for n, (label, value) in enumerate(bars):
        y = top + n * (bar_height + gap)
        bad = good_max is not None and value > good_max
        parts.append(f'<text x="{label_width - 8}" y="{y + bar_height * 0.68:.0f}" text-anchor="end" '
                     f'class="chart-label">{escape(label)}</text>')
        parts.append(f'<rect x="{label_width}" y="{y}" width="{max(value * scale, 2):.1f}" height="{bar_height}" '
                     f'rx="4" class="{"bar-bad" if bad else "bar-good"}"/>')
        shown = f"{value:g}{unit}"
        parts.append(f'<text x="{label_width + max(value * scale, 2) + 6:.1f}" y="{y + bar_height * 0.68:.0f}" '
                     f'class="chart-value">{escape(shown)}</text>')
    parts.append("</svg>")
    return "".join(parts)
