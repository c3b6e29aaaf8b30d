"""The rows of sent appends and commits, and the acknowledgement a commit row is given."""

from __future__ import annotations

from typing import Any

from duplex_client.framing.clock import SendTiming
from duplex_client.framing.digest import audio_sha256
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.timeline.frames import frame_records


def round_offset(offset_ms: float | None) -> float | None:
    """An offset rounded to the microsecond (None stays None)."""
    return None if offset_ms is None else round(offset_ms, 3)


def append_row(
    index: int, append: PlannedAppend, event_id: str, timing: SendTiming
) -> dict[str, Any]:
    """The row of one sent append, numbered `index`."""
    return {
        "index": index,
        "event_id": event_id,
        "segment": append.segment,
        "unit_kind": None if append.unit_kind is None else append.unit_kind.value,
        "unit_index": append.unit_index,
        "media_start_ms": append.media_start_ms,
        "media_end_ms": append.media_end_ms,
        "duration_ms": append.duration_ms,
        "audio_end_ms": append.audio_end_ms,
        "is_speech": append.is_speech,
        "audio_bytes": len(append.pcm),
        "audio_sha256": audio_sha256(append.pcm),
        "scheduled_offset_ms": timing.scheduled_offset_ms,
        "sent_offset_ms": timing.sent_offset_ms,
        "lateness_ms": timing.lateness_ms,
        "written": True,
        "acknowledged_offset_ms": None,
        "fallback": append.fallback,
        "resends": [],
        "error_code": None,
        "frames": frame_records(append.frames),
    }


def commit_row(
    index: int,
    event_id: str,
    timing: SendTiming,
    *,
    after_append_index: int | None,
    final: bool,
    response_create: bool | None,
) -> dict[str, Any]:
    """The row of one sent commit, numbered `index` (acknowledged later)."""
    return {
        "index": index,
        "event_id": event_id,
        "after_append_index": after_append_index,
        "scheduled_offset_ms": timing.scheduled_offset_ms,
        "sent_offset_ms": timing.sent_offset_ms,
        "written": True,
        "final": final,
        "response_create": response_create,
        "error_code": None,
        "acknowledged": None,
    }


def acknowledgement(
    *, received_offset_ms: float | None, audio_end_ms: int | None, no_response: bool
) -> dict[str, Any]:
    """A commit row's `acknowledged` value."""
    return {
        "received_offset_ms": round_offset(received_offset_ms),
        "audio_end_ms": audio_end_ms,
        "no_response": no_response,
    }


def resend_record(sent_offset_ms: float, attempt: int) -> dict[str, Any]:
    """One entry of an append row's `resends`."""
    return {"sent_offset_ms": round(sent_offset_ms, 3), "attempt": attempt}
