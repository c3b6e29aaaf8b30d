"""The eval index's histograms: per-turn latency, server time and overlap, pooled over items.

The values are each item bundle's `result.json` `turns` rows, pooled as `summary.md` pools
them: the turns of every ok, timing-valid item, overlap over heard turns only. So a
histogram's count is the "turns" count of the same metric in `summary.md`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.eval.summary import HEARD_ONLY, POOLED

if TYPE_CHECKING:
    from bokeh.model import Model
    from bokeh.plotting import figure as Figure

#: The per-turn fields drawn, in page order.
HISTOGRAMS = ("latency_ms", "server_ms", "overlap_ms")
#: At most this many bins per histogram.
MAX_BINS = 40


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def pooled_items(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows whose turns are pooled: ok and timing-valid."""
    return [r for r in rows if r.get("ok") is True and r.get("timing_valid") is True]


def pool_turn_values(
    eval_dir: Path, rows: Sequence[dict[str, Any]]
) -> tuple[dict[str, list[float]], list[str]]:
    """Per-turn values of `HISTOGRAMS` over the pooled items' bundles, and reading warnings."""
    pooled: dict[str, list[float]] = {name: [] for name in HISTOGRAMS}
    warnings: list[str] = []
    for row in pooled_items(rows):
        bundle = row.get("bundle")
        if not isinstance(bundle, str) or not bundle:
            continue
        path = eval_dir / bundle / "result.json"
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
            turns = result["turns"] if isinstance(result, dict) else None
            if not isinstance(turns, list):
                raise ValueError("no `turns` list")
        except (OSError, ValueError, KeyError) as exc:
            warnings.append(f"{path}: not read ({exc}); its turns are not in the histograms")
            continue
        for turn in turns:
            if not isinstance(turn, dict):
                continue
            heard = (_number(turn.get("heard_ms")) or 0.0) > 0
            for name in HISTOGRAMS:
                value = _number(turn.get(name))
                if value is not None and (heard or name not in HEARD_ONLY):
                    pooled[name].append(value)
    return pooled, warnings


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
