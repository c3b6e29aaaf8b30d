"""Typed client events (client → server), one class per wire type (protocol.md §2–§6).

A client builds and encodes them (`to_dict`); a server decodes them strictly
(`decode_client_event`), so an event is refused for exactly what its class does not allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final

from duplex_client.protocol.codec import new_client_event_id
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import OMIT, Rule, SchemaError
from duplex_client.protocol.requests import AppendVad, ResponseOptions
from duplex_client.protocol.schema import Record, lift_fields

_FRAMES = ErrorCode.INVALID_VIDEO_FRAMES
_FORMAT = ErrorCode.UNSUPPORTED_AUDIO_FORMAT
_ITEM_ID = Rule(code=ErrorCode.MISSING_ITEM_ID, non_empty=True)


@dataclass(kw_only=True, slots=True)
class ClientEvent(Record):
    """Base of every client event: a wire `type` and an `event_id` ("" when a peer sent none)."""

    TYPE: ClassVar[str] = ""
    #: Other wire names a server accepts for this event.
    ALIASES: ClassVar[tuple[str, ...]] = ()
    event_id: Annotated[str, Rule(absent="", absent_set=True)] = field(
        default_factory=new_client_event_id
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire object: `type`, `event_id`, then the event's fields."""
        return self.body({"type": self.TYPE})


def _frames_non_empty(frames: tuple[str, ...]) -> str | None:
    empty = next((i for i, f in enumerate(frames) if not f), None)
    return None if empty is None else f"video_frames[{empty}] must be a base64 string"


@dataclass(kw_only=True, slots=True)
class SessionUpdate(ClientEvent):
    """`session.update`: the full session object (first message, or a reconfiguration)."""

    TYPE: ClassVar[str] = "session.update"
    session: Annotated[dict[str, Any], Rule(code=ErrorCode.INVALID_SESSION_UPDATE)]


@dataclass(kw_only=True, slots=True)
class SessionResume(ClientEvent):
    """`session.resume`: reattach to a detached session (first message only)."""

    TYPE: ClassVar[str] = "session.resume"
    CODE = ErrorCode.INVALID_SESSION_RESUME
    session_id: str
    resume_token: str = field(repr=False)
    last_received_server_event_seq: Annotated[int, Rule(ge=0)] = 0


@dataclass(kw_only=True, slots=True)
class SessionHeartbeat(ClientEvent):
    """`session.heartbeat`: keep-alive, answered by `session.heartbeat_ack`."""

    TYPE: ClassVar[str] = "session.heartbeat"


@dataclass(kw_only=True, slots=True)
class SessionClose(ClientEvent):
    """`session.close`: end the session; the server answers `session.closed`."""

    TYPE: ClassVar[str] = "session.close"
    ALIASES: ClassVar[tuple[str, ...]] = ("close", "close_session")
    reason: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class SessionEnd(ClientEvent):
    """`session.end`: no more input; the server answers `stream_drained` once output is out.

    Only for `response_lifecycle: "continuous_stream"` (Nemotron-style); the session stays
    open after `stream_drained` until `session.close`.
    """

    TYPE: ClassVar[str] = "session.end"


@dataclass(kw_only=True, slots=True)
class SessionEventAck(ClientEvent):
    """`session.event_ack`: the highest `server_event_seq` processed."""

    TYPE: ClassVar[str] = "session.event_ack"
    #: A missing, non-integer or negative seq is `invalid_event_ack` (vLLM-Omni 0.30.0
    #: `entrypoints/duplex/serving.py`), as is a seq never sent (the server's check).
    CODE = ErrorCode.INVALID_EVENT_ACK
    server_event_seq: Annotated[int, Rule(ge=0)]


#: A speech probability at or above this is speech (vLLM-Omni's threshold).
SPEECH_PROBABILITY: Final = 0.5


def _speech_verdict(is_speech: bool | None, probability: float | None) -> bool | None:
    if is_speech is not None:
        return is_speech
    return None if probability is None else probability >= SPEECH_PROBABILITY


