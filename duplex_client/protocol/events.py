"""Event registries and decoding: server events tolerantly (never raising), client strictly."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import duplex_events as d
from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as s
from duplex_client.protocol.client_events import (
    CLIENT_EVENT_NAMES,
    CLIENT_EVENT_TYPES,
    decode_client_event,
)
from duplex_client.protocol.codec import CodecError, loads
from duplex_client.protocol.errors import ErrorInfo
from duplex_client.protocol.objects import OBJECT_CLASSES
from duplex_client.protocol.requests import REQUEST_CLASSES
from duplex_client.protocol.schema import prepare
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.tools import TOOL_EVENT_CLASSES, TOOL_RECORD_CLASSES

_CLASSES: tuple[type[ServerEvent], ...] = (
    s.SessionCreated,
    s.SessionUpdated,
    s.SessionResumed,
    s.SessionReplaced,
    s.SessionExpired,
    s.SessionClosed,
    s.SessionResyncRequired,
    s.StreamDrained,
    s.SessionHeartbeatAck,
    s.ErrorEvent,
    s.InputAudioBufferCommitted,
    s.InputAudioBufferCleared,
    s.InputAudioBufferSpeechStarted,
    s.InputAudioBufferSpeechStopped,
    s.ConversationItemAdded,
    s.ConversationItemDone,
    s.InputAudioTranscriptionCompleted,
    s.ConversationItemRetrieved,
    s.ConversationItemDeleted,
    s.ConversationItemTruncated,
    r.ResponseCreated,
    r.ResponseSpeak,
    r.ResponseListen,
    r.ResponseDone,
    r.ResponseOutputItemAdded,
    r.ResponseOutputItemDone,
    r.ResponseContentPartAdded,
    r.ResponseContentPartDone,
    r.ResponseAudioDelta,
    r.ResponseAudioDone,
    r.ResponseAudioTranscriptDelta,
    r.ResponseAudioTranscriptDone,
    r.ResponseTextDelta,
    r.ResponseTextDone,
    r.OutputAudioBufferCleared,
    r.PlaybackAcknowledged,
    r.OverlapDecision,
    r.RateLimitsUpdated,
    r.ConnectionResumed,
    r.ConnectionNewSession,
    d.TurnEvent,
    *TOOL_EVENT_CLASSES,
)

#: Wire type (GA and beta names alike) → event class.
SERVER_EVENT_TYPES: dict[str, type[ServerEvent]] = {
    name: cls for cls in _CLASSES for name in (cls.TYPE, *cls.ALIASES)
}

# What each side runs is compiled at import, so a process's first answer waits for no
# compilation (it delayed the first answer by 20–40 ms): servers encode server events and
# decode client events strictly, clients the other way round and read server events
# tolerantly.
prepare(
    [*SERVER_EVENT_TYPES.values(), r.UnknownEvent, r.DuplexPassthrough, d.HandshakeError],
    "body",
    "tolerant",
)
prepare(CLIENT_EVENT_TYPES.values(), "body", "strict")
prepare([*OBJECT_CLASSES, ErrorInfo], "body")
prepare(REQUEST_CLASSES, "strict")
prepare(TOOL_RECORD_CLASSES, "body", "strict")

#: Event types after which the client must not send anything (protocol.md §2.5).
TERMINAL_EVENT_TYPES = frozenset({"session.closed", "session.expired", "session.replaced"})


def parse_server_event(raw: dict[str, Any]) -> ServerEvent:
    """Typed event for a decoded wire object; an unknown `type` gives `UnknownEvent`."""
    etype = raw.get("type")
    cls = SERVER_EVENT_TYPES.get(etype) if isinstance(etype, str) else None
    if cls is None:
        if isinstance(etype, str) and etype.startswith(r.DUPLEX_PREFIX):
            return r.DuplexPassthrough.from_raw(raw)
        return r.UnknownEvent.from_raw(raw)
    return cls.from_raw(raw)


def decode_server_event(data: str | bytes) -> ServerEvent:
    """Decode one text frame; raises `CodecError` only when it is not a JSON object."""
    return parse_server_event(loads(data))


__all__ = [
    "CLIENT_EVENT_NAMES",
    "CLIENT_EVENT_TYPES",
    "SERVER_EVENT_TYPES",
    "TERMINAL_EVENT_TYPES",
    "CodecError",
    "decode_client_event",
    "decode_server_event",
    "parse_server_event",
]
