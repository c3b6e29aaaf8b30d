"""Typed nested objects of server events: items, responses, the session object (protocol.md §2–§5).

Events carry these as their wire dicts (clients read them as dicts, and items created by a
client are echoed with whatever fields it sent); a server builds them from these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Self

from duplex_client.protocol.schema import OMIT, Record, specs, tolerant_fields


@dataclass(kw_only=True, slots=True)
class ContentPart(Record):
    """A content part: of an item (`input_audio`, `output_audio`, …) or a response (`audio`)."""

    type: str
    text: Annotated[str | None, OMIT] = None
    transcript: Annotated[str | None, OMIT] = None
    audio_ms: Annotated[int | None, OMIT] = None
    frames: Annotated[int | None, OMIT] = None
    speech: Annotated[bool | None, OMIT] = None


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
class CommittedInfo(Record):
    """The `event` of `input_audio_buffer.committed` (`input.committed`, §3.3)."""

    type: str = "input.committed"
    turn_id: Annotated[int | None, OMIT] = None
    epoch: int
    client_event_id: str | None = None
    final: Annotated[bool | None, OMIT] = None
    no_response: Annotated[bool | None, OMIT] = None
    response_create_deferred: Annotated[bool | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class PlaybackInfo(Record):
    """The `event` of `playback.acknowledged` (§5)."""

    type: str = "playback.acknowledged"
    client_event_id: str | None = None
    response_id: str
    item_id: str
    played_ms: int
    committed_ms: int
    truncate: bool
    history_committed: bool


@dataclass(kw_only=True, slots=True)
class ResumeInput(Record):
    """`session.resumed.input`: the last accepted append or commit and the audio so far (§6)."""

    last_event_id: str | None = None
    audio_end_ms: int
    append_count: int


@dataclass(kw_only=True, slots=True)
class PlaybackTotals(Record):
    """`session.playback`: generated, sent, played and committed ms over all responses."""

    generated_ms: int = 0
    sent_ms: int = 0
    played_ms: int = 0
    committed_ms: int = 0


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


@dataclass(kw_only=True, slots=True)
class AudioOutputInfo(Record):
    """`session.audio.output`."""

    format: AudioFormat
    sample_rate_hz: int


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
    id: str
    state: str = "open"
    epoch: int = 0
    model: str = ""
    modalities: list[str] = field(default_factory=list)
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
    playback_commit_policy: str
    instructions: str | None = None
    voice: str | None = None
    temperature: float | None = None
    max_response_output_tokens: int | str | None = None
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
    CommittedInfo,
    PlaybackInfo,
    ResumeInput,
    PlaybackTotals,
    AudioFormat,
    AudioInputInfo,
    AudioOutputInfo,
    AudioInfo,
    SessionObject,
)
