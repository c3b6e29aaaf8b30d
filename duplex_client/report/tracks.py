"""Bokeh figures for a run's tracks, all on one shared media-time axis (ms).

`TrackSet` builds the figures of one run; every figure shares the `x_range` it is given,
so zoom and pan move all tracks together. Each glyph renderer carries a `name` (`units`,
`decisions`, `responses`, …) that the page script and the browser tests look up, and each
figure has a `highlight` box and a `playhead` line the page moves.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.report.bundle_reader import Envelope, RunBundleData
from duplex_client.report.run_view import RunView

if TYPE_CHECKING:
    from bokeh.models import Range1d
    from bokeh.plotting import figure as Figure

UNIT_COLOURS = {"AUDIO": "#4c78a8", "OMNI": "#9d6fd1", "VISION": "#54a24b"}
DECISION_STYLE = {"listen": ("circle", "#8a8f99", 0.0), "speak": ("triangle", "#d6452f", 1.0)}
MARKER_ROWS = {"commit": 0.0, "server_commit": 1.0, "reconnect": 2.0, "error": 3.0}
MARKER_COLOURS = {"commit": "#2f7ed8", "server_commit": "#1b9e77", "reconnect": "#e6a100",
                  "error": "#d62728"}  # fmt: skip
DIFF_COLOUR = "#ff1744"
TOOLS = "xpan,xwheel_zoom,box_zoom,reset"


def shared_range(end_ms: float) -> Range1d:
    """The one x range every track of a page shares."""
    from bokeh.models import Range1d

    return Range1d(start=-0.02 * end_ms, end=end_ms * 1.02 + 1, bounds="auto")


class TrackSet:
    """Builds the figures of one run on a shared x range; `prefix` tells two runs apart."""

    def __init__(self, data: RunBundleData, x_range: Range1d, *, prefix: str = "") -> None:
        self.data = data
        self.view: RunView = data.view
        self.x_range = x_range
        self.prefix = prefix
        self.figures: list[Figure] = []

    def _figure(self, title: str, height: int, **kw: Any) -> Figure:
        from bokeh.models import BoxAnnotation, Span
        from bokeh.plotting import figure

        fig = figure(
            title=f"{self.prefix}{title}",
            height=height,
            sizing_mode="stretch_width",
            x_range=self.x_range,
            tools=TOOLS,
            active_scroll="xwheel_zoom",
            toolbar_location=None,
            min_border_left=60,
            **kw,
        )
        fig.title.text_font_size = "11px"
        fig.xaxis.visible = False
        fig.add_layout(BoxAnnotation(name="highlight", visible=False, fill_color="#ffb300",
                                     fill_alpha=0.25, line_color="#ff8f00"))  # fmt: skip
        fig.add_layout(Span(name="playhead", location=0, dimension="height",
                            line_color="#222", line_width=1))  # fmt: skip
        self.figures.append(fig)
        return fig

    def _name(self, name: str) -> str:
        return f"{self.prefix}{name}" if self.prefix else name

    def _hover(self, fig: Figure, renderer: Any, tips: list[tuple[str, str]]) -> None:
        from bokeh.models import HoverTool

        fig.add_tools(HoverTool(renderers=[renderer], tooltips=tips))

    def wave(self, envelope: Envelope | None, title: str, name: str, colour: str) -> Figure:
        """A min/max waveform track."""
        from bokeh.models import ColumnDataSource

        fig = self._figure(title, 70, y_range=(-1.05, 1.05))
        fig.yaxis.visible = False
        env = envelope or Envelope([], [], [])
        src = ColumnDataSource({"t_ms": env.t_ms, "low": env.low, "high": env.high})
        fig.varea(x="t_ms", y1="low", y2="high", source=src, fill_color=colour,
                  name=self._name(name))  # fmt: skip
        return fig

    def units(self, differing: set[int] | None = None) -> Figure:
        """Units as blocks coloured by kind, with their index; fallback units hatched."""
        from bokeh.models import ColumnDataSource

        fig = self._figure("units (AUDIO blue · OMNI purple · VISION green)", 60,
                           y_range=(0, 1))  # fmt: skip
        fig.yaxis.visible = False
        units = self.view.units
        differing = differing or set()
        src = ColumnDataSource({
            "index": [u.index for u in units],
            "kind": [u.kind for u in units],
            "start_ms": [u.start_ms for u in units],
            "end_ms": [u.end_ms for u in units],
            "mid_ms": [(u.start_ms + u.end_ms) / 2 for u in units],
            "fallback": [u.fallback for u in units],
            "segment": [u.segment for u in units],
            "frames": [len(u.frames) for u in units],
            "colour": [UNIT_COLOURS.get(u.kind, "#999") for u in units],
            "hatch": ["/" if u.fallback else " " for u in units],
            "line": [DIFF_COLOUR if u.index in differing else "white" for u in units],
            "line_width": [3 if u.index in differing else 1 for u in units],
            "label": [str(u.index) for u in units],
        })  # fmt: skip
        quads = fig.quad(left="start_ms", right="end_ms", bottom=0.1, top=0.9, source=src,
                         fill_color="colour", hatch_pattern="hatch", hatch_color="white",
                         line_color="line", line_width="line_width",
                         name=self._name("units"))  # fmt: skip
        fig.text(x="mid_ms", y=0.5, text="label", source=src, text_align="center",
                 text_baseline="middle", text_color="white", text_font_size="10px")  # fmt: skip
        self._hover(fig, quads, [("unit", "@index @kind"), ("media ms", "@start_ms – @end_ms"),
                                 ("fallback", "@fallback"), ("segment", "@segment"),
                                 ("frames", "@frames")])  # fmt: skip
        return fig

    def thumbnails(self) -> Figure | None:
        """The frames each unit carried, drawn over their unit (None when there are none)."""
        from bokeh.models import ColumnDataSource

        rows: dict[str, list[Any]] = {"url": [], "x": [], "w": [], "unit": [], "name": [],
                                      "role": [], "size": []}  # fmt: skip
        for unit in self.view.units:
            if not unit.frames:
                continue
            width = (unit.end_ms - unit.start_ms) / len(unit.frames)
            for k, frame in enumerate(unit.frames):
                path = self.data.thumbnails.get(frame.name)
                if path is None:
                    continue
                rows["url"].append(_data_url(path))
                rows["x"].append(unit.start_ms + k * width)
                rows["w"].append(width)
                rows["unit"].append(unit.index)
                rows["name"].append(frame.name)
                rows["role"].append(frame.role)
                rows["size"].append(f"{frame.width}×{frame.height}")
        if not rows["url"]:
            return None
        fig = self._figure("frames sent (thumbnails)", 70, y_range=(0, 1))
        fig.yaxis.visible = False
        src = ColumnDataSource(rows)
        images = fig.image_url(url="url", x="x", y=1, w="w", h=1, anchor="top_left",
                               source=src, name=self._name("frames"))  # fmt: skip
        self._hover(fig, images, [("frame", "@name"), ("unit", "@unit"), ("role", "@role"),
                                  ("sent size", "@size")])  # fmt: skip
        return fig

    def decisions(self) -> Figure:
        """One marker per listen/speak decision, speak above listen."""
        from bokeh.models import ColumnDataSource

        fig = self._figure("decisions (▲ speak · ● listen)", 60, y_range=(-0.6, 1.6))
        fig.yaxis.visible = False
        ds = self.view.decisions
        src = ColumnDataSource({
            "at_ms": [d.at_ms for d in ds],
            "y": [DECISION_STYLE.get(d.decision, ("x", "#000", 0.5))[2] for d in ds],
            "marker": [DECISION_STYLE.get(d.decision, ("x", "#000", 0.5))[0] for d in ds],
            "colour": [DECISION_STYLE.get(d.decision, ("x", "#000", 0.5))[1] for d in ds],
            "decision": [d.decision for d in ds],
            "unit": [d.unit_index for d in ds],
            "reason": [d.reason or "" for d in ds],
            "response": [d.response_id or "" for d in ds],
        })  # fmt: skip
        marks = fig.scatter(x="at_ms", y="y", marker="marker", color="colour", size=9,
                            source=src, name=self._name("decisions"))  # fmt: skip
        self._hover(fig, marks, [("decision", "@decision (unit @unit)"), ("at ms", "@at_ms"),
                                 ("reason", "@reason"), ("response", "@response")])  # fmt: skip
        return fig

    def responses(self, differing: set[str] | None = None) -> Figure:
        """The heard waveform with each answer's span, cut marks and transcript."""
        from bokeh.models import ColumnDataSource

        fig = self.wave(self.data.heard_wave, "heard (answer audio on the media clock)",
                        "heard_wave", "#d6452f")  # fmt: skip
        fig.height = 90
        turns = [t for t in self.view.turns if t.heard_start_ms is not None]
        differing = differing or set()
        src = ColumnDataSource({
            "start_ms": [t.heard_start_ms for t in turns],
            "end_ms": [t.heard_end_ms if t.heard_end_ms is not None else t.heard_start_ms
                       for t in turns],
            "number": [t.number for t in turns],
            "response": [t.response_id for t in turns],
            "cut": [t.cut or "" for t in turns],
            "transcript": [t.transcript for t in turns],
            "short": [_short(t.transcript) for t in turns],
            "line": [DIFF_COLOUR if t.response_id in differing else "#d6452f" for t in turns],
            "line_width": [4 if t.response_id in differing else 1 for t in turns],
        })  # fmt: skip
        spans = fig.quad(left="start_ms", right="end_ms", bottom=-1.0, top=1.0, source=src,
                         fill_color="#d6452f", fill_alpha=0.12, line_color="line", line_width="line_width",
                         name=self._name("responses"))  # fmt: skip
        fig.text(x="start_ms", y=0.62, text="short", source=src, text_font_size="10px",
                 name=self._name("transcripts"))  # fmt: skip
        cut = [t for t in turns if t.cut]
        cut_src = ColumnDataSource({"at_ms": [t.heard_end_ms for t in cut],
                                    "cut": [t.cut for t in cut]})  # fmt: skip
        fig.scatter(x="at_ms", y=0, marker="x", size=14, line_width=3, color="#000",
                    source=cut_src, name=self._name("cuts"))  # fmt: skip
        self._hover(fig, spans, [("turn", "#@number @response"), ("heard ms", "@start_ms – @end_ms"),
                                 ("cut", "@cut"), ("transcript", "@transcript")])  # fmt: skip
        return fig

    def turns(self, moved: set[int] | None = None) -> Figure:
        """User speech and each turn's latency span (user end → heard start) with its number."""
        from bokeh.models import ColumnDataSource

        fig = self._figure(f"user speech ({self.view.user_speech_source or 'none'}) and turn "
                           "latency", 90, y_range=(0, 2))  # fmt: skip
        fig.yaxis.visible = False
        speech = ColumnDataSource({"start_ms": [s for s, _ in self.view.user_speech],
                                   "end_ms": [e for _, e in self.view.user_speech]})  # fmt: skip
        user = fig.quad(left="start_ms", right="end_ms", bottom=1.15, top=1.85, source=speech,
                        fill_color="#4c78a8", fill_alpha=0.5, line_color=None,
                        name=self._name("user_speech"))  # fmt: skip
        self._hover(fig, user, [("user speech ms", "@start_ms – @end_ms")])
        moved = moved or set()
        turns = [t for t in self.view.turns
                 if t.user_end_ms is not None and t.heard_start_ms is not None]  # fmt: skip
        src = ColumnDataSource({
            "start_ms": [t.user_end_ms for t in turns],
            "end_ms": [t.heard_start_ms for t in turns],
            "mid_ms": [((t.user_end_ms or 0) + (t.heard_start_ms or 0)) / 2 for t in turns],
            "number": [t.number for t in turns],
            "label": [f"#{t.number}" for t in turns],
            "latency_ms": [t.latency_ms for t in turns],
            "server_ms": [t.server_ms for t in turns],
            "colour": [DIFF_COLOUR if t.number in moved else "#ff8f00" for t in turns],
        })  # fmt: skip
        lanes = latency_lanes([(t.user_end_ms or 0.0, t.heard_start_ms or 0.0) for t in turns])
        src.data["bottom"] = [0.05 + lane * 0.3 for lane in lanes]
        src.data["top"] = [0.31 + lane * 0.3 for lane in lanes]
        src.data["mid_y"] = [0.18 + lane * 0.3 for lane in lanes]
        bars = fig.quad(left="start_ms", right="end_ms", bottom="bottom", top="top", source=src,
                        fill_color="colour", line_color=None,
                        name=self._name("latency"))  # fmt: skip
        fig.text(x="mid_ms", y="mid_y", text="label", source=src, text_align="center",
                 text_baseline="middle", text_font_size="10px")  # fmt: skip
        self._hover(fig, bars, [("turn", "#@number"), ("latency ms", "@latency_ms"),
                                ("server ms", "@server_ms"),
                                ("user end → heard", "@start_ms → @end_ms")])  # fmt: skip
        return fig

    def lateness(self) -> Figure:
        """Send lateness per append as a small strip."""
        from bokeh.models import ColumnDataSource

        fig = self._figure("send lateness per append (ms)", 60)
        fig.yaxis.ticker.desired_num_ticks = 2
        pts = self.view.lateness
        src = ColumnDataSource({"at_ms": [p.at_ms for p in pts],
                                "lateness_ms": [p.lateness_ms for p in pts],
                                "append": [p.append_index for p in pts]})  # fmt: skip
        bars = fig.vbar(x="at_ms", top="lateness_ms", width=12, source=src, color="#607d8b",
                        name=self._name("lateness"))  # fmt: skip
        self._hover(fig, bars, [("append", "@append"), ("media end ms", "@at_ms"),
                                ("lateness ms", "@lateness_ms")])  # fmt: skip
        return fig

    def markers(self) -> Figure:
        """Commits, server commits, reconnects and errors, one row each."""
        from bokeh.models import ColumnDataSource

        fig = self._figure("commit · server commit · reconnect · error", 100,
                           y_range=(-0.6, 3.6))  # fmt: skip
        fig.xaxis.visible = True
        fig.xaxis.axis_label = "media time (ms)"
        fig.yaxis.visible = False
        ms = self.view.markers
        src = ColumnDataSource({"at_ms": [m.at_ms for m in ms],
                                "y": [MARKER_ROWS.get(m.kind, 3.0) for m in ms],
                                "colour": [MARKER_COLOURS.get(m.kind, "#000") for m in ms],
                                "kind": [m.kind for m in ms],
                                "label": [m.label for m in ms]})  # fmt: skip
        marks = fig.scatter(x="at_ms", y="y", marker="diamond", size=11, color="colour",
                            source=src, name=self._name("markers"))  # fmt: skip
        self._hover(fig, marks, [("", "@label"), ("at ms", "@at_ms")])
        return fig

    @staticmethod
    def layout(figures: list[Figure]) -> Any:
        """The figures stacked in one column with one toolbar for all of them."""
        from bokeh.layouts import gridplot

        return gridplot([[f] for f in figures], merge_tools=True, toolbar_location="right",
                        sizing_mode="stretch_width")  # fmt: skip

    def all(self, *, thumbnails: bool = True) -> list[Figure]:
        """Every track of the run, top to bottom."""
        self.wave(self.data.input_wave, "input (as sent)", "input_wave", "#4c78a8")
        self.units()
        if thumbnails:
            self.thumbnails()
        self.decisions()
        self.responses()
        self.turns()
        self.lateness()
        self.markers()
        return self.figures


def latency_lanes(spans: list[tuple[float, float]], most: int = 3) -> list[int]:
    """A lane (0..most-1) per span so that spans of one lane overlap as little as they can.

    Answers to one user turn share its end, so their latency spans overlap; each takes the
    first lane free by its start (the last lane when none is).
    """
    free_at: list[float] = []
    out: list[int] = []
    for start, end in spans:
        lane = next((i for i, t in enumerate(free_at) if t <= start), len(free_at))
        lane = min(lane, most - 1)
        if lane == len(free_at):
            free_at.append(end)
        else:
            free_at[lane] = max(free_at[lane], end)
        out.append(lane)
    return out


def _data_url(path: Path) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
