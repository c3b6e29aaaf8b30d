"""Rows of what interrupted the stream: reconnects, server commits and replacing sessions."""

from __future__ import annotations

from typing import Any

from duplex_client.framing.timeline.rows import round_offset


def server_commit_row(
    *,
    after_append_index: int | None,
    audio_end_ms: int | None,
    received_offset_ms: float | None,
    units_closed: int,
) -> dict[str, Any]:
    """A commit the server made (server VAD) and how many units it closed early."""
    return {
        "after_append_index": after_append_index,
        "audio_end_ms": audio_end_ms,
        "received_offset_ms": round_offset(received_offset_ms),
        "units_closed": units_closed,
    }


def new_session_row(
    *,
    after_append_index: int | None,
    previous_session_id: str | None,
    session_id: str | None,
    audio_start_ms: int,
    received_offset_ms: float | None,
    units_closed: int,
    lost_appends: int,
) -> dict[str, Any]:
    """A new session that replaced a lost one (a resume into a journal gap)."""
    return {
        "after_append_index": after_append_index,
        "previous_session_id": previous_session_id,
        "session_id": session_id,
        "audio_start_ms": audio_start_ms,
        "received_offset_ms": round_offset(received_offset_ms),
        "units_closed": units_closed,
        "lost_appends": lost_appends,
    }


def reconnect_row(
    *,
    started_offset_ms: float,
    resumed_offset_ms: float | None,
    attempts: int,
    outcome: str,
    resent_appends: int,
) -> dict[str, Any]:
    """One reconnection (`outcome`: resumed, resync_required or failed)."""
    return {
        "started_offset_ms": round(started_offset_ms, 3),
        "resumed_offset_ms": round_offset(resumed_offset_ms),
        "attempts": attempts,
        "outcome": outcome,
        "resent_appends": resent_appends,
    }
