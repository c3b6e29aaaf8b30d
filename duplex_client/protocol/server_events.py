"""Typed server events (server → client); both event-name generations decode to one type."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.errors import ErrorInfo

#: GA event names and their beta synonyms (protocol.md §9.1).
GA_TO_BETA: dict[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "conversation.item.added": "conversation.item.created",
}


@dataclass(kw_only=True, slots=True)
class ServerEvent:
    """Base of every server event: the wire `type`, ids, sequence number and the raw object."""

    TYPE: ClassVar[str] = ""
    ALIASES: ClassVar[tuple[str, ...]] = ()
    type: str = ""
    event_id: str | None = None
    server_event_seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def flatten(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """Hook: lift nested fields to the top level before typed extraction."""
        return raw

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> ServerEvent:
        """Build the event from its wire object; ill-typed fields fall back to their defaults."""
        src = cls.flatten(raw)
        kwargs: dict[str, Any] = {"raw": raw, "type": raw.get("type", cls.TYPE)}
        for name, accepted, reject_bool in _field_checks(cls):
            value = src.get(name)
            if (
                value is not None
                and isinstance(value, accepted)
                and not (reject_bool and value.__class__ is bool)
            ):
                kwargs[name] = value
        return cls(**kwargs)


def _accepted(hint: Any) -> tuple[type, ...]:
    """The runtime types a field annotation accepts (None is handled by the caller)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(t for a in typing.get_args(hint) if a is not type(None) for t in _accepted(a))
    hint = origin or hint
    if hint is float:
        return (int, float)
    if hint is tuple:
        return (list, tuple)
    if hint is Any:
        return (object,)
    return (hint,)


_FieldCheck = tuple[str, tuple[type, ...], bool]
_FIELD_CHECKS: dict[type, list[_FieldCheck]] = {}


def _field_checks(cls: type) -> list[_FieldCheck]:
    """(name, accepted types, whether a bool must be rejected) per typed field, cached."""
    found = _FIELD_CHECKS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = []
        for f in fields(cls):
            if f.init and f.name not in ("raw", "type"):
                accepted = _accepted(hints[f.name])
                found.append((f.name, accepted, int in accepted and bool not in accepted))
        _FIELD_CHECKS[cls] = found
    return found


def sub_dict(raw: dict[str, Any], key: str) -> dict[str, Any]:
    """`raw[key]` when it is an object, else an empty dict."""
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


# --- session ---


@dataclass(kw_only=True, slots=True)
class SessionCreated(ServerEvent):
    """`session.created`: the effective session, its id and capabilities."""

    TYPE: ClassVar[str] = "session.created"
    session: dict[str, Any] = field(default_factory=dict)
    resume_token: str | None = field(default=None, repr=False)
    attachment_generation: int | None = None

    @property
    def session_id(self) -> str | None:
        """`session.id`, else `session.session_id`, else a top-level `session_id`."""
        for value in (self.session.get("id"), self.session.get("session_id")):
            if isinstance(value, str) and value:
                return value
        top = self.raw.get("session_id")
        return top if isinstance(top, str) and top else None

    @property
    def capabilities(self) -> Capabilities | None:
        """Parsed capabilities, or None when the endpoint is not a duplex handler."""
        caps = self.session.get("capabilities")
        return Capabilities.from_dict(caps) if isinstance(caps, dict) else None


@dataclass(kw_only=True, slots=True)
class SessionUpdated(ServerEvent):
    """`session.updated`: the effective session after an accepted update."""

    TYPE: ClassVar[str] = "session.updated"
    session: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class SessionResumed(ServerEvent):
    """`session.resumed`: reattached; the token is rotated and missed events follow."""

    TYPE: ClassVar[str] = "session.resumed"
    session_id: str | None = None
    resume_token: str | None = field(default=None, repr=False)
    attachment_generation: int | None = None
    session: dict[str, Any] = field(default_factory=dict)
    input: dict[str, Any] | None = None


@dataclass(kw_only=True, slots=True)
class SessionReplaced(ServerEvent):
    """`session.replaced`: another socket took the session over."""

    TYPE: ClassVar[str] = "session.replaced"
    session_id: str | None = None
    attachment_generation: int | None = None


@dataclass(kw_only=True, slots=True)
class SessionExpired(ServerEvent):
    """`session.expired`: idle TTL, disconnect grace or lease expiry ended the session."""

    TYPE: ClassVar[str] = "session.expired"
    session_id: str | None = None
    reason: str | None = None


@dataclass(kw_only=True, slots=True)
class SessionClosed(ServerEvent):
    """`session.closed`: the last event of a closed session."""

    TYPE: ClassVar[str] = "session.closed"
    session_id: str | None = None
    reason: str | None = None


@dataclass(kw_only=True, slots=True)
class SessionResyncRequired(ServerEvent):
    """`session.resync_required`: the journal cannot guarantee replay any more."""

    TYPE: ClassVar[str] = "session.resync_required"
    reason: str | None = None


