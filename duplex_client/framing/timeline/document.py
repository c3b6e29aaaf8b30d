"""The `input_timeline.json` document: its version, file name, field order and JSON text."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from duplex_client.framing.clock import Pacing

#: The version of the document's format, its `schema_version` field (and so the run bundle's:
#: `bundle.layout.SCHEMA_VERSION`). Raise it when any bundle file changes incompatibly.
SCHEMA_VERSION = 1
#: The document's file name in a run bundle (`bundle.layout.TIMELINE_FILE`).
TIMELINE_FILENAME = "input_timeline.json"


def timeline_document(
    *,
    pacing: Pacing,
    session: Mapping[str, Any],
    input_format: Mapping[str, Any],
    unit_grid: dict[str, Any],
    chunk_ms: int | None,
    chunk_ms_requested: int | None,
    media_origin_ms: int | None,
    tail_silence_ms: int,
    soundtrack_policy: dict[str, Any] | None,
    audio_source: dict[str, Any] | None,
    video: dict[str, Any] | None,
    sliding_window: Mapping[str, Any],
    appends: list[dict[str, Any]],
    commits: list[dict[str, Any]],
    reconnects: Sequence[Mapping[str, Any]],
    totals: dict[str, Any],
    server_commits: Sequence[Mapping[str, Any]],
    new_sessions: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The whole document, in §10 field order (`server_commits` only when there are some)."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "clock": {
            "source": "client_monotonic",
            "origin": "stream_start",
            "pacing": pacing,
        },
        "session": dict(session),
        "input_format": dict(input_format),
        "unit_grid": unit_grid,
        "chunk_ms": chunk_ms,
        **({"chunk_ms_requested": chunk_ms_requested} if chunk_ms_requested is not None else {}),
        "media_origin_ms": media_origin_ms,
        "tail_silence_ms": tail_silence_ms,
        "soundtrack_policy": soundtrack_policy,
        "audio_source": audio_source,
        "video": video,
        "sliding_window": dict(sliding_window),
        "appends": appends,
        "commits": commits,
        "reconnects": [dict(r) for r in reconnects],
        "totals": totals,
    }
    if server_commits:
        doc["server_commits"] = [dict(r) for r in server_commits]
    if new_sessions:
        doc["new_sessions"] = [dict(r) for r in new_sessions]
    return doc


def render_document(doc: Mapping[str, Any]) -> str:
    """The file's text: indented JSON ending in a newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def timeline_target(path: str | os.PathLike[str] | None, default: Path | None) -> Path:
    """Where to write: `path` else `default`; a directory gets the document's file name."""
    target = Path(path) if path is not None else default
    if target is None:
        raise ValueError("no path to write the timeline to")
    if target.is_dir():
        target = target / TIMELINE_FILENAME
    return target
