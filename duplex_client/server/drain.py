"""`session.end` → `stream_drained`: the end of a continuous stream (Nemotron-style, §9.2).

A `continuous_stream` session has no turns to commit: input is one stream and the model
answers while it listens. `session.end` says the stream is over. The server stops taking
input, lets the model decide every unit already emitted and finishes the response it is
sending (nothing is cancelled), then sends `stream_drained` once. A partial unit left open
(shorter than one unit) is never decided; `stream_drained.dropped_ms` says how long it was.
The session stays open until `session.close`.
"""

from __future__ import annotations

from typing import Protocol

from duplex_client.protocol import client_events as ce
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.server_events import ServerEvent, StreamDrained
from duplex_client.server.conversation import Conversation
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.input_buffer import InputBuffer
from duplex_client.server.pipeline import Pipeline

#: Input events refused once the stream ended.
_INPUT_TYPES = frozenset(
    {ce.InputAudioBufferAppend.TYPE, ce.InputAudioBufferCommit.TYPE, ce.SessionEnd.TYPE}
)
CONTINUOUS_STREAM = "continuous_stream"


class Host(Protocol):
    """What the drain reads of its session (the session, or the `SessionPort` handlers hold)."""

    @property
    def session_id(self) -> str:
        """The session id."""

    @property
    def caps(self) -> Capabilities:
        """The advertised capabilities."""

    @property
    def inputs(self) -> InputBuffer:
        """Accepted input not yet in a turn."""

    @property
    def pipeline(self) -> Pipeline:
        """The model's serial input pipeline."""

    @property
    def conversation(self) -> Conversation:
        """Responses and history."""

    def emit(self, event: ServerEvent, now: float) -> None:
        """Send a server event."""


class StreamDrain:
    """Whether the client ended the stream, and whether `stream_drained` was sent."""

    def __init__(self) -> None:
        self.ended = False
        self.drained = False
        self._client_event_id: str | None = None
        self._dropped_ms = 0

    def refuse_after_end(self, etype: str) -> None:
        """Reject input that arrives after `session.end` (the stream is over)."""
        if self.ended and etype in _INPUT_TYPES:
            raise Reject(ErrorCode.BAD_EVENT, f"{etype} after session.end: input ended", "type")

    def end(self, s: Host, event: ce.SessionEnd) -> None:
        """Accept `session.end`: remember who asked and what input is left undecided."""
        if s.caps.response_lifecycle != CONTINUOUS_STREAM:
            raise Reject(
                ErrorCode.UNKNOWN_EVENT,
                "session.end needs response_lifecycle continuous_stream",
                "type",
            )
        self.ended = True
        self._client_event_id = event_ref(event)
        self._dropped_ms = s.inputs.partial_ms

    def poll(self, s: Host, now: float) -> None:
        """Send `stream_drained` once every unit is decided and no response is playing."""
        if not self.ended or self.drained:
            return
        if not s.pipeline.idle or s.conversation.active is not None:
            return
        self.drained = True
        inputs = s.inputs
        drained = StreamDrained(
            session_id=s.session_id,
            client_event_id=self._client_event_id,
            audio_end_ms=inputs.audio_end_ms,
            units=inputs.units_emitted,
            dropped_ms=self._dropped_ms,
        )
        s.emit(drained, now)
