"""The columns each track draws, as plain data (pure: no plotting library).

`TrackColumns` turns a `RunView` into the column dicts the Bokeh tracks put in their data
sources, with the marks a comparison adds (units decided differently, moved latencies,
answers present in one run only). `lanes` keeps overlapping bars apart for both the page
and the static figure.
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from duplex_client.report.run_view import RunView

UNIT_COLOURS = {"AUDIO": "#4c78a8", "OMNI": "#9d6fd1", "VISION": "#54a24b"}
#: decision → (marker, colour, row)
DECISION_STYLE = {"listen": ("circle", "#8a8f99", 0.0), "speak": ("triangle", "#d6452f", 1.0)}
OTHER_DECISION = ("x", "#000000", 0.5)
MARKER_ROWS = {"commit": 0.0, "server_commit": 1.0, "reconnect": 2.0, "error": 3.0}
MARKER_COLOURS = {
    "commit": "#2f7ed8",
    "server_commit": "#1b9e77",
    "reconnect": "#e6a100",
    "error": "#d62728",
}
DIFF_COLOUR = "#ff1744"
ANSWER_COLOUR = "#d6452f"
LATENCY_COLOUR = "#ff8f00"
#: Thumbnails are drawn this many pixels high, whatever the zoom.
THUMB_PX = 56

Columns = dict[str, list[Any]]


def lanes(intervals: Sequence[tuple[float, float]], most: int = 4) -> list[int]:
    """A lane per (start, width) so overlapping ones sit apart (greedy; beyond `most`, shared)."""
    ends: list[float] = []
    used: list[int] = []
    out = [0] * len(intervals)
    for k in sorted(range(len(intervals)), key=lambda k: intervals[k][0]):
        start, width = intervals[k]
        lane = next((n for n, end in enumerate(ends) if end <= start), None)
        if lane is None and len(ends) < most:
            lane = len(ends)
            ends.append(start)
            used.append(0)
        elif lane is None:  # every lane busy: the one free soonest, then the least used
            lane = min(range(most), key=lambda n: (ends[n], used[n]))
        ends[lane] = max(ends[lane], start + width)
        used[lane] += 1
        out[k] = lane
    return out


class TrackColumns:
    """The data of every track of one run (times in media ms)."""

    def __init__(self, view: RunView) -> None:
        self.view = view

    def units(self, differing: Collection[int] = ()) -> Columns:
        """One row per unit: span, kind, colour, hatch for fallback, red outline if differing."""
        us = self.view.units
        return {
            "index": [u.index for u in us],
            "kind": [u.kind for u in us],
            "start_ms": [u.start_ms for u in us],
            "end_ms": [u.end_ms for u in us],
            "mid_ms": [(u.start_ms + u.end_ms) / 2 for u in us],
            "fallback": [u.fallback for u in us],
            "segment": [u.segment for u in us],
            "frames": [len(u.frames) for u in us],
            "colour": [UNIT_COLOURS.get(u.kind, "#999999") for u in us],
            "hatch": ["/" if u.fallback else " " for u in us],
            "line": [DIFF_COLOUR if u.index in differing else "white" for u in us],
            "line_width": [3 if u.index in differing else 1 for u in us],
            "label": [str(u.index) for u in us],
        }

    def thumbnails(self, files: Mapping[str, Path]) -> Columns:
        """One row per sent frame whose thumbnail is in `files`: its image as a data URL."""
        rows: Columns = {k: [] for k in ("url", "x", "w", "unit", "name", "role", "size")}
        for unit in self.view.units:
            step = (unit.end_ms - unit.start_ms) / max(1, len(unit.frames))
            for k, frame in enumerate(unit.frames):
                path = files.get(frame.name)
                if path is None:
                    continue
                rows["url"].append(
                    "data:image/jpeg;base64," + base64.b64encode(path.read_bytes()).decode()
                )
                rows["x"].append(unit.start_ms + k * step)
                rows["w"].append(round(THUMB_PX * (frame.width or 4) / (frame.height or 3)))
                rows["unit"].append(unit.index)
                rows["name"].append(frame.name)
                rows["role"].append(frame.role)
                rows["size"].append(f"{frame.width}×{frame.height}")
        return rows

    def decisions(self) -> Columns:
        """One row per listen/speak decision: speak a row above listen."""
        ds = self.view.decisions
        styles = [DECISION_STYLE.get(d.decision, OTHER_DECISION) for d in ds]
        return {
            "at_ms": [d.at_ms for d in ds],
            "marker": [s[0] for s in styles],
            "colour": [s[1] for s in styles],
            "y": [s[2] for s in styles],
            "decision": [d.decision for d in ds],
            "unit": [d.unit_index for d in ds],
            "reason": [d.reason or "" for d in ds],
            "response": [d.response_id or "" for d in ds],
        }

    def answers(self, differing: Collection[str] = ()) -> Columns:
        """One row per heard answer: its span, transcript, and a thick outline if differing."""
        ts = [t for t in self.view.turns if t.heard_start_ms is not None]
        return {
            "start_ms": [t.heard_start_ms for t in ts],
            "end_ms": [t.heard_start_ms if t.heard_end_ms is None else t.heard_end_ms for t in ts],
            "number": [t.number for t in ts],
            "response": [t.response_id for t in ts],
            "cut": [t.cut or "" for t in ts],
            "transcript": [t.transcript for t in ts],
            "short": [_short(t.transcript) for t in ts],
            "line": [DIFF_COLOUR if t.response_id in differing else ANSWER_COLOUR for t in ts],
            "line_width": [4 if t.response_id in differing else 1 for t in ts],
        }

    def cuts(self) -> Columns:
        """Where each cut answer stopped being heard."""
        cut = [t for t in self.view.turns if t.cut and t.heard_end_ms is not None]
        return {"at_ms": [t.heard_end_ms for t in cut], "cut": [t.cut for t in cut]}

    def speech(self) -> Columns:
        """The user-speech segments."""
        return {
            "start_ms": [s for s, _ in self.view.user_speech],
            "end_ms": [e for _, e in self.view.user_speech],
        }

    def latency(self, moved: Collection[int] = ()) -> Columns:
        """One bar per measured turn, user end → heard start, in lanes when they overlap."""
        ts = [
            t for t in self.view.turns if t.user_end_ms is not None and t.heard_start_ms is not None
        ]
        starts = [t.user_end_ms or 0.0 for t in ts]
        ends = [t.heard_start_ms or 0.0 for t in ts]
        lane = lanes([(s, e - s) for s, e in zip(starts, ends, strict=True)], most=3)
        return {
            "start_ms": starts,
            "end_ms": ends,
            "mid_ms": [(s + e) / 2 for s, e in zip(starts, ends, strict=True)],
            "bottom": [0.05 + n * 0.3 for n in lane],
            "top": [0.31 + n * 0.3 for n in lane],
            "mid_y": [0.18 + n * 0.3 for n in lane],
            "number": [t.number for t in ts],
            "label": [f"#{t.number}" for t in ts],
            "latency_ms": [t.latency_ms for t in ts],
            "server_ms": [t.server_ms for t in ts],
            "colour": [DIFF_COLOUR if t.number in moved else LATENCY_COLOUR for t in ts],
        }

    def lateness(self) -> Columns:
        """Send lateness per append, at its media end."""
        pts = self.view.lateness
        return {
            "at_ms": [p.at_ms for p in pts],
            "lateness_ms": [p.lateness_ms for p in pts],
            "append": [p.append_index for p in pts],
        }

    def markers(self) -> Columns:
        """Commits, server commits, reconnects and errors, each kind on its own row."""
        ms = self.view.markers
        return {
            "at_ms": [m.at_ms for m in ms],
            "y": [MARKER_ROWS.get(m.kind, 3.0) for m in ms],
            "colour": [MARKER_COLOURS.get(m.kind, "#000000") for m in ms],
            "kind": [m.kind for m in ms],
            "label": [m.label for m in ms],
        }


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
