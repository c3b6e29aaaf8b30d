"""Typed client events (client → server), each serialising to its wire dict (protocol.md §2–§6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from duplex_client.protocol.codec import new_client_event_id


@dataclass(kw_only=True, slots=True)
class ClientEvent:
    """Base of every client event: a wire `type` and an `event_id`."""

    TYPE: ClassVar[str] = ""
    event_id: str = field(default_factory=new_client_event_id)

    def body(self) -> dict[str, Any]:
        """The event's own fields (without `type` and `event_id`)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """The wire object."""
        out: dict[str, Any] = {"type": self.TYPE, "event_id": self.event_id}
        out.update(self.body())
        return out


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass(kw_only=True, slots=True)
class SessionUpdate(ClientEvent):
    """`session.update`: the full session object (first message, or a reconfiguration)."""

    TYPE: ClassVar[str] = "session.update"
    session: dict[str, Any]

    def body(self) -> dict[str, Any]:
        """The session object."""
        return {"session": self.session}


@dataclass(kw_only=True, slots=True)
class SessionResume(ClientEvent):
    """`session.resume`: reattach to a detached session (first message only)."""

    TYPE: ClassVar[str] = "session.resume"
    session_id: str
    resume_token: str
    last_received_server_event_seq: int = 0

    def body(self) -> dict[str, Any]:
        """Session id, token and last seen sequence number."""
        return {
            "session_id": self.session_id,
            "resume_token": self.resume_token,
            "last_received_server_event_seq": self.last_received_server_event_seq,
        }


@dataclass(kw_only=True, slots=True)
class SessionHeartbeat(ClientEvent):
    """`session.heartbeat`: keep-alive, answered by `session.heartbeat_ack`."""

    TYPE: ClassVar[str] = "session.heartbeat"


@dataclass(kw_only=True, slots=True)
class SessionClose(ClientEvent):
    """`session.close`: end the session; the server answers `session.closed`."""

    TYPE: ClassVar[str] = "session.close"
    reason: str | None = None

    def body(self) -> dict[str, Any]:
        """The optional reason."""
        return _drop_none({"reason": self.reason})


@dataclass(kw_only=True, slots=True)
class SessionEventAck(ClientEvent):
    """`session.event_ack`: the highest `server_event_seq` processed."""

    TYPE: ClassVar[str] = "session.event_ack"
    server_event_seq: int

    def body(self) -> dict[str, Any]:
        """The acknowledged sequence number."""
        return {"server_event_seq": self.server_event_seq}


@dataclass(kw_only=True, slots=True)
class InputAudioBufferAppend(ClientEvent):
    """`input_audio_buffer.append`: one append of any unit kind (AUDIO, OMNI or VISION)."""

    TYPE: ClassVar[str] = "input_audio_buffer.append"
    audio: str
    duration_ms: int
    audio_end_ms: int
    video_frames: tuple[str, ...] = ()
    format: str | None = "pcm16"
    sample_rate_hz: int | None = 16000
    is_speech: bool | None = None
    media_start_ms: int | None = None
    media_end_ms: int | None = None
    unit_index: int | None = None

    def body(self) -> dict[str, Any]:
        """Audio, positions, hint, frames and media span; absent optionals are omitted."""
        out: dict[str, Any] = {"audio": self.audio}
        if self.format is not None:
            out["format"] = self.format
        if self.sample_rate_hz is not None:
            out["sample_rate_hz"] = self.sample_rate_hz
        out["duration_ms"] = self.duration_ms
        out["audio_start_ms"] = self.audio_end_ms - self.duration_ms
        out["audio_end_ms"] = self.audio_end_ms
        if self.is_speech is not None:
            out["is_speech"] = self.is_speech
        if self.video_frames:
            out["video_frames"] = list(self.video_frames)
        out.update(
            _drop_none(
                {
                    "media_start_ms": self.media_start_ms,
                    "media_end_ms": self.media_end_ms,
                    "unit_index": self.unit_index,
                }
            )
        )
        return out


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCommit(ClientEvent):
    """`input_audio_buffer.commit`: seal (or, with `final=False`, flush) the turn."""

    TYPE: ClassVar[str] = "input_audio_buffer.commit"
    final: bool = True
    response_create: bool | None = None
    is_speech: bool | None = None

    def body(self) -> dict[str, Any]:
        """`final`, and `response_create`/`is_speech` only when set."""
        return {
            "final": self.final,
            **_drop_none({"response_create": self.response_create, "is_speech": self.is_speech}),
        }


@dataclass(kw_only=True, slots=True)
class InputAudioBufferClear(ClientEvent):
    """`input_audio_buffer.clear`: drop buffered audio and queued frames."""

    TYPE: ClassVar[str] = "input_audio_buffer.clear"


@dataclass(kw_only=True, slots=True)
class InputCancel(ClientEvent):
    """`input.cancel`: clear plus an epoch advance."""

    TYPE: ClassVar[str] = "input.cancel"


