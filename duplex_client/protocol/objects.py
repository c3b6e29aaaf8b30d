"""Typed nested objects of server events: items, responses, the session object (protocol.md §2–§5).

Events carry these as their wire dicts (clients read them as dicts, and items created by a
client are echoed with whatever fields it sent); a server builds them from these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Self

from duplex_client.protocol.schema import OMIT, Record, Rule, specs, tolerant_fields

#: `session.turn_state` values, as upstream names them.
TURN_STATES: Final = (
    "idle",
    "user_speaking",
    "user_committed",
    "assistant_generating",
    "assistant_playing",
    "barge_in",
)


@dataclass(kw_only=True, slots=True)
class ContentPart(Record):
    """A content part: of an item (`input_audio`, `output_audio`, …) or a response (`audio`)."""

    type: str
    text: Annotated[str | None, OMIT] = None
    transcript: Annotated[str | None, OMIT] = None
    audio_ms: Annotated[int | None, OMIT] = None
    frames: Annotated[int | None, OMIT] = None
    #: Whether the turn held speech (`false`: a declared-silence commit); `speech` is read too.
    is_speech: Annotated[bool | None, Rule(aliases=("speech",), omit=True)] = None
    #: On an assistant item's `output_audio` part: the response's audio, and how much of the
    #: transcript it speaks by when (vLLM-Omni 0.30.0 `_response_item_content_part`).
    audio_duration_ms: Annotated[int | None, OMIT] = None
    audio_text_marks: Annotated[list[AudioTextMark] | None, OMIT] = None
    #: On a user item's `input_image` part: the image as a JPEG or PNG data URL.
    image_url: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class Item(Record):
    """A conversation item (`realtime.item`): a user or assistant message."""

    id: str
    object: str = "realtime.item"
    type: str = "message"
    role: str
    status: str
    content: list[ContentPart] = field(default_factory=list)
    metadata: Annotated[dict[str, Any] | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class StatusDetails(Record):
    """`response.status_details`: why a response ended as it did."""

    type: str
    reason: str


@dataclass(kw_only=True, slots=True)
class ResponseObject(Record):
    """The `response` of `response.created` and `response.done` (`realtime.response`)."""

    object: str = "realtime.response"
    id: str
    status: str
    status_details: StatusDetails | None = None
    output: list[dict[str, Any]] = field(default_factory=list)
    modalities: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ListeningObject(Record):
    """The `response` of `response.listen` (status `listening`; an id only when it ends one)."""

    object: str = "realtime.response"
    id: Annotated[str | None, OMIT] = None
    status: str = "listening"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class CommittedMessage(Record):
    """`input.committed.message`: the user message the commit put in the model's history."""

    role: str = "user"
    content: list[ContentPart] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class CommittedInfo(Record):
    """The `event` of `input_audio_buffer.committed` (`input.committed`, §3.3).

    `history_len` counts the messages of the model's history once the commit is in it (an
    assistant answer counts once any of it is committed); `realtime_item_id` is the
    acknowledged user item.
    """

    type: str = "input.committed"
    session_id: Annotated[str | None, OMIT] = None
    turn_id: Annotated[int | None, OMIT] = None
    epoch: int
    client_event_id: str | None = None
    final: Annotated[bool | None, OMIT] = None
    no_response: Annotated[bool | None, OMIT] = None
    response_create_deferred: Annotated[bool | None, OMIT] = None
    history_len: Annotated[int | None, OMIT] = None
    message: Annotated[CommittedMessage | None, OMIT] = None
    realtime_item_id: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class PlaybackTotals(Record):
    """Generated, sent, played and committed ms: `session.playback` over all responses, or one
    response's cursor (`playback` of acks, audio deltas and `response.done` metadata)."""

    generated_ms: int = 0
    sent_ms: int = 0
    played_ms: int = 0
    committed_ms: int = 0


@dataclass(kw_only=True, slots=True)
class PlaybackInfo(Record):
    """The `event` of `playback.acknowledged` (§5); `playback` is the response's cursor."""

    type: str = "playback.acknowledged"
    session_id: Annotated[str | None, OMIT] = None
    epoch: Annotated[int | None, OMIT] = None
    client_event_id: str | None = None
    response_id: str
    item_id: str
    played_ms: int
    committed_ms: int
    truncate: bool
    playback: Annotated[PlaybackTotals | None, OMIT] = None
    history_committed: bool


@dataclass(kw_only=True, slots=True)
class ClosedInfo(Record):
    """The `event` of `session.closed`: the session-level close record."""

    type: str = "session.closed"
    session_id: str | None = None
    epoch: int | None = None
    reason: str


@dataclass(kw_only=True, slots=True)
class AudioTextMark(Record):
    """`audio_text_marks[]`: by `audio_end_ms` of output audio, `text_chars` of transcript.

    `audio_ms` is read as a synonym of `audio_end_ms`, as vLLM-Omni 0.30.0's readers take it
    (`protocol/realtime/items.py`, `engine/duplex/realtime_events.py`).
    """

    text_chars: int
    audio_end_ms: Annotated[int, Rule(aliases=("audio_ms",))]


