"""The timeline page of one run: every track on one media axis, the turn table and a player.

`write_run_report(bundle, out)` reads the bundle and writes one self-contained HTML file.
The page embeds the run's data (`<script id="run-data">`), which is what its script and the
tests read; the tracks are Bokeh figures sharing one x range.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplex_client.files import write_text_atomic
from duplex_client.report.bundle_reader import (
    RunBundleData,
    encode_listening_audio,
    load_run_bundle,
)
from duplex_client.report.html import json_script, page, require_bokeh, warning_banner
from duplex_client.report.run_view import RunView, TurnSpan
from duplex_client.report.tracks import TrackSet, shared_range

#: The page's own script: the turn table highlights a span on every track, the player
#: moves a playhead. Bokeh models are looked up by name when first needed.
PAGE_SCRIPT = """
<script>
(function () {
  function models(name) {
    var out = [];
    (window.Bokeh ? Bokeh.documents : []).forEach(function (doc) {
      doc.all_models.forEach(function (m) { if (m.name === name) out.push(m); });
    });
    return out;
  }
  window.duplexHighlight = function (start, end) {
    models("highlight").forEach(function (box) {
      box.left = start; box.right = end; box.visible = true;
    });
    document.body.dataset.highlight = start + "," + end;
  };
  document.querySelectorAll("tr.turn").forEach(function (row) {
    row.addEventListener("click", function () {
      document.querySelectorAll("tr.turn.selected").forEach(function (r) {
        r.classList.remove("selected");
      });
      row.classList.add("selected");
      window.duplexHighlight(parseFloat(row.dataset.start), parseFloat(row.dataset.end));
    });
  });
  var player = document.getElementById("player");
  if (player) {
    var frame = null;
    var move = function () {
      var ms = player.currentTime * 1000;
      models("playhead").forEach(function (line) { line.location = ms; });
      document.body.dataset.playhead = String(ms);
      frame = player.paused ? null : requestAnimationFrame(move);
    };
    player.addEventListener("play", function () { frame = requestAnimationFrame(move); });
    player.addEventListener("seeked", move);
    player.addEventListener("pause", move);
  }
})();
</script>
"""


def turn_span(turn: TurnSpan) -> tuple[float, float]:
    """The span a turn highlights: from the user's end (or its first audio) to its last."""
    start = turn.user_end_ms if turn.user_end_ms is not None else turn.heard_start_ms
    end = turn.heard_end_ms if turn.heard_end_ms is not None else turn.heard_start_ms
    start = 0.0 if start is None else start
    return start, start if end is None else max(end, start)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def turn_table(view: RunView) -> str:
    """The turn table: one clickable row per turn."""
    head = (
        "#",
        "response",
        "unit",
        "user end ms",
        "heard ms",
        "latency ms",
        "server ms",
        "overlap ms",
        "gap ms",
        "cut",
        "transcript",
    )
    rows = []
    for t in view.turns:
        start, end = turn_span(t)
        cells = (
            f'<td class="num">{t.number}</td><td>{html.escape(t.response_id)}</td>'
            f'<td class="num">{"–" if t.unit_index is None else t.unit_index}</td>'
            f'<td class="num">{_fmt(t.user_end_ms)}</td>'
            f'<td class="num">{_fmt(t.heard_start_ms)} – {_fmt(t.heard_end_ms)}</td>'
            f'<td class="num">{_fmt(t.latency_ms)}</td><td class="num">{_fmt(t.server_ms)}</td>'
            f'<td class="num">{_fmt(t.overlap_ms)}</td><td class="num">{_fmt(t.gap_ms)}</td>'
            f"<td>{html.escape(t.cut or '')}</td><td>{html.escape(t.transcript)}</td>"
        )
        rows.append(
            f'<tr class="turn" data-number="{t.number}" data-start="{start}" '
            f'data-end="{end}">{cells}</tr>'
        )
    header = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(rows) or f'<tr><td colspan="{len(head)}">no answers</td></tr>'
    return (
        f'<table class="data" id="turns"><thead><tr>{header}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def headline_latency(metrics: Mapping[str, Any]) -> str:
    """First-answer latency per user turn (p50), follow-up answers to the same turn apart."""
    first = metrics.get("first_answer_latency_ms") or {}
    text = f"first-answer latency p50 {_fmt(first.get('p50'))} ms"
    later = metrics.get("follow_up_latency_ms") or {}
    if later.get("count"):
        text += f" (follow-up answers: {later['count']}, p50 {_fmt(later.get('p50'))} ms)"
    return text


def header(view: RunView, *, prefix: str = "") -> str:
    """The run's title line and its key figures."""
    facts = [
        f"status <b>{html.escape(view.status)}</b>",
        f"model {html.escape(view.model or '?')}",
        f"session {html.escape(view.session_id or '?')}",
        f"started {html.escape(view.started_at or '?')}",
        f"{len(view.units)} units, {len(view.decisions)} decisions, {len(view.turns)} turns",
        headline_latency(view.metrics),
    ]
    return (
        f'<h1>{html.escape(prefix + view.title)}</h1><div class="meta">{" · ".join(facts)}</div>'
        + warning_banner(view.warnings)
    )


def audio_player(data: RunBundleData) -> str:
    """An inline player of `conversation.wav` (Ogg/Opus), or nothing when it is absent."""
    if data.conversation is None:
        return ""
    try:
        ogg = encode_listening_audio(data.conversation)
    except Exception as exc:  # a bad mix loses the player, never the page
        return warning_banner([f"conversation audio not embedded: {exc}"])
    src = "data:audio/ogg;base64," + base64.b64encode(ogg).decode("ascii")
    return (
        "<div>conversation (input left, heard right): "
        f'<audio id="player" controls preload="auto" src="{src}"></audio></div>'
    )


def render_run_page(data: RunBundleData, *, thumbnails: bool = True) -> str:
    """The whole HTML page of one run."""
    require_bokeh()
    from bokeh.embed import components

    view = data.view
    track_set = TrackSet(data, shared_range(view.duration_ms))
    script, div = components(track_set.layout(track_set.all(thumbnails=thumbnails)))
    payload = view.to_dict()
    if not thumbnails:
        for unit in payload["units"]:
            unit["frames"] = []
    body = (
        header(view)
        + audio_player(data)
        + div
        + "<h2>Turns</h2>"
        + turn_table(view)
        + json_script("run-data", payload)
    )
    return page(f"duplex run {view.title}", body, scripts=script + PAGE_SCRIPT)


def write_run_report(bundle_dir: Path, output: Path, *, thumbnails: bool = True) -> Path:
    """Read a bundle and write its page to `output` (atomically); returns `output`."""
    data = load_run_bundle(bundle_dir, thumbnails=thumbnails)
    write_text_atomic(output, render_run_page(data, thumbnails=thumbnails))
    return output