@dataclass(kw_only=True, slots=True)
class ResponseCreate(ClientEvent):
    """`response.create`: ask for a response, with optional per-response options."""

    TYPE: ClassVar[str] = "response.create"
    response: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The options object (omitted when empty)."""
        return {"response": self.response} if self.response else {}


@dataclass(kw_only=True, slots=True)
class ResponseCancel(ClientEvent):
    """`response.cancel`: cancel the given (default: active) response."""

    TYPE: ClassVar[str] = "response.cancel"
    response_id: str | None = None

    def body(self) -> dict[str, Any]:
        """The optional response id."""
        return _drop_none({"response_id": self.response_id})


@dataclass(kw_only=True, slots=True)
class OutputAudioBufferClear(ClientEvent):
    """`output_audio_buffer.clear`: stop sending audio for a response."""

    TYPE: ClassVar[str] = "output_audio_buffer.clear"
    response_id: str | None = None

    def body(self) -> dict[str, Any]:
        """The optional response id."""
        return _drop_none({"response_id": self.response_id})


@dataclass(kw_only=True, slots=True)
class PlaybackAck(ClientEvent):
    """`playback.ack`: how much of a response's audio was actually played (protocol.md §5)."""

    TYPE: ClassVar[str] = "playback.ack"
    response_id: str
    played_ms: int
    committed_ms: int | None = None
    truncate: bool = False

    def body(self) -> dict[str, Any]:
        """Response/item ids, played and committed ms, truncate flag."""
        committed = self.played_ms if self.committed_ms is None else self.committed_ms
        return {
            "response_id": self.response_id,
            "item_id": f"item_{self.response_id}",
            "played_ms": self.played_ms,
            "committed_ms": min(committed, self.played_ms),
            "truncate": self.truncate,
        }


@dataclass(kw_only=True, slots=True)
class ConversationItemCreate(ClientEvent):
    """`conversation.item.create`: add an item to the conversation."""

    TYPE: ClassVar[str] = "conversation.item.create"
    item: dict[str, Any]
    previous_item_id: str | None = None

    def body(self) -> dict[str, Any]:
        """The item and its optional predecessor."""
        return {"item": self.item, **_drop_none({"previous_item_id": self.previous_item_id})}


@dataclass(kw_only=True, slots=True)
class ConversationItemRetrieve(ClientEvent):
    """`conversation.item.retrieve`: fetch an item by id."""

    TYPE: ClassVar[str] = "conversation.item.retrieve"
    item_id: str

    def body(self) -> dict[str, Any]:
        """The item id."""
        return {"item_id": self.item_id}


@dataclass(kw_only=True, slots=True)
class ConversationItemDelete(ClientEvent):
    """`conversation.item.delete`: remove an item by id."""

    TYPE: ClassVar[str] = "conversation.item.delete"
    item_id: str

    def body(self) -> dict[str, Any]:
        """The item id."""
        return {"item_id": self.item_id}


@dataclass(kw_only=True, slots=True)
class ConversationItemTruncate(ClientEvent):
    """`conversation.item.truncate`: cut an assistant item's audio at `audio_end_ms`."""

    TYPE: ClassVar[str] = "conversation.item.truncate"
    item_id: str
    audio_end_ms: int
    content_index: int = 0

    def body(self) -> dict[str, Any]:
        """Item id, content index and cut position."""
        return {
            "item_id": self.item_id,
            "content_index": self.content_index,
            "audio_end_ms": self.audio_end_ms,
        }


@dataclass(kw_only=True, slots=True)
class InputTextAppend(ClientEvent):
    """`input.text.append`: text input (chat lane only)."""

    TYPE: ClassVar[str] = "input.text.append"
    text: str

    def body(self) -> dict[str, Any]:
        """The text."""
        return {"text": self.text}


@dataclass(kw_only=True, slots=True)
class BargeIn(ClientEvent):
    """`barge_in`: the user interrupts the playing response (needs `supports_barge_in`)."""

    TYPE: ClassVar[str] = "barge_in"


@dataclass(kw_only=True, slots=True)
class TurnSignal(ClientEvent):
    """`turn.signal`: a client turn signal (needs `supports_barge_in`)."""

    TYPE: ClassVar[str] = "turn.signal"
    signal: str

    def body(self) -> dict[str, Any]:
        """The signal name."""
        return {"signal": self.signal}


#: Every client event class by wire type.
CLIENT_EVENT_TYPES: dict[str, type[ClientEvent]] = {
    cls.TYPE: cls
    for cls in (
        SessionUpdate,
        SessionResume,
        SessionHeartbeat,
        SessionClose,
        SessionEventAck,
        InputAudioBufferAppend,
        InputAudioBufferCommit,
        InputAudioBufferClear,
        InputCancel,
        ResponseCreate,
        ResponseCancel,
        OutputAudioBufferClear,
        PlaybackAck,
        ConversationItemCreate,
        ConversationItemRetrieve,
        ConversationItemDelete,
        ConversationItemTruncate,
        InputTextAppend,
        BargeIn,
        TurnSignal,
    )
}

__all__ = [
    "CLIENT_EVENT_TYPES",
    "BargeIn",
    "ConversationItemCreate",
    "ConversationItemDelete",
    "ConversationItemRetrieve",
    "ConversationItemTruncate",
    "InputAudioBufferAppend",
    "InputAudioBufferClear",
    "InputAudioBufferCommit",
    "InputCancel",
    "InputTextAppend",
    "OutputAudioBufferClear",
    "PlaybackAck",
    "ResponseCancel",
    "ResponseCreate",
    "SessionClose",
    "SessionEventAck",
    "SessionHeartbeat",
    "SessionResume",
    "SessionUpdate",
    "TurnSignal",
]