@dataclass(kw_only=True, slots=True)
class InputAudioBufferAppend(ClientEvent):
    """`input_audio_buffer.append`: one append of any unit kind (AUDIO, OMNI or VISION).

    Fields are checked in the order protocol.md §3.2 gives: audio and frames, that one of
    them is there, the hint and the informational positions, then format and rate (whether
    they match the session, whether the base64 decodes and the unit kind is legal is the
    server's check). `audio_start_ms` defaults to `audio_end_ms - duration_ms`.
    """

    TYPE: ClassVar[str] = "input_audio_buffer.append"
    REQUIRE_ANY: ClassVar[tuple[str, ...]] = ("audio", "video_frames")
    audio: Annotated[str | None, Rule(aliases=("delta",))] = ""
    video_frames: Annotated[
        tuple[str, ...], Rule(omit=True, code=_FRAMES, check=_frames_non_empty)
    ] = ()
    max_slice_nums: Annotated[int | None, Rule(omit=True, choices=(1,), code=_FRAMES)] = None
    is_speech: Annotated[bool | None, Rule(aliases=("speech",), omit=True)] = None
    duration_ms: Annotated[float | None, OMIT] = None
    audio_start_ms: Annotated[float | None, OMIT] = None
    audio_end_ms: Annotated[float | None, OMIT] = None
    media_start_ms: Annotated[float | None, OMIT] = None
    media_end_ms: Annotated[float | None, OMIT] = None
    unit_index: Annotated[float | None, OMIT] = None
    format: Annotated[
        str | None, Rule(aliases=("input_audio_format",), omit=True, code=_FORMAT)
    ] = "pcm16"
    sample_rate_hz: Annotated[
        float | None, Rule(aliases=("sample_rate",), omit=True, code=_FORMAT)
    ] = 16000
    #: Overlap hints (§4.4): `barge_in`, `listen` or `drop` (and vLLM-Omni's synonyms).
    overlap_action: Annotated[str | None, Rule(aliases=("overlap",), omit=True)] = None
    force_barge_in: Annotated[bool | None, OMIT] = None
    force_listen: Annotated[bool | None, OMIT] = None
    #: The client's speech hints (§3.2): a probability (speech at 0.5 or more), a VAD
    #: verdict object, and the RMS below which the overlap gate hears silence.
    speech_probability: Annotated[float | None, Rule(omit=True, ge=0, le=1)] = None
    vad: Annotated[AppendVad | None, OMIT] = None
    overlap_silence_rms: Annotated[float | None, Rule(omit=True, ge=0, le=1)] = None

    @property
    def declared_speech(self) -> bool | None:
        """The client's speech verdict: `is_speech`, then `vad`, then `speech_probability`."""
        if self.is_speech is not None:
            return self.is_speech
        vad = self.vad
        declared = None if vad is None else _speech_verdict(vad.is_speech, vad.speech_probability)
        return declared if declared is not None else _speech_verdict(None, self.speech_probability)

    @property
    def silence_rms(self) -> float | None:
        """This append's overlap silence threshold (`overlap_silence_rms`, then `vad`'s)."""
        if self.overlap_silence_rms is not None:
            return self.overlap_silence_rms
        return None if self.vad is None else self.vad.silence_rms

    def __post_init__(self) -> None:
        if self.audio_start_ms is None and None not in (self.audio_end_ms, self.duration_ms):
            self.audio_start_ms = self.audio_end_ms - self.duration_ms  # type: ignore[operator]


