"""The lab's one chart: a small accessible horizontal bar chart drawn as SVG on the server."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def bar_chart_svg(*, title: str, bars: Sequence[tuple[str, float]], subtitle: str = "", unit: str = "",
                  good_max: float | None = None, width: int = 420, bar_height: int = 18) -> str:
    """A small accessible horizontal bar chart. Bars above ``good_max`` are drawn in the warning colour.

    Each label sits on its own line above its bar and the drawing is narrow, so on a phone's 390 px the text is
    shown near its own size instead of being shrunk to half, as a label column beside the bars would force.
    """
    value_room, label_gap, row_gap, title_height = 44, 4, 12, 22
    label_height = 16
    title_lines = [title, subtitle] if subtitle else [title]
    top = title_height * len(title_lines) + 6
    row = label_height + label_gap + bar_height + row_gap
    height = top + len(bars) * row
    biggest = max([value for _, value in bars] + [1])
    scale = (width - value_room) / biggest
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="chart-title" class="chart">',
        f'<title id="chart-title">{escape(" ".join(title_lines))}</title>',
    ]
    for n, line in enumerate(title_lines):
        kind = "chart-title" if n == 0 else "chart-subtitle"
        parts.append(f'<text x="0" y="{16 + n * title_height}" class="{kind}">{escape(line)}</text>')
    for n, (label, value) in enumerate(bars):
        y = top + n * row
        bad = good_max is not None and value > good_max
        bar_width = max(value * scale, 2)
        parts.append(f'<text x="0" y="{y + label_height - 3}" class="chart-label">{escape(label)}</text>')
        bar_y = y + label_height + label_gap
        parts.append(f'<rect x="0" y="{bar_y}" width="{bar_width:.1f}" height="{bar_height}" '
                     f'rx="3" class="{"bar-bad" if bad else "bar-good"}"/>')
        parts.append(f'<text x="{bar_width + 6:.1f}" y="{bar_y + bar_height - 4}" '
                     f'class="chart-value">{escape(f"{value:g}{unit}")}</text>')
    parts.append("</svg>")
    return "".join(parts)
