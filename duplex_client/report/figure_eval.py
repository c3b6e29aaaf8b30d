"""Static matplotlib figure of an eval: per-turn histograms and the items' status counts.

`eval_turns` gathers the turns an eval's aggregate pools (ok, timing-valid items) from its
output directory; `eval_figure` draws them. matplotlib (the `report` extra) is imported only
when a figure is asked for.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.report.eval_data import pooled_turns, read_summary_rows
from duplex_client.report.figure import LATENCY_COLOUR, empty_note, require_matplotlib

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def eval_turns(
    output_dir: str | os.PathLike[str],
    rows: Sequence[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The turns of every ok, timing-valid item of an eval (what its aggregate pools).

    `rows` are the summary rows (default: `summary.jsonl` of `output_dir`); each row's
    `bundle` is read relative to `output_dir`. A bundle whose `result.json` is gone or
    unreadable is left out.
    """
    out = Path(output_dir)
    turns, _ = pooled_turns(out, read_summary_rows(out) if rows is None else rows)
    return turns


def eval_figure(rows: list[dict[str, Any]], turns: list[dict[str, Any]]) -> Figure:
    """Histograms of per-turn latency, server time and overlap, and the items' status counts."""
    require_matplotlib()
    from matplotlib.figure import Figure

    from duplex_client.analysis.pooling import POOLED, turn_values

    values = turn_values(turns)
    fig = Figure(figsize=(12.0, 7.0), layout="constrained")
    grid = fig.subplots(2, 2)
    for ax, name in zip(grid.flat, ("latency_ms", "server_ms", "overlap_ms"), strict=False):
        _histogram(ax, name, POOLED[name], values[name])
    _status_counts(grid.flat[3], rows)
    pooled = sum(1 for r in rows if r.get("ok") is True and r.get("timing_valid") is True)
    fig.suptitle(
        f"eval: {len(rows)} item runs, {len(turns)} turns of {pooled} ok, timing-valid items",
        fontsize=11,
    )
    return fig


def _histogram(ax: Axes, name: str, label: str, values: list[float]) -> None:
    from duplex_client.analysis.pooling import percentiles

    ax.set_label(name)
    ax.set_xlabel(f"{label} (ms)")
    ax.set_ylabel("turns")
    if not values:
        ax.set_title(f"{label}: no turns", fontsize=10)
        empty_note(ax, "no measured turns")
        return
    bins = max(5, min(50, 2 * int(len(values) ** 0.5)))
    ax.hist(values, bins=bins, color=LATENCY_COLOUR, edgecolor="white", gid=name)
    p50, p95 = percentiles(values, (0.5, 0.95))
    ax.axvline(p50, color="#333333", linewidth=1.0, label=f"p50 {p50:.0f} ms")
    ax.axvline(p95, color="#333333", linewidth=1.0, linestyle="--", label=f"p95 {p95:.0f} ms")
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(f"{label}: {len(values)} turns", fontsize=10)


def _status_counts(ax: Axes, rows: Iterable[dict[str, Any]]) -> None:
    rows = list(rows)
    ax.set_label("status")
    ax.set_ylabel("item runs")
    counts = Counter(str(r.get("status") or "unknown") for r in rows)
    invalid = sum(1 for r in rows if r.get("timing_valid") is False)
    ax.set_title(f"status ({invalid} timing-invalid, not pooled)", fontsize=10)
    if not counts:
        empty_note(ax, "no items")
        return
    names = sorted(counts, key=lambda s: (s != "ok", -counts[s], s))
    colours = ["#54a24b" if s == "ok" else "#d62728" for s in names]
    bars = ax.bar(names, [counts[s] for s in names], color=colours, gid="status")
    ax.bar_label(bars, fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
