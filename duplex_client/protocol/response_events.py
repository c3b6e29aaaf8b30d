"""Typed server events of the response lifecycle, output deltas, playback and overlap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final

from duplex_client.protocol.codec import b64decode
from duplex_client.protocol.objects import AudioTextMark, PlaybackTotals
from duplex_client.protocol.schema import OMIT, Rule
from duplex_client.protocol.server_events import ServerEvent, sub_dict

#: `response_id` repeats `response.id` (a response-ending event may carry either).
_LIFT_ID: Final = Rule(lift=("response", "id"))
#: `metadata` repeats `response.metadata`: lifted when read, left out when written.
_LIFT_META: Final = Rule(omit=True, lift=("response", "metadata"), omit_lifted=True)


@dataclass(kw_only=True, slots=True)
class ResponseEvent(ServerEvent):
    """Base of events that belong to one response (carry `response_id`)."""

    response_id: str | None = None
    metadata: Annotated[dict[str, Any], OMIT] = field(default_factory=dict)

    @property
    def unit_index(self) -> int | None:
        """`metadata.unit_index` of the deciding unit (our server's extension)."""
        value = self.metadata.get("unit_index")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def unit_kind(self) -> str | None:
        """`metadata.unit_kind` of the deciding unit."""
        value = self.metadata.get("unit_kind")
        return value if isinstance(value, str) else None

    @property
    def audio_unit_index(self) -> int | None:
        """`metadata.audio_unit_index` (None for VISION units)."""
        value = self.metadata.get("audio_unit_index")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def playback(self) -> PlaybackTotals | None:
        """`metadata.playback`: the response's generated/sent/played/committed ms."""
        return _totals(self.metadata.get("playback"))


def _totals(value: Any) -> PlaybackTotals | None:
    return PlaybackTotals.from_raw(value) if isinstance(value, dict) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


@dataclass(kw_only=True, slots=True)
class ResponseCreated(ResponseEvent):
    """`response.created`: a response started."""

    TYPE: ClassVar[str] = "response.created"
    response_id: Annotated[str | None, _LIFT_ID] = None
    metadata: Annotated[dict[str, Any], _LIFT_META] = field(default_factory=dict)
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def duplex_event(self) -> dict[str, Any]:
        """`response.metadata.duplex_event`: the session's record of the start."""
        return sub_dict(self.metadata, "duplex_event")


@dataclass(kw_only=True, slots=True)
class ResponseSpeak(ResponseEvent):
    """`response.speak`: the model decided to speak."""

    TYPE: ClassVar[str] = "response.speak"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0

    @property
    def model_speak(self) -> bool | None:
        """`metadata.model_speak`: the model itself decided to speak."""
        return _flag(self.metadata.get("model_speak"))


@dataclass(kw_only=True, slots=True)
class ResponseListen(ResponseEvent):
    """`response.listen`: the model listened (standalone without a live `response_id`)."""

    TYPE: ClassVar[str] = "response.listen"
    #: Only a top-level `response_id` makes a listen end a response (absent when standalone).
    response_id: Annotated[str | None, OMIT] = None
    metadata: Annotated[dict[str, Any], _LIFT_META] = field(default_factory=dict)
    session_id: str | None = None
    epoch: int | None = None
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str | None:
        """`metadata.reason`, e.g. `model_listen`."""
        value = self.metadata.get("reason")
        return value if isinstance(value, str) else None


@dataclass(kw_only=True, slots=True)
class ResponseDone(ResponseEvent):
    """`response.done`: the response ended (`completed`, `cancelled` or `failed`)."""

    TYPE: ClassVar[str] = "response.done"
    response_id: Annotated[str | None, _LIFT_ID] = None
    metadata: Annotated[dict[str, Any], _LIFT_META] = field(default_factory=dict)
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """`response.status`."""
        value = self.response.get("status")
        return value if isinstance(value, str) else "completed"

    @property
    def reason(self) -> str | None:
        """`response.status_details.reason`."""
        value = sub_dict(self.response, "status_details").get("reason")
        return value if isinstance(value, str) else None

    @property
    def committed(self) -> bool | None:
        """`metadata.committed`: whether any of the answer is in the history now."""
        return _flag(self.metadata.get("committed"))


@dataclass(kw_only=True, slots=True)
class ResponseOutputItemAdded(ResponseEvent):
    """`response.output_item.added`."""

    TYPE: ClassVar[str] = "response.output_item.added"
    item_id: str | None = None
    output_index: int = 0
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ResponseOutputItemDone(ResponseEvent):
    """`response.output_item.done`."""

    TYPE: ClassVar[str] = "response.output_item.done"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ResponseContentPartAdded(ResponseEvent):
    """`response.content_part.added`."""

    TYPE: ClassVar[str] = "response.content_part.added"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    part: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ResponseContentPartDone(ResponseEvent):
    """`response.content_part.done`."""

    TYPE: ClassVar[str] = "response.content_part.done"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    part: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ResponseAudioDelta(ResponseEvent):
    """`response.output_audio.delta` (beta `response.audio.delta`): base64 PCM16 output."""

    TYPE: ClassVar[str] = "response.output_audio.delta"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.audio.delta",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    delta: str = field(default="", repr=False)
    format: str | None = None
    sample_rate_hz: int | None = None

    def pcm(self) -> bytes:
        """The decoded PCM bytes (raises `CodecError` on bad base64)."""
        return b64decode(self.delta) if self.delta else b""

    @property
    def model_speak(self) -> bool | None:
        """`metadata.model_speak`: the model itself decided to speak."""
        return _flag(self.metadata.get("model_speak"))

    @property
    def end_of_turn(self) -> bool | None:
        """`metadata.end_of_turn`: this is the response's last delta (None: not stated)."""
        return _flag(self.metadata.get("end_of_turn"))

    @property
    def audio_duration_ms(self) -> int | None:
        """`metadata.audio_duration_ms`: the response's audio so far, this delta's included."""
        value = self.metadata.get("audio_duration_ms")
        return value if isinstance(value, int) and value.__class__ is not bool else None

    @property
    def vllm_omni(self) -> dict[str, Any]:
        """`metadata.vllm_omni`: the serving runtime's record of the chunk (empty: none)."""
        return sub_dict(self.metadata, "vllm_omni")

    @property
    def audio_text_marks(self) -> tuple[AudioTextMark, ...]:
        """`metadata.audio_text_marks`: how much transcript the audio so far speaks."""
        marks = self.metadata.get("audio_text_marks")
        if not isinstance(marks, list):
            return ()
        out = []
        for mark in marks:
            if isinstance(mark, dict):
                try:
                    out.append(AudioTextMark.from_raw(mark))
                except TypeError:  # a mark without both numbers
                    continue
        return tuple(out)


@dataclass(kw_only=True, slots=True)
class ResponseAudioDone(ResponseEvent):
    """`response.output_audio.done` (beta `response.audio.done`)."""

    TYPE: ClassVar[str] = "response.output_audio.done"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.audio.done",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0


@dataclass(kw_only=True, slots=True)
class ResponseAudioTranscriptDelta(ResponseEvent):
    """`response.output_audio_transcript.delta` (beta `response.audio_transcript.delta`)."""

    TYPE: ClassVar[str] = "response.output_audio_transcript.delta"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.audio_transcript.delta",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    delta: str = ""


@dataclass(kw_only=True, slots=True)
class ResponseAudioTranscriptDone(ResponseEvent):
    """`response.output_audio_transcript.done` (beta `response.audio_transcript.done`)."""

    TYPE: ClassVar[str] = "response.output_audio_transcript.done"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.audio_transcript.done",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    transcript: str = ""


@dataclass(kw_only=True, slots=True)
class ResponseTextDelta(ResponseEvent):
    """`response.output_text.delta` (beta `response.text.delta`)."""

    TYPE: ClassVar[str] = "response.output_text.delta"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.text.delta",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    delta: str = ""


@dataclass(kw_only=True, slots=True)
class ResponseTextDone(ResponseEvent):
    """`response.output_text.done` (beta `response.text.done`)."""

    TYPE: ClassVar[str] = "response.output_text.done"
    ALIASES: ClassVar[tuple[str, ...]] = ("response.text.done",)
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    text: str = ""


@dataclass(kw_only=True, slots=True)
class OutputAudioBufferCleared(ResponseEvent):
    """`output_audio_buffer.cleared`: no more audio will come for `response_id`."""

    TYPE: ClassVar[str] = "output_audio_buffer.cleared"


@dataclass(kw_only=True, slots=True)
class PlaybackAcknowledged(ResponseEvent):
    """`playback.acknowledged`: answer to `playback.ack`."""

    TYPE: ClassVar[str] = "playback.acknowledged"
    client_event_id: str | None = None
    item_id: str | None = None
    played_ms: int | None = None
    committed_ms: int | None = None
    truncate: bool = False
    event: dict[str, Any] = field(default_factory=dict)

    @property
    def playback(self) -> PlaybackTotals | None:
        """`event.playback`: the acknowledged response's cursor."""
        return _totals(self.event.get("playback"))

    @property
    def history_committed(self) -> bool | None:
        """`event.history_committed`: whether the acknowledged audio is in the history."""
        return _flag(self.event.get("history_committed"))


@dataclass(kw_only=True, slots=True)
class OverlapDecision(ServerEvent):
    """`overlap.decision`: how input that overlapped an active response was handled."""

    TYPE: ClassVar[str] = "overlap.decision"
    session_id: str | None = None
    epoch: int | None = None
    policy: str | None = None
    action: str | None = None
    reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class RateLimitsUpdated(ServerEvent):
    """`rate_limits.updated`: informational (may be ignored)."""

    TYPE: ClassVar[str] = "rate_limits.updated"
    rate_limits: list[Any] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class ConnectionResumed(ServerEvent):
    """`connection.resumed`: synthetic client-side event after a successful reconnect."""

    TYPE: ClassVar[str] = "connection.resumed"
    attempt: int = 0


@dataclass(kw_only=True, slots=True)
class ConnectionNewSession(ServerEvent):
    """`connection.new_session`: synthetic, client-side: a resume fell into a journal gap.

    The server could no longer replay what this client missed
    (`session.resync_required {reason: "journal_gap"}`), so the client opened a new session
    (its `session.created` follows). Input the old session was sent but may not have
    processed is lost (`lost_appends`); the new session's units start at `audio_start_ms` of
    the client's input count.
    """

    TYPE: ClassVar[str] = "connection.new_session"
    previous_session_id: str | None = None
    session_id: str | None = None
    reason: str = "journal_gap"
    audio_start_ms: float = 0.0
    lost_appends: int = 0
    attempt: int = 0


@dataclass(kw_only=True, slots=True)
class UnknownEvent(ServerEvent):
    """Any event type this SDK does not know; `raw` keeps the whole object."""


#: The prefix of vLLM-Omni's generic passthrough events (`duplex.<internal type>`).
DUPLEX_PREFIX: Final = "duplex."


@dataclass(kw_only=True, slots=True)
class DuplexPassthrough(ServerEvent):
    """`duplex.<type>`: a session-internal event with no Realtime name, passed on as it is.

    vLLM-Omni 0.30.0 renders any internal event its projection has no type for this way
    (`protocol/duplex/events.py` `DuplexRawEvent`: `{type: "duplex.<type>", event}`); the SDK
    reads every such name (a named one, like `duplex.function_call.done`, has its own class).
    """

    event: dict[str, Any] = field(default_factory=dict)

    @property
    def internal_type(self) -> str:
        """The session-internal type after `duplex.`."""
        return self.type.removeprefix(DUPLEX_PREFIX)


__all__ = [
    "DUPLEX_PREFIX",
    "ConnectionNewSession",
    "ConnectionResumed",
    "DuplexPassthrough",
    "OutputAudioBufferCleared",
    "OverlapDecision",
    "PlaybackAcknowledged",
    "RateLimitsUpdated",
    "ResponseAudioDelta",
    "ResponseAudioDone",
    "ResponseAudioTranscriptDelta",
    "ResponseAudioTranscriptDone",
    "ResponseContentPartAdded",
    "ResponseContentPartDone",
    "ResponseCreated",
    "ResponseDone",
    "ResponseEvent",
    "ResponseListen",
    "ResponseOutputItemAdded",
    "ResponseOutputItemDone",
    "ResponseSpeak",
    "ResponseTextDelta",
    "ResponseTextDone",
    "UnknownEvent",
]
