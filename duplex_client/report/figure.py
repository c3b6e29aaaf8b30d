"""Static matplotlib figure of one run: every track as a row of axes on media time (s).

`run_figure` builds a bare `matplotlib.figure.Figure` (no pyplot state), so it works headless
and in notebooks; each track is one or a few vectorised artists, so a 10-minute run draws as
fast as a short one. `save_png` writes any figure as a PNG, atomically. matplotlib (the
`report` extra) is imported only when a figure is asked for; the eval figure is in
`figure_eval`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.files import atomic_file
from duplex_client.report.bundle_reader import Envelope, RunBundleData
from duplex_client.report.run_view import RunView
from duplex_client.report.track_columns import lanes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MISSING_EXTRA = "plots need matplotlib: pip install 'duplex-client[report]'"
#: The run figure's tracks, top to bottom; each axes' ylabel and `get_label()` is its name.
RUN_TRACKS = ("input", "units", "frames", "decisions", "heard", "turns", "lateness", "events")
#: Relative row heights of the tracks.
TRACK_HEIGHTS = dict(zip(RUN_TRACKS, (1.3, 0.6, 1.0, 0.6, 1.3, 0.8, 0.8, 0.8), strict=True))
UNIT_COLOURS = {"AUDIO": "#4c78a8", "OMNI": "#9d6fd1", "VISION": "#54a24b"}
OTHER_COLOUR = "#9a9a9a"
#: Marker, colour and row of each decision kind.
DECISION_STYLE = {"listen": ("o", "#8a8f99", 0.0), "speak": ("^", "#d6452f", 1.0)}
#: Row, colour and legend name of each point-event kind of the `events` track.
MARKER_STYLE = {
    "commit": (0.0, "#2f7ed8", "commit"),
    "server_commit": (1.0, "#1b9e77", "server commit"),
    "reconnect": (2.0, "#e6a100", "reconnect"),
    "error": (3.0, "#d62728", "error"),
}
INPUT_COLOUR, HEARD_COLOUR = "#4c78a8", "#d6452f"
USER_COLOUR, LATENCY_COLOUR, CUT_COLOUR = "#7f7f7f", "#ff9f1c", "#d62728"
#: A block (unit, latency bar) gets its text written on it when this share of the run wide.
LABEL_MIN_SHARE = 1 / 80
#: About the height (inches) of the frames row, to draw thumbnails at their own aspect.
THUMBNAIL_ROW_IN = 0.9
#: Up to this many units, each block is outlined in white.
UNIT_EDGE_MAX = 150
FIGURE_WIDTH_IN = 14.0
DEFAULT_DPI = 110
#: How the small labels on blocks are written.
LABEL: dict[str, Any] = {"fontsize": 7, "ha": "center", "va": "center", "clip_on": True}
#: Where each track's legend goes: right of its axes.
LEGEND: dict[str, Any] = dict(loc="upper left", bbox_to_anchor=(1, 1), fontsize=7, frameon=False)


def require_matplotlib() -> None:
    """Raise ImportError with the install hint when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(MISSING_EXTRA) from None


