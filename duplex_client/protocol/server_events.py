"""Typed server events (server → client); both event-name generations decode to one type.

A server builds and encodes them (`to_dict(beta=...)`); a client decodes them tolerantly
(`from_raw`: unknown fields ignored, ill-typed ones at their defaults, nothing raises).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Self

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.errors import ErrorInfo
from duplex_client.protocol.schema import OMIT, Record, Rule, lift_fields, tolerant_fields

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
class ServerEvent(Record):
    """Base of every server event: the wire `type`, ids, sequence number and the raw object."""

    TYPE: ClassVar[str] = ""
    ALIASES: ClassVar[tuple[str, ...]] = ()
    SKIP = frozenset({"type", "event_id", "server_event_seq", "raw"})
    type: str = ""
    event_id: str | None = None
    server_event_seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.type:
            self.type = self.TYPE
        lift_fields(self)

    def wire_type(self, beta: bool = False) -> str:
        """The wire name in the GA or the beta generation."""
        name = self.TYPE or self.type
        return GA_TO_BETA.get(name, name) if beta else name

    def to_dict(self, *, beta: bool = False) -> dict[str, Any]:
        """The wire object: `type`, then `event_id` and `server_event_seq` when set, the fields."""
        return self.stamped(self.event_id, self.server_event_seq, beta=beta)

    def stamped(self, event_id: str | None, seq: int | None, *, beta: bool) -> dict[str, Any]:
        """The wire object with the given `event_id` and `server_event_seq` (None: left out)."""
        head: dict[str, Any] = {"type": self.wire_type(beta)}
        if event_id is not None:
            head["event_id"] = event_id
        if seq is not None:
            head["server_event_seq"] = seq
        return self.body(head)

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Self:
        """Build the event from its wire object; ill-typed fields fall back to their defaults."""
        return cls(**envelope(cls, raw), **tolerant_fields(cls, raw))


def envelope(cls: type[ServerEvent], raw: dict[str, Any]) -> dict[str, Any]:
    """The envelope of a received event: `type`, `event_id`, `server_event_seq` and `raw`."""
    etype, eid, seq = raw.get("type"), raw.get("event_id"), raw.get("server_event_seq")
    return {
        "raw": raw,
        "type": etype if isinstance(etype, str) else cls.TYPE,
        "event_id": eid if isinstance(eid, str) else None,
        "server_event_seq": seq if isinstance(seq, int) and seq.__class__ is not bool else None,
    }


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
    resume_token: Annotated[str | None, OMIT] = field(default=None, repr=False)
    attachment_generation: Annotated[int | None, OMIT] = None

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
    epoch: int | None = None
    reason: str | None = None
    #: The session-level close record (`type`, `session_id`, `epoch`, `reason`).
    event: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class StreamDrained(ServerEvent):
    """`stream_drained`: after `session.end`, every unit was decided and every response sent.

    `audio_end_ms` is the input accepted, `units` the units the model decided, `dropped_ms`
    the partial unit left open at `session.end` (shorter than one unit, not decided).
    """

    TYPE: ClassVar[str] = "stream_drained"
    session_id: str | None = None
    client_event_id: Annotated[str | None, OMIT] = None
    audio_end_ms: int | None = None
    units: int | None = None
    dropped_ms: int | None = None


@dataclass(kw_only=True, slots=True)
class SessionResyncRequired(ServerEvent):
    """`session.resync_required`: the journal cannot guarantee replay any more."""

    TYPE: ClassVar[str] = "session.resync_required"
    session_id: str | None = None
    reason: str | None = None


@dataclass(kw_only=True, slots=True)
class SessionHeartbeatAck(ServerEvent):
    """`session.heartbeat_ack`: answer to a heartbeat."""

    TYPE: ClassVar[str] = "session.heartbeat_ack"
    session_id: str | None = None


@dataclass(kw_only=True, slots=True)
class ErrorEvent(ServerEvent):
    """`error`: encoded nested; read from the nested or the flat envelope into `error`."""

    TYPE: ClassVar[str] = "error"
    error: ErrorInfo = field(default_factory=lambda: ErrorInfo(code=None, message=""))

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Self:
        """Parse the error body (either shape) into an `ErrorInfo`."""
        return cls(**envelope(cls, raw), error=ErrorInfo.from_event(raw))

    @property
    def code(self) -> str | None:
        """The error code."""
        return self.error.code


# --- input ---


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCommitted(ServerEvent):
    """`input_audio_buffer.committed`: a turn was sealed at `audio_end_ms`.

    `client_event_id` and `no_response` may also sit inside `event` (§3.3).
    """

    TYPE: ClassVar[str] = "input_audio_buffer.committed"
    client_event_id: Annotated[str | None, Rule(lift=("event", "client_event_id"))] = None
    item_id: str | None = None
    previous_item_id: str | None = None
    audio_end_ms: int | None = None
    final: bool = True
    no_response: Annotated[bool, Rule(omit=True, lift=("event", "no_response"))] = False
    event: dict[str, Any] = field(default_factory=dict)

    @property
    def history_len(self) -> int | None:
        """`event.history_len`: history items once this commit is in it."""
        value = self.event.get("history_len")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCleared(ServerEvent):
    """`input_audio_buffer.cleared`: buffered input was dropped (`epoch` after `input.cancel`)."""

    TYPE: ClassVar[str] = "input_audio_buffer.cleared"
    client_event_id: str | None = None
    epoch: Annotated[int | None, OMIT] = None


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
    previous_item_id: str | None = None
    item: dict[str, Any] = field(default_factory=dict)

    @property
    def item_id(self) -> str | None:
        """The item's id."""
        value = self.item.get("id")
        return value if isinstance(value, str) else None


@dataclass(kw_only=True, slots=True)
class ConversationItemDone(ServerEvent):
    """`conversation.item.done`: an item is complete."""

    TYPE: ClassVar[str] = "conversation.item.done"
    previous_item_id: str | None = None
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class InputAudioTranscriptionCompleted(ServerEvent):
    """`conversation.item.input_audio_transcription.completed`: the user turn's transcript."""

    TYPE: ClassVar[str] = "conversation.item.input_audio_transcription.completed"
    item_id: str | None = None
    content_index: int = 0
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
    #: The `conversation.item.delete` this answers, as the client sent it.
    event: Annotated[dict[str, Any], OMIT] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ConversationItemTruncated(ServerEvent):
    """`conversation.item.truncated`: an assistant item was shortened."""

    TYPE: ClassVar[str] = "conversation.item.truncated"
    item_id: str | None = None
    content_index: int = 0
    audio_end_ms: int | None = None
    #: The `conversation.item.truncate` this answers, as the client sent it (none when a
    #: truncating `playback.ack` cut the item).
    event: Annotated[dict[str, Any], OMIT] = field(default_factory=dict)


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
    "StreamDrained",
    "envelope",
    "sub_dict",
]
