"""Compare the unit numbering a client recorded with the one the server assigned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def in_flight(timeline: Mapping[str, Any]) -> set[int]:
    """Indexes of appends sent after a server commit and before the client heard of it."""
    return {
        row["index"]
        for commit in timeline.get("server_commits", [])
        for row in timeline["appends"]
        if row["audio_end_ms"] > commit["audio_end_ms"]
        and row["index"] <= commit["after_append_index"]
    }


def numbering_pairs(
    timeline: Mapping[str, Any], accepted: Sequence[Mapping[str, Any]]
) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """(unit_kind, unit_index) of every append not in flight: the client's and the server's."""
    server = {r["event_id"]: r for r in accepted}
    skip = in_flight(timeline)
    rows = [r for r in timeline["appends"] if r["index"] not in skip]
    ours = [(r["unit_kind"], r["unit_index"]) for r in rows]
    theirs = [
        (server[r["event_id"]]["unit_kind"], server[r["event_id"]]["unit_index"]) for r in rows
    ]
    return ours, theirs