@dataclass(kw_only=True, slots=True)
class AudioDeltaInfo(Record):
    """What an audio delta's `metadata` adds to its response's metadata (§4).

    `audio_duration_ms` is the response's audio so far, this delta's included;
    `end_of_turn` marks the response's last delta.
    """

    session_id: str
    epoch: Annotated[int | None, OMIT] = None
    model_speak: bool = True
    end_of_turn: bool = False
    audio_duration_ms: int = 0
    audio_text_marks: list[AudioTextMark] = field(default_factory=list)
    playback: PlaybackTotals = field(default_factory=PlaybackTotals)
    #: The serving runtime's own record of the chunk (vLLM-Omni 0.30.0 `vllm_omni`:
    #: `runtime_impl`, `model_turn_id`, metrics), passed through to the delta's metadata.
    vllm_omni: Annotated[dict[str, Any] | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class SpeakInfo(Record):
    """What `response.speak.metadata` adds to its response's metadata."""

    session_id: str
    epoch: int
    model_speak: bool = True


@dataclass(kw_only=True, slots=True)
class ListenInfo(Record):
    """What `response.listen.response.metadata` adds: the listen record itself."""

    type: str = "response.listen"
    session_id: str
    epoch: int
    #: Why the model listened (`model_listen`, …; None when not stated).
    reason: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class CreatedInfo(Record):
    """`response.created.response.metadata.duplex_event`: the session's record of the start."""

    type: str = "response.created"
    session_id: str
    response_id: str
    epoch: int
    turn_id: int | None = None
    trigger: str | None = None


@dataclass(kw_only=True, slots=True)
class CreatedMeta(Record):
    """What `response.created.response.metadata` adds to the response's metadata."""

    audio_duration_ms: int = 0
    duplex_event: CreatedInfo


@dataclass(kw_only=True, slots=True)
class DoneInfo(Record):
    """What `response.done.response.metadata` adds: the session's record of the end.

    `committed`: whether any of the answer is in the conversation history now; `playback`:
    the response's cursor.
    """

    type: str = "response.done"
    session_id: str
    response_id: str
    epoch: int
    committed: bool
    playback: PlaybackTotals = field(default_factory=PlaybackTotals)
    #: The response's audio, in ms.
    audio_duration_ms: int = 0


@dataclass(kw_only=True, slots=True)
class ResumeInput(Record):
    """`session.resumed.input`: the last accepted append or commit and the audio so far (§6)."""

    last_event_id: str | None = None
    audio_end_ms: int
    append_count: int


@dataclass(kw_only=True, slots=True)
class AudioFormat(Record):
    """`{"type": "audio/pcm", "rate": N}`."""

    type: str = "audio/pcm"
    rate: int


@dataclass(kw_only=True, slots=True)
class AudioInputInfo(Record):
    """`session.audio.input`."""

    format: AudioFormat
    sample_rate_hz: int
    turn_detection: dict[str, Any] | None = None
    #: Echoed as the client sent them (vLLM-Omni 0.30.0 echoes the client's `audio` object).
    noise_reduction: Annotated[dict[str, Any] | None, OMIT] = None
    channels: Annotated[int | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class AudioOutputInfo(Record):
    """`session.audio.output`."""

    format: AudioFormat
    sample_rate_hz: int
    voice: Annotated[str | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class AudioInfo(Record):
    """`session.audio`."""

    input: AudioInputInfo
    output: AudioOutputInfo


@dataclass(kw_only=True, slots=True)
class SessionObject(Record):
    """The `session` of `session.created` / `session.updated`; `extras` echoes unknown fields."""

    SKIP = frozenset({"extras"})

    object: str = "realtime.session"
    type: str = "realtime"
    id: str
    state: str = "open"
    turn_state: str = "idle"
    epoch: int = 0
    turn_id: int = 0
    active_request_id: str | None = None
    active_response_id: str | None = None
    active_response_turn_id: int | None = None
    model: str = ""
    modalities: list[str] = field(default_factory=list)
    output_modalities: list[str] = field(default_factory=list)
    response_format: str = "pcm"
    input_audio_format: str = "pcm16"
    output_audio_format: str = "pcm16"
    sample_rate_hz: int
    audio: AudioInfo
    turn_detection: dict[str, Any] | None = None
    overlap_policy: str
    overlap_short_ack_ms: int = 700
    overlap_barge_in_ms: int = 1200
    overlap_silence_rms: float = 0.003
    input_audio_transcription: dict[str, Any] | None = None
    #: Echoed when the client set it (here or as `audio.input.noise_reduction`), as upstream.
    input_audio_noise_reduction: Annotated[dict[str, Any] | None, OMIT] = None
    playback_commit_policy: str
    instructions: str | None = None
    voice: str | None = None
    temperature: float | None = None
    max_response_output_tokens: int | str | None = None
    max_tokens: int | None = None
    speed: float | None = None
    tracing: str | dict[str, Any] | None = None
    idle_timeout_s: float
    extra_body: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    playback: PlaybackTotals = field(default_factory=PlaybackTotals)
    #: Declared function tools and the `tool_choice` (protocol.md "Tools").
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = "auto"
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The wire object: echoed unknown fields, then the configuration."""
        return self.body(dict(self.extras))

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Self:
        """Tolerant decode; keys this class does not know land in `extras`."""
        known = {k for s in specs(cls) for k in s.keys}
        extras = {k: v for k, v in raw.items() if k not in known}
        return cls(**tolerant_fields(cls, raw), extras=extras)


#: Every nested object class (the round-trip test covers each).
OBJECT_CLASSES: tuple[type[Record], ...] = (
    ContentPart,
    Item,
    StatusDetails,
    ResponseObject,
    ListeningObject,
    CommittedMessage,
    CommittedInfo,
    PlaybackInfo,
    ClosedInfo,
    AudioTextMark,
    AudioDeltaInfo,
    SpeakInfo,
    ListenInfo,
    CreatedInfo,
    CreatedMeta,
    DoneInfo,
    ResumeInput,
    PlaybackTotals,
    AudioFormat,
    AudioInputInfo,
    AudioOutputInfo,
    AudioInfo,
    SessionObject,
)