def run_figure(data: RunBundleData, *, thumbnails: bool = False) -> Figure:
    """One run's tracks as rows of axes on a shared media-time axis (seconds)."""
    require_matplotlib()
    from matplotlib.figure import Figure

    view = data.view
    names = [n for n in RUN_TRACKS if n != "frames" or thumbnails]
    heights = [TRACK_HEIGHTS[n] for n in names]
    fig = Figure(figsize=(FIGURE_WIDTH_IN, 1.2 + 1.1 * sum(heights)), layout="constrained")
    grid = fig.subplots(len(names), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    axes: dict[str, Axes] = dict(zip(names, grid, strict=True))
    for name, ax in axes.items():
        ax.set_ylabel(name, rotation=0, ha="right", va="center")
        ax.set_label(name)
    end_s = run_end_ms(data) / 1000.0
    _wave(axes["input"], data.input_wave, INPUT_COLOUR, "no input audio in this bundle")
    _units(axes["units"], view, end_s)
    if thumbnails:
        _thumbnails(axes["frames"], data, end_s)
    _decisions(axes["decisions"], view)
    _wave(axes["heard"], data.heard_wave, HEARD_COLOUR, "no heard audio in this bundle")
    _heard_spans(axes["heard"], view, end_s)
    _turns(axes["turns"], view, end_s)
    _lateness(axes["lateness"], view)
    _events(axes["events"], view, [a for n, a in axes.items() if n != "events"])
    axes["events"].set_xlim(0.0, end_s)
    axes["events"].set_xlabel("media time (s)")
    title = f"{view.title} · model {view.model or 'unknown'} · status {view.status}"
    if view.warnings:
        title += "\n⚠ " + "; ".join(view.warnings)
    fig.suptitle(title, fontsize=11)
    return fig


def run_end_ms(data: RunBundleData) -> float:
    """The media time the run figure's x axis ends at: the last thing any track draws."""
    view = data.view
    ends = [view.duration_ms, *(m.at_ms for m in view.markers), *(p.at_ms for p in view.lateness)]
    ends += [d.at_ms for d in view.decisions] + [end for _, end in view.user_speech]
    for wave in (data.input_wave, data.heard_wave):
        if wave is not None and wave.t_ms:
            ends.append(wave.t_ms[-1])
    return max(max(ends, default=0.0), 1.0)


def empty_note(ax: Axes, text: str, *, keep_ticks: bool = False) -> None:
    """A grey note in the middle of an axes that has nothing to draw."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, color="#777777", **{**LABEL, "fontsize": 8})
    if not keep_ticks:
        ax.set_yticks([])


def _legend(ax: Axes) -> None:
    entries = len(ax.get_legend_handles_labels()[0])
    if entries:  # two columns past three entries: a tall legend would stretch its row
        ax.legend(**LEGEND, ncols=1 if entries <= 3 else 2)


def _rows(ax: Axes, labels: dict[str, float], low: float, high: float) -> None:
    ax.set_ylim(low, high)
    ax.set_yticks(list(labels.values()), list(labels))
    ax.tick_params(axis="y", labelsize=7)


def _wave(ax: Axes, wave: Envelope | None, colour: str, missing: str) -> None:
    ax.set_ylim(-1.0, 1.0)
    if wave is None or not wave.t_ms:
        empty_note(ax, missing)
        return
    t_s = [t / 1000.0 for t in wave.t_ms]
    ax.fill_between(t_s, wave.low, wave.high, color=colour, linewidth=0, gid="wave")
    _rows(ax, {"-1": -1.0, "0": 0.0, "1": 1.0}, -1.0, 1.0)


def _units(ax: Axes, view: RunView, end_s: float) -> None:
    """One bar collection per kind (fallback units hatched apart); wide units numbered."""
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([])
    if not view.units:
        empty_note(ax, "no units in this bundle")
        return
    groups: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for u in view.units:
        start, width = u.start_ms / 1000.0, (u.end_ms - u.start_ms) / 1000.0
        groups.setdefault((u.kind, u.fallback), []).append((start, width))
        if width >= LABEL_MIN_SHARE * end_s:
            ax.text(start + width / 2, 0.5, str(u.index), color="white", **LABEL)
    rank = {kind: n for n, kind in enumerate(UNIT_COLOURS)}
    narrow = len(view.units) > UNIT_EDGE_MAX  # white edges would hide the colours
    for (kind, fallback), ranges in sorted(
        groups.items(), key=lambda g: (rank.get(g[0][0], 9), g[0])
    ):
        extra = " fallback" if fallback else ""
        plural = "s" if len(ranges) != 1 else ""
        ax.broken_barh(
            ranges,
            (0.1, 0.8),
            facecolors=UNIT_COLOURS.get(kind, OTHER_COLOUR),
            edgecolors="face" if narrow and not fallback else "white",
            linewidths=0.5,
            hatch="////" if fallback else None,
            gid=f"units:{kind}{extra.replace(' ', ':')}",
            label=f"{kind}{extra} ({len(ranges)} unit{plural})",
        )
    _legend(ax)


def _thumbnails(ax: Axes, data: RunBundleData, end_s: float) -> None:
    """Each unit's first frame from the unit's start, at about its aspect; overlaps skipped."""
    from matplotlib.image import imread

    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([])
    s_per_in = end_s / (0.8 * FIGURE_WIDTH_IN)  # about the axes' width
    free_from = float("-inf")
    drawn = 0
    for u in data.view.units:
        path = next((data.thumbnails.get(f.name) for f in u.frames), None)
        start = u.start_ms / 1000.0
        if path is None or start < free_from:
            continue
        try:
            image = imread(path)
        except (OSError, ValueError, SyntaxError):  # unreadable JPEG: leave the slot empty
            continue
        end = start + THUMBNAIL_ROW_IN * image.shape[1] / image.shape[0] * s_per_in
        ax.imshow(image, extent=(start, end, 0.0, 1.0), aspect="auto", gid=f"frame:{u.index}")
        free_from = end
        drawn += 1
    if not drawn:
        empty_note(ax, "no frame thumbnails in this bundle")


def _decisions(ax: Axes, view: RunView) -> None:
    """One scatter per decision kind, each on its own row."""
    for kind, (marker, colour, row) in DECISION_STYLE.items():
        xs = [d.at_ms / 1000.0 for d in view.decisions if d.decision == kind]
        label = f"{kind} ({len(xs)})"
        ax.scatter(xs, [row] * len(xs), marker=marker, c=colour, s=22, gid=kind, label=label)
    _rows(ax, {kind: row for kind, (_, _, row) in DECISION_STYLE.items()}, -0.7, 1.7)
    _legend(ax)


def _heard_spans(ax: Axes, view: RunView, end_s: float) -> None:
    """Each turn's heard span shaded (alternating, as turns often abut), numbered; cuts marked."""
    from matplotlib.colors import to_rgba

    spans, cuts = [], []
    for t in view.turns:
        if t.heard_start_ms is None or t.heard_end_ms is None:
            continue
        start, width = t.heard_start_ms / 1000.0, (t.heard_end_ms - t.heard_start_ms) / 1000.0
        spans.append((start, width))
        if width >= LABEL_MIN_SHARE * end_s:
            ax.text(start + width / 2, 0.85, str(t.number), **LABEL)
        if t.cut:
            cuts.append(start + width)
    if spans:
        shades = [to_rgba(HEARD_COLOUR, 0.10 if k % 2 else 0.22) for k in range(len(spans))]
        label = f"heard turns ({len(spans)})"
        ax.broken_barh(
            spans, (-1.0, 2.0), facecolors=shades, zorder=0, gid="heard_spans", label=label
        )
    if cuts:
        ax.vlines(
            cuts,
            -1.0,
            1.0,
            colors=CUT_COLOUR,
            linewidths=1.5,
            gid="cuts",
            label=f"cut ({len(cuts)})",
        )
    _legend(ax)


def _turns(ax: Axes, view: RunView, end_s: float) -> None:
    """User speech on one row; each measured turn's latency (user end → heard) as a bar."""
    from matplotlib.collections import PolyCollection

    _rows(ax, {"latency": 0.0, "user speech": 1.0}, -0.7, 1.7)
    if view.user_speech:
        segments = [(s / 1000.0, (e - s) / 1000.0) for s, e in view.user_speech]
        source = f", {view.user_speech_source}" if view.user_speech_source else ""
        label = f"user speech ({len(segments)}{source})"
        ax.broken_barh(segments, (0.7, 0.6), facecolors=USER_COLOUR, gid="user_speech", label=label)
    bars: list[tuple[float, float]] = []
    texts: list[str] = []
    for t in view.turns:
        if t.latency_ms is None or t.user_end_ms is None:
            continue
        bars.append(
            (min(t.user_end_ms, t.user_end_ms + t.latency_ms) / 1000.0, abs(t.latency_ms) / 1000.0)
        )
        wide = bars[-1][1] >= LABEL_MIN_SHARE * end_s
        texts.append(f"{t.number}: {t.latency_ms:.0f} ms" if wide else str(t.number))
    lane_of = lanes(bars)
    height = 0.9 / (max(lane_of, default=0) + 1)
    boxes = []
    last_label: dict[int, float] = {}  # per lane: numbers closer than a label's room are left out
    for (start, width), lane, text in zip(bars, lane_of, texts, strict=True):
        low, high = -0.45 + lane * height, -0.45 + (lane + 0.9) * height
        boxes.append([(start, low), (start + width, low), (start + width, high), (start, high)])
        mid = start + width / 2
        if mid - last_label.get(lane, float("-inf")) >= LABEL_MIN_SHARE * end_s:
            ax.text(mid, (low + high) / 2, text, **LABEL)
            last_label[lane] = mid
    if boxes:
        label = f"latency: user end → heard ({len(boxes)})"
        ax.add_collection(
            PolyCollection(
                boxes,
                facecolors=LATENCY_COLOUR,
                edgecolors="white",
                linewidths=0.5,
                gid="latency",
                label=label,
            )
        )
    if not view.user_speech and not boxes:
        empty_note(ax, "no user speech or measured latency", keep_ticks=True)
    _legend(ax)


def _lateness(ax: Axes, view: RunView) -> None:
    """Each append's send lateness as one line, against the timing-valid limit."""
    from duplex_client.analysis.pooling import TIMING_LATENESS_MS

    if not view.lateness:
        empty_note(ax, "no send lateness in this bundle")
        return
    xs = [p.at_ms / 1000.0 for p in view.lateness]
    ys = [p.lateness_ms for p in view.lateness]
    ax.plot(
        xs,
        ys,
        color="#555555",
        linewidth=0.8,
        marker=".",
        markersize=2,
        gid="lateness",
        label=f"send lateness, ms ({len(xs)} appends)",
    )
    ax.axhline(
        TIMING_LATENESS_MS,
        color="#d62728",
        linestyle="--",
        linewidth=0.8,
        label=f"{TIMING_LATENESS_MS:g} ms (timing-valid limit)",
    )
    low, high = min(0.0, min(ys)), max(max(ys), TIMING_LATENESS_MS)
    ax.set_ylim(low - 0.05 * (high - low), high * 1.15 + 1e-3)
    ax.tick_params(axis="y", labelsize=7)
    _legend(ax)


def _events(ax: Axes, view: RunView, others: Sequence[Axes]) -> None:
    """Point events as ticks on their own rows; reconnects and errors also cross every track."""
    _rows(ax, {name: row for row, _, name in MARKER_STYLE.values()}, -0.6, 3.6)
    for kind, (row, colour, name) in MARKER_STYLE.items():
        xs = [m.at_ms / 1000.0 for m in view.markers if m.kind == kind]
        if not xs:
            continue
        ax.vlines(
            xs,
            row - 0.35,
            row + 0.35,
            colors=colour,
            linewidths=1.2,
            gid=kind,
            label=f"{name} ({len(xs)})",
        )
        if kind in ("reconnect", "error"):
            for other in others:
                other.vlines(
                    xs,
                    0.0,
                    1.0,
                    transform=other.get_xaxis_transform(),
                    colors=colour,
                    linewidths=0.8,
                    alpha=0.4,
                    gid=f"alert:{kind}",
                )
    _legend(ax)


def save_png(fig: Figure, path: str | os.PathLike[str], *, dpi: int = DEFAULT_DPI) -> Path:
    """Write `fig` as a PNG (Agg) to `path` whole or not at all (temporary file, rename)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    with atomic_file(target) as fh:
        fig.savefig(fh, format="png", dpi=dpi)
    return target