@dataclass(kw_only=True, slots=True)
class InputAudioBufferCommit(ClientEvent):
    """`input_audio_buffer.commit`: seal (or, with `final=False`, flush) the turn."""

    TYPE: ClassVar[str] = "input_audio_buffer.commit"
    final: bool = True
    response_create: Annotated[bool | None, Rule(aliases=("create_response",), omit=True)] = None
    is_speech: Annotated[bool | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class InputCommit(InputAudioBufferCommit):
    """`input.commit`: a commit that asks for a response unless it says otherwise."""

    TYPE: ClassVar[str] = "input.commit"

    def __post_init__(self) -> None:
        if self.response_create is None:
            self.response_create = True


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
    response: Annotated[dict[str, Any], Rule(omit=True, schema=ResponseOptions)] = field(
        default_factory=dict
    )


@dataclass(kw_only=True, slots=True)
class ResponseCancel(ClientEvent):
    """`response.cancel`: cancel the given (default: active) response."""

    TYPE: ClassVar[str] = "response.cancel"
    response_id: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class OutputAudioBufferClear(ClientEvent):
    """`output_audio_buffer.clear`: stop sending audio for a response."""

    TYPE: ClassVar[str] = "output_audio_buffer.clear"
    response_id: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class PlaybackAck(ClientEvent):
    """`playback.ack`: how much of a response's audio was actually played (protocol.md §5).

    `response_id` may come from `item_id` (`item_<response_id>`) and `item_id` from it;
    `committed_ms` defaults to `played_ms` and is clamped to it.
    """

    TYPE: ClassVar[str] = "playback.ack"
    ALIASES: ClassVar[tuple[str, ...]] = ("audio.playback_ack",)
    response_id: str | None = None
    item_id: str | None = None
    played_ms: Annotated[int, Rule(ge=0)]
    committed_ms: Annotated[int | None, Rule(ge=0)] = None
    truncate: bool = False

    def __post_init__(self) -> None:
        item = self.item_id
        if self.response_id is None and item is not None and item.startswith("item_"):
            self.response_id = item[5:]
        if self.response_id is None:
            raise SchemaError(ErrorCode.BAD_EVENT, "playback.ack needs response_id", "response_id")
        if item is None:
            self.item_id = f"item_{self.response_id}"
        committed = self.played_ms if self.committed_ms is None else self.committed_ms
        self.committed_ms = min(committed, self.played_ms)
        lift_fields(self)


@dataclass(kw_only=True, slots=True)
class ConversationItemCreate(ClientEvent):
    """`conversation.item.create`: add an item to the conversation."""

    TYPE: ClassVar[str] = "conversation.item.create"
    item: dict[str, Any]
    previous_item_id: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class ConversationItemRetrieve(ClientEvent):
    """`conversation.item.retrieve`: fetch an item by id."""

    TYPE: ClassVar[str] = "conversation.item.retrieve"
    item_id: Annotated[str, _ITEM_ID]


@dataclass(kw_only=True, slots=True)
class ConversationItemDelete(ClientEvent):
    """`conversation.item.delete`: remove an item by id."""

    TYPE: ClassVar[str] = "conversation.item.delete"
    item_id: Annotated[str, _ITEM_ID]


@dataclass(kw_only=True, slots=True)
class ConversationItemTruncate(ClientEvent):
    """`conversation.item.truncate`: cut an assistant item's audio at `audio_end_ms`."""

    TYPE: ClassVar[str] = "conversation.item.truncate"
    item_id: Annotated[str, _ITEM_ID]
    content_index: Annotated[int, Rule(ge=0)] = 0
    audio_end_ms: Annotated[int, Rule(ge=0)]


@dataclass(kw_only=True, slots=True)
class InputTextAppend(ClientEvent):
    """`input.text.append`: text input (chat lane only; `text` is required)."""

    TYPE: ClassVar[str] = "input.text.append"
    ALIASES: ClassVar[tuple[str, ...]] = ("input_text.append", "push_text")
    text: str


@dataclass(kw_only=True, slots=True)
class BargeIn(ClientEvent):
    """`barge_in`: the user interrupts the playing response (needs `supports_barge_in`)."""

    TYPE: ClassVar[str] = "barge_in"


@dataclass(kw_only=True, slots=True)
class TurnSignal(ClientEvent):
    """`turn.signal {event, payload?}`: a turn signal (`barge_in`, `user_started`, ...).

    Some `event` names stand for another client event whose fields ride in `payload`
    (`input.cancel`, `response.cancel`, `session.update`, `conversation.item.*`).
    """

    TYPE: ClassVar[str] = "turn.signal"
    ALIASES: ClassVar[tuple[str, ...]] = ("signal_turn",)
    event: Annotated[str, Rule(non_empty=True)]
    payload: Annotated[dict[str, Any] | None, OMIT] = None
    response_id: Annotated[str | None, OMIT] = None


_CLASSES: tuple[type[ClientEvent], ...] = (
    SessionUpdate,
    SessionResume,
    SessionHeartbeat,
    SessionClose,
    SessionEnd,
    SessionEventAck,
    InputAudioBufferAppend,
    InputAudioBufferCommit,
    InputCommit,
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

#: Every client event class by its wire type.
CLIENT_EVENT_TYPES: dict[str, type[ClientEvent]] = {cls.TYPE: cls for cls in _CLASSES}

#: Every name a server accepts (types and aliases) → event class.
CLIENT_EVENT_NAMES: dict[str, type[ClientEvent]] = {
    name: cls for cls in _CLASSES for name in (cls.TYPE, *cls.ALIASES)
}


def decode_client_event(raw: dict[str, Any]) -> ClientEvent:
    """Strictly decode a client event object; raises `SchemaError` (code and `param`)."""
    etype = raw.get("type")
    if not isinstance(etype, str):
        raise SchemaError(ErrorCode.BAD_EVENT, "type must be a string", "type")
    cls = CLIENT_EVENT_NAMES.get(etype)
    if cls is None:
        raise SchemaError(ErrorCode.UNKNOWN_EVENT, f"unknown event type {etype!r}", "type")
    return cls.decode(raw)


__all__ = [
    "CLIENT_EVENT_NAMES",
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
    "InputCommit",
    "InputTextAppend",
    "OutputAudioBufferClear",
    "PlaybackAck",
    "ResponseCancel",
    "ResponseCreate",
    "SessionClose",
    "SessionEnd",
    "SessionEventAck",
    "SessionHeartbeat",
    "SessionResume",
    "SessionUpdate",
    "TurnSignal",
    "decode_client_event",
]
