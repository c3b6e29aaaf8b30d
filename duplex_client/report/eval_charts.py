"""The eval index's histograms: per-turn latency, server time and overlap, pooled over items.

The values are each item bundle's `result.json` `turns` rows, pooled as `summary.md` pools
them: the turns of every ok, timing-valid item, overlap over heard turns only. So a
histogram's count is the "turns" count of the same metric in `summary.md`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from duplex_client.analysis.pooling import POOLED

if TYPE_CHECKING:
    from bokeh.model import Model
    from bokeh.plotting import figure as Figure

#: The per-turn fields drawn, in page order.
HISTOGRAMS = ("latency_ms", "server_ms", "overlap_ms")
#: At most this many bins per histogram.
MAX_BINS = 40


def histogram_bins(values: Sequence[float]) -> tuple[list[int], list[float]]:
    """Counts and bin edges of `values` (numpy's "auto" bins, at most `MAX_BINS`)."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    edges = np.histogram_bin_edges(data, bins="auto")
    if len(edges) - 1 > MAX_BINS:
        edges = np.histogram_bin_edges(data, bins=MAX_BINS)
    counts, edges = np.histogram(data, bins=edges)
    return [int(c) for c in counts], [float(e) for e in edges]


def _figure(name: str, values: Sequence[float]) -> Figure:
    from bokeh.models import ColumnDataSource, DataRange1d, HoverTool
    from bokeh.plotting import figure

    counts, edges = histogram_bins(values)
    source = ColumnDataSource(
        {"top": counts, "left": edges[:-1], "right": edges[1:]}, name=f"hist-{name}-data"
    )
    fig = figure(
        title=f"{POOLED[name]} per turn (n = {len(values)})",
        width=380,
        height=240,
        x_axis_label="ms",
        y_axis_label="turns",
        tools="xpan,xwheel_zoom,box_zoom,reset,save",
        toolbar_location="above",
        name=f"hist-{name}",
        y_range=DataRange1d(start=0),
    )
    fig.quad(
        top="top", bottom=0, left="left", right="right", source=source,
        fill_color="#4c78a8", line_color="white",
    )  # fmt: skip
    fig.add_tools(HoverTool(tooltips=[("ms", "@left{0.0} – @right{0.0}"), ("turns", "@top")]))
    return fig


def histograms_html(pooled: dict[str, list[float]]) -> tuple[str, str]:
    """The histograms' HTML (one `div#hist-<field>` each) and the Bokeh script drawing them."""
    from bokeh.embed import components

    figures: dict[str, Model] = {
        name: _figure(name, pooled[name]) for name in HISTOGRAMS if pooled.get(name)
    }
    script, divs = components(figures) if figures else ("", {})
    parts = []
    for name in HISTOGRAMS:
        if name in divs:
            parts.append(f'<div class="histogram" id="hist-{name}">{divs[name]}</div>')
        else:
            label = html.escape(POOLED[name])
            parts.append(
                f'<div class="histogram empty" id="hist-{name}">'
                f"<p>No {label} values: no ok, timing-valid turn has one.</p></div>"
            )
    return '<div class="histograms">' + "".join(parts) + "</div>", script