@dataclass(kw_only=True, slots=True)
class SessionHeartbeatAck(ServerEvent):
    """`session.heartbeat_ack`: answer to a heartbeat."""

    TYPE: ClassVar[str] = "session.heartbeat_ack"
    session_id: str | None = None


@dataclass(kw_only=True, slots=True)
class ErrorEvent(ServerEvent):
    """`error`: nested or flat envelope, parsed into `error`."""

    TYPE: ClassVar[str] = "error"
    error: ErrorInfo = field(default_factory=lambda: ErrorInfo(code=None, message=""))

    @classmethod
    def flatten(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """Parse the error body into an `ErrorInfo`."""
        return {**raw, "error": ErrorInfo.from_event(raw)}

    @property
    def code(self) -> str | None:
        """The error code."""
        return self.error.code


# --- input ---


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCommitted(ServerEvent):
    """`input_audio_buffer.committed`: a turn was sealed at `audio_end_ms`."""

    TYPE: ClassVar[str] = "input_audio_buffer.committed"
    client_event_id: str | None = None
    item_id: str | None = None
    previous_item_id: str | None = None
    audio_end_ms: int | None = None
    final: bool = True
    no_response: bool = False
    event: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def flatten(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """`client_event_id` and `no_response` may also sit inside `event`."""
        inner = sub_dict(raw, "event")
        out = dict(raw)
        for key in ("client_event_id", "no_response"):
            if out.get(key) is None and key in inner:
                out[key] = inner[key]
        return out


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCleared(ServerEvent):
    """`input_audio_buffer.cleared`: buffered input was dropped."""

    TYPE: ClassVar[str] = "input_audio_buffer.cleared"
    client_event_id: str | None = None


@dataclass(kw_only=True, slots=True)
class InputAudioBufferSpeechStarted(ServerEvent):
    """`input_audio_buffer.speech_started`: server VAD detected speech."""

    TYPE: ClassVar[str] = "input_audio_buffer.speech_started"
    audio_start_ms: int | None = None
    item_id: str | None = None


@dataclass(kw_only=True, slots=True)
class InputAudioBufferSpeechStopped(ServerEvent):
    """`input_audio_buffer.speech_stopped`: server VAD detected the end of speech."""

    TYPE: ClassVar[str] = "input_audio_buffer.speech_stopped"
    audio_end_ms: int | None = None
    item_id: str | None = None


# --- conversation ---


@dataclass(kw_only=True, slots=True)
class ConversationItemAdded(ServerEvent):
    """`conversation.item.added` (beta `conversation.item.created`): an item joined history."""

    TYPE: ClassVar[str] = "conversation.item.added"
    ALIASES: ClassVar[tuple[str, ...]] = ("conversation.item.created",)
    item: dict[str, Any] = field(default_factory=dict)
    previous_item_id: str | None = None

    @property
    def item_id(self) -> str | None:
        """The item's id."""
        value = self.item.get("id")
        return value if isinstance(value, str) else None


@dataclass(kw_only=True, slots=True)
class ConversationItemDone(ServerEvent):
    """`conversation.item.done`: an item is complete."""

    TYPE: ClassVar[str] = "conversation.item.done"
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class InputAudioTranscriptionCompleted(ServerEvent):
    """`conversation.item.input_audio_transcription.completed`: the user turn's transcript."""

    TYPE: ClassVar[str] = "conversation.item.input_audio_transcription.completed"
    item_id: str | None = None
    transcript: str = ""


@dataclass(kw_only=True, slots=True)
class ConversationItemRetrieved(ServerEvent):
    """`conversation.item.retrieved`: answer to `conversation.item.retrieve`."""

    TYPE: ClassVar[str] = "conversation.item.retrieved"
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ConversationItemDeleted(ServerEvent):
    """`conversation.item.deleted`: answer to `conversation.item.delete`."""

    TYPE: ClassVar[str] = "conversation.item.deleted"
    item_id: str | None = None


@dataclass(kw_only=True, slots=True)
class ConversationItemTruncated(ServerEvent):
    """`conversation.item.truncated`: an assistant item was shortened."""

    TYPE: ClassVar[str] = "conversation.item.truncated"
    item_id: str | None = None
    audio_end_ms: int | None = None


__all__ = [
    "GA_TO_BETA",
    "ConversationItemAdded",
    "ConversationItemDeleted",
    "ConversationItemDone",
    "ConversationItemRetrieved",
    "ConversationItemTruncated",
    "ErrorEvent",
    "InputAudioBufferCleared",
    "InputAudioBufferCommitted",
    "InputAudioBufferSpeechStarted",
    "InputAudioBufferSpeechStopped",
    "InputAudioTranscriptionCompleted",
    "SessionClosed",
    "SessionCreated",
    "SessionExpired",
    "SessionHeartbeatAck",
    "SessionReplaced",
    "SessionResumed",
    "SessionResyncRequired",
    "SessionUpdated",
    "sub_dict",
]
