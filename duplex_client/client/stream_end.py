"""How a continuous stream ended (Nemotron-style, protocol.md §9.2): its drained response.

vLLM-Omni's Nemotron VoiceChat has no `session.end`: the client streams trailing silence, then
`session.close`, and the server finishes the one continuous response `completed` with
`status_details.reason: "stream_drained"` and `metadata.drain {accepted_frames, text_frames,
audio_frames, drained}` before `session.closed` (Sy0307/vllm-omni
`tests/e2e/online_serving/nemotron_voicechat_realtime_duplex.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from duplex_client.protocol.session import ResponseState

#: `status_details.reason` of a continuous response drained at `session.close`.
STREAM_DRAINED = "stream_drained"


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """A continuous stream's end: whether its response drained, and the server's counts."""

    #: The response ended `stream_drained` (False: the session closed without that).
    drained: bool
    response_id: str | None = None
    status: str | None = None
    reason: str | None = None
    #: `response.metadata.drain` as the server sent it (empty when none came).
    drain: dict[str, Any] = field(default_factory=dict)
    #: Why the session ended (`session.closed` reason, or the client's).
    closed_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `result.json` form."""
        return {
            "drained": self.drained,
            "response_id": self.response_id,
            "status": self.status,
            "reason": self.reason,
            "drain": dict(self.drain),
            "closed_reason": self.closed_reason,
        }


def stream_end_of(handles: Iterable[ResponseState], closed_reason: str | None) -> StreamEnd:
    """The end record from a session's responses: the drained one, else the last one."""
    chosen: ResponseState | None = None
    for handle in handles:
        if handle.response_id is None or handle.decision == "listen":
            continue
        chosen = handle
        if handle.reason == STREAM_DRAINED:
            break
    if chosen is None:
        return StreamEnd(drained=False, closed_reason=closed_reason)
    done = chosen.marks.get("done") or {}
    drain = _sub(_sub(_sub(done, "response"), "metadata"), "drain")
    return StreamEnd(
        drained=chosen.reason == STREAM_DRAINED,
        response_id=chosen.response_id,
        status=chosen.status,
        reason=chosen.reason,
        drain=dict(drain),
        closed_reason=closed_reason,
    )


def _sub(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}
