"""Two runs side by side on one media axis, with what differs marked and listed.

Run A's tracks sit above run B's; all share one x range. A unit decided differently is
outlined in red in both, a moved latency bar turns red, an answer present in one run only
is outlined in red; the difference table lists them in media order. Clicking a row
highlights its place on every track.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from duplex_client.files import write_text_atomic
from duplex_client.report.bundle_reader import RunBundleData, load_run_bundle
from duplex_client.report.diff import RunDiff
from duplex_client.report.html import json_script, page, require_bokeh
from duplex_client.report.run_page import PAGE_SCRIPT, header
from duplex_client.report.tracks import TrackSet, shared_range

KIND_TEXT = {
    "decision": "decided differently",
    "latency": "latency moved",
    "only_in_a": "answer only in A",
    "only_in_b": "answer only in B",
}


def diff_table(diff: RunDiff, span_ms: float) -> str:
    """The difference table: one clickable row per difference."""
    rows = []
    for d in diff.differences:
        start, end = d.at_ms, d.at_ms + span_ms
        rows.append(
            f'<tr class="turn diff" data-kind="{d.kind}" data-start="{start}" data-end="{end}">'
            f'<td>{KIND_TEXT.get(d.kind, d.kind)}</td><td class="num">{d.at_ms:.1f}</td>'
            f'<td class="num">{"–" if d.unit_index is None else d.unit_index}</td>'
            f"<td>{html.escape(d.a)}</td><td>{html.escape(d.b)}</td></tr>"
        )
    body = "".join(rows) or '<tr><td colspan="5">no differences</td></tr>'
    return (
        '<table class="data" id="differences"><thead><tr><th>difference</th><th>media ms</th>'
        f"<th>unit</th><th>A</th><th>B</th></tr></thead><tbody>{body}</tbody></table>"
    )


def render_compare_page(a: RunBundleData, b: RunBundleData) -> str:
    """The whole HTML page comparing run A with run B."""
    require_bokeh()
    from bokeh.embed import components

    diff = RunDiff.of(a.view, b.view)
    x_range = shared_range(max(a.view.duration_ms, b.view.duration_ms))
    figures: list[Any] = []
    for data, prefix, moved, only in (
        (a, "A · ", diff.moved_a, diff.only_a),
        (b, "B · ", diff.moved_b, diff.only_b),
    ):
        tracks = TrackSet(data, x_range, prefix=prefix)
        tracks.units(diff.differing_units)
        tracks.decisions()
        tracks.responses(only)
        tracks.turns(moved)
        figures.extend(tracks.figures)
    figures[-1].xaxis.visible = True
    figures[-1].xaxis.axis_label = "media time (ms)"
    figures[-1].height = (figures[-1].height or 90) + 30
    script, div = components(TrackSet.layout(figures))
    unit_ms = max((u.end_ms - u.start_ms for u in a.view.units), default=1000.0)
    note = (
        "same input (equal sent_sha256)"
        if a.view.sent_sha256 is not None and a.view.sent_sha256 == b.view.sent_sha256
        else "the runs sent different input"
    )
    body = (
        f"<h1>{html.escape(a.view.title)} vs {html.escape(b.view.title)}</h1>"
        f'<div class="meta">{note} · {len(diff.differences)} differences</div>'
        + "<h2>Differences</h2>"
        + diff_table(diff, unit_ms)
        + div
        + header(a.view, prefix="A · ")
        + header(b.view, prefix="B · ")
        + json_script(
            "compare-data",
            {"a": a.view.to_dict(), "b": b.view.to_dict(), "differences": diff.to_list()},
        )
    )
    return page(f"duplex runs {a.view.title} vs {b.view.title}", body, scripts=script + PAGE_SCRIPT)


def write_compare_report(run_a: Path, run_b: Path, output: Path) -> Path:
    """Read two bundles and write their comparison page to `output`; returns `output`."""
    a = load_run_bundle(run_a, thumbnails=False)
    b = load_run_bundle(run_b, thumbnails=False)
    write_text_atomic(output, render_compare_page(a, b))
    return output
