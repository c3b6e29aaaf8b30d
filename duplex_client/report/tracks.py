"""Bokeh figures for a run's tracks, all on one shared media-time axis (ms).

`TrackSet` builds the figures of one run; every figure shares the `x_range` it is given,
so zoom and pan move all tracks together. Each glyph renderer carries a `name` (`units`,
`decisions`, `responses`, …) that the page script and the browser tests look up, and each
figure has a `highlight` box and a `playhead` line the page moves. The data comes from
`TrackColumns`; this module only says how it is drawn.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from duplex_client.report.bundle_reader import Envelope, RunBundleData
from duplex_client.report.track_columns import ANSWER_COLOUR, THUMB_PX, TrackColumns

if TYPE_CHECKING:
    from bokeh.models import Range1d
    from bokeh.plotting import figure as Figure

TOOLS = "xpan,xwheel_zoom,box_zoom,reset"
LABEL: dict[str, Any] = {
    "text_align": "center",
    "text_baseline": "middle",
    "text_font_size": "10px",
}


def shared_range(end_ms: float) -> Range1d:
    """The one x range every track of a page shares."""
    from bokeh.models import Range1d

    return Range1d(start=-0.02 * end_ms, end=end_ms * 1.02 + 1, bounds="auto")


class TrackSet:
    """Builds the figures of one run on a shared x range; `prefix` tells two runs apart."""

    def __init__(self, data: RunBundleData, x_range: Range1d, *, prefix: str = "") -> None:
        self.data = data
        self.columns = TrackColumns(data.view)
        self.x_range = x_range
        self.prefix = prefix
        self.figures: list[Figure] = []

    def _figure(self, title: str, height: int, **kw: Any) -> Figure:
        # Bokeh's stubs do not declare every model it exports.
        from bokeh.models import BoxAnnotation, Span  # type: ignore[attr-defined]
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
        fig.title.text_font_size = "11px"  # type: ignore[union-attr]
        fig.xaxis.visible = False
        fig.yaxis.visible = "y_range" not in kw
        highlight = BoxAnnotation(
            name="highlight", visible=False, fill_color="#ffb300", fill_alpha=0.25
        )
        playhead = Span(name="playhead", location=0, dimension="height", line_color="#222")
        fig.add_layout(highlight)
        fig.add_layout(playhead)
        self.figures.append(fig)
        return fig

    def _source(self, columns: dict[str, list[Any]]) -> Any:
        from bokeh.models import ColumnDataSource

        return ColumnDataSource(columns)

    def _name(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def _hover(self, fig: Figure, renderer: Any, tips: list[tuple[str, str]]) -> None:
        from bokeh.models import HoverTool

        fig.add_tools(HoverTool(renderers=[renderer], tooltips=tips))

    def wave(self, envelope: Envelope | None, title: str, name: str, colour: str) -> Figure:
        """A min/max waveform track."""
        fig = self._figure(title, 70, y_range=(-1.05, 1.05))
        env = envelope or Envelope([], [], [])
        src = self._source({"t_ms": env.t_ms, "low": env.low, "high": env.high})
        fig.varea(x="t_ms", y1="low", y2="high", source=src, fill_color=colour,
                  name=self._name(name))  # fmt: skip
        return fig

    def units(self, differing: Collection[int] = ()) -> Figure:
        """Units as blocks coloured by kind, with their index; fallback units hatched."""
        fig = self._figure("units (AUDIO blue · OMNI purple · VISION green)", 60, y_range=(0, 1))
        src = self._source(self.columns.units(differing))
        quads = fig.quad(left="start_ms", right="end_ms", bottom=0.1, top=0.9, source=src,
                         fill_color="colour", hatch_pattern="hatch", hatch_color="white",
                         line_color="line", line_width="line_width",
                         name=self._name("units"))  # fmt: skip
        fig.text(x="mid_ms", y=0.5, text="label", source=src, text_color="white", **LABEL)
        self._hover(fig, quads, [("unit", "@index @kind"), ("media ms", "@start_ms – @end_ms"),
                                 ("fallback", "@fallback"), ("segment", "@segment"),
                                 ("frames", "@frames")])  # fmt: skip
        return fig

    def thumbnails(self) -> Figure | None:
        """The frames each unit carried, from its start (None when there are none)."""
        columns = self.columns.thumbnails(self.data.thumbnails)
        if not columns["url"]:
            return None
        fig = self._figure("frames sent (thumbnails)", THUMB_PX + 20, y_range=(0, 1))
        # Screen-sized, so a thumbnail keeps its aspect at any zoom.
        images = fig.image_url(url="url", x="x", y=1, w="w", h=THUMB_PX, w_units="screen",
                               h_units="screen", anchor="top_left", source=self._source(columns),
                               name=self._name("frames"))  # fmt: skip
        self._hover(fig, images, [("frame", "@name"), ("unit", "@unit"), ("role", "@role"),
                                  ("sent size", "@size")])  # fmt: skip
        return fig

    def decisions(self) -> Figure:
        """One marker per listen/speak decision, speak above listen."""
        fig = self._figure("decisions (▲ speak · ● listen)", 60, y_range=(-0.6, 1.6))
        marks = fig.scatter(x="at_ms", y="y", marker="marker", color="colour", size=9,
                            source=self._source(self.columns.decisions()),
                            name=self._name("decisions"))  # fmt: skip
        self._hover(fig, marks, [("decision", "@decision (unit @unit)"), ("at ms", "@at_ms"),
                                 ("reason", "@reason"), ("response", "@response")])  # fmt: skip
        return fig

    def responses(self, differing: Collection[str] = ()) -> Figure:
        """The heard waveform with each answer's span, cut marks and transcript."""
        fig = self.wave(self.data.heard_wave, "heard (answer audio on the media clock)",
                        "heard_wave", ANSWER_COLOUR)  # fmt: skip
        fig.height = 90
        src = self._source(self.columns.answers(differing))
        spans = fig.quad(left="start_ms", right="end_ms", bottom=-1.0, top=1.0, source=src,
                         fill_color=ANSWER_COLOUR, fill_alpha=0.12, line_color="line",
                         line_width="line_width", name=self._name("responses"))  # fmt: skip
        fig.text(x="start_ms", y=0.62, text="short", source=src, text_font_size="10px",
                 name=self._name("transcripts"))  # fmt: skip
        fig.scatter(x="at_ms", y=0, marker="x", size=14, line_width=3, color="#000",
                    source=self._source(self.columns.cuts()), name=self._name("cuts"))  # fmt: skip
        self._hover(fig, spans, [("turn", "#@number @response"),
                                 ("heard ms", "@start_ms – @end_ms"), ("cut", "@cut"),
                                 ("transcript", "@transcript")])  # fmt: skip
        return fig

    def turns(self, moved: Collection[int] = ()) -> Figure:
        """User speech and each turn's latency span (user end → heard start) with its number."""
        source = self.data.view.user_speech_source or "none"
        fig = self._figure(f"user speech ({source}) and turn latency", 90, y_range=(0, 2))
        user = fig.quad(left="start_ms", right="end_ms", bottom=1.15, top=1.85,
                        source=self._source(self.columns.speech()), fill_color="#4c78a8",
                        fill_alpha=0.5, line_color=None,
                        name=self._name("user_speech"))  # fmt: skip
        self._hover(fig, user, [("user speech ms", "@start_ms – @end_ms")])
        src = self._source(self.columns.latency(moved))
        bars = fig.quad(left="start_ms", right="end_ms", bottom="bottom", top="top", source=src,
                        fill_color="colour", line_color=None,
                        name=self._name("latency"))  # fmt: skip
        fig.text(x="mid_ms", y="mid_y", text="label", source=src, **LABEL)
        self._hover(fig, bars, [("turn", "#@number"), ("latency ms", "@latency_ms"),
                                ("server ms", "@server_ms"),
                                ("user end → heard", "@start_ms → @end_ms")])  # fmt: skip
        return fig

    def lateness(self) -> Figure:
        """Send lateness per append as a small strip."""
        fig = self._figure("send lateness per append (ms)", 60)
        fig.yaxis.ticker.desired_num_ticks = 2  # type: ignore[union-attr]
        bars = fig.vbar(x="at_ms", top="lateness_ms", width=12, color="#607d8b",
                        source=self._source(self.columns.lateness()),
                        name=self._name("lateness"))  # fmt: skip
        self._hover(fig, bars, [("append", "@append"), ("media end ms", "@at_ms"),
                                ("lateness ms", "@lateness_ms")])  # fmt: skip
        return fig

    def markers(self) -> Figure:
        """Commits, server commits, reconnects and errors, one row each; the time axis."""
        fig = self._figure("commit · server commit · reconnect · error", 100, y_range=(-0.6, 3.6))
        fig.xaxis.visible = True
        fig.xaxis.axis_label = "media time (ms)"
        marks = fig.scatter(x="at_ms", y="y", marker="diamond", size=11, color="colour",
                            source=self._source(self.columns.markers()),
                            name=self._name("markers"))  # fmt: skip
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
