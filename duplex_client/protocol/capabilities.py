"""Server capabilities advertised in `session.created` (protocol.md §2.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class UnitKind(StrEnum):
    """The three kinds of model input unit (protocol.md §3.1)."""

    AUDIO = "AUDIO"
    VISION = "VISION"
    OMNI = "OMNI"


DEFAULT_CHUNK_PERIOD_MS = 1000
DEFAULT_FIRST_UNIT_MS = 1000
DEFAULT_MAX_FRAMES_PER_APPEND = 2
DEFAULT_MAX_FRAME_B64_CHARS = 4_000_000
_MODALITIES = ("audio", "video")


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _modalities(value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(value, list):
        return default
    return tuple(m for m in _MODALITIES if m in value)


def _flag(value: Any, default: bool = False) -> bool:
    return value if isinstance(value, bool) else default


def _names(value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(value, list):
        return default
    return tuple(v for v in value if isinstance(v, str))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and value.__class__ is not bool else None


def derive_unit_kinds(required: tuple[str, ...], optional: tuple[str, ...]) -> frozenset[UnitKind]:
    """The legal unit kinds for a pair of modality lists (protocol.md §2.3)."""
    accepted = set(required) | set(optional)
    kinds: set[UnitKind] = set()
    if "audio" in accepted and "video" not in required:
        kinds.add(UnitKind.AUDIO)
    if "video" in accepted and "audio" not in required:
        kinds.add(UnitKind.VISION)
    if "audio" in accepted and "video" in accepted:
        kinds.add(UnitKind.OMNI)
    return frozenset(kinds)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the server can do; clients decide behaviour from this, never from the model name."""

    implementation_level: str = "unknown"
    chunk_period_ms: int = DEFAULT_CHUNK_PERIOD_MS
    first_unit_ms: int = DEFAULT_FIRST_UNIT_MS
    required_input_modalities: tuple[str, ...] = ("audio",)
    optional_input_modalities: tuple[str, ...] = ("video",)
    input_unit_kinds: frozenset[UnitKind] = frozenset({UnitKind.AUDIO, UnitKind.OMNI})
    max_frames_per_append: int = DEFAULT_MAX_FRAMES_PER_APPEND
    max_frame_b64_chars: int = DEFAULT_MAX_FRAME_B64_CHARS
    supports_session_resume: bool = False
    supports_barge_in: bool = False
    supports_playback_ack: bool = False
    #: A detached session is kept for a lease (with attachment generations) while it lasts.
    supports_session_lease: bool = False
    #: Whether `conversation.item.truncate` shortens an assistant item.
    supports_audio_truncate: bool = False
    #: Whether the client commits turns (False: the model answers without commits).
    supports_client_commit: bool = True
    #: How input reaches the model (`append_audio_chunk`, `append_text`).
    input_modes: tuple[str, ...] = ("append_audio_chunk",)
    #: Who may signal turn changes (`client_event`, `server_policy`, `model_native`).
    signal_sources: tuple[str, ...] = ()
    #: The barge-in latency the server aims for (None: not stated).
    target_barge_in_latency_ms: int | None = None
    #: Whether input arrives as appends (`input_audio_buffer.append`, always so here).
    supports_input_append: bool = True
    #: Whether the server holds more than one session at a time.
    supports_multi_session: bool = False
    #: `model_turn` (responses end) or `continuous_stream` (Nemotron: one response, drained at
    #: `session.close`); None: not stated.
    response_lifecycle: str | None = None
    #: vLLM-Omni 0.30.0's (`engine/duplex/config.py` `as_dict`): images go as
    #: `conversation.item.create` `input_image` items, a `response.create` may answer text or
    #: image items alone, turns are whole committed utterances, a new commit may start while
    #: the previous answer still speaks.
    supports_image_input: bool = False
    supports_text_only_turn: bool = False
    supports_turn_commit_only: bool = False
    supports_concurrent_turn_requests: bool = False
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Capabilities:
        """Parse a `capabilities` object; invalid or absent fields take their defaults."""
        data = data if isinstance(data, dict) else {}
        required = _modalities(data.get("required_input_modalities"), ("audio",))
        optional = _modalities(data.get("optional_input_modalities"), ("video",))
        optional = tuple(m for m in optional if m not in required)
        kinds_raw = data.get("input_unit_kinds")
        if isinstance(kinds_raw, list) and kinds_raw:
            kinds = frozenset(UnitKind(k) for k in kinds_raw if k in UnitKind.__members__)
        else:
            kinds = derive_unit_kinds(required, optional)
        level = data.get("implementation_level")
        return cls(
            implementation_level=level if isinstance(level, str) else "unknown",
            chunk_period_ms=_positive_int(data.get("chunk_period_ms")) or DEFAULT_CHUNK_PERIOD_MS,
            first_unit_ms=_positive_int(data.get("first_unit_ms")) or DEFAULT_FIRST_UNIT_MS,
            required_input_modalities=required,
            optional_input_modalities=optional,
            input_unit_kinds=kinds,
            max_frames_per_append=_positive_int(data.get("max_frames_per_append"))
            or DEFAULT_MAX_FRAMES_PER_APPEND,
            max_frame_b64_chars=_positive_int(data.get("max_frame_b64_chars"))
            or DEFAULT_MAX_FRAME_B64_CHARS,
            supports_session_resume=_flag(data.get("supports_session_resume")),
            supports_barge_in=_flag(data.get("supports_barge_in")),
            supports_playback_ack=_flag(data.get("supports_playback_ack")),
            supports_session_lease=_flag(data.get("supports_session_lease")),
            supports_audio_truncate=_flag(data.get("supports_audio_truncate")),
            supports_client_commit=_flag(data.get("supports_client_commit"), True),
            input_modes=_names(data.get("input_modes"), ("append_audio_chunk",)),
            signal_sources=_names(data.get("signal_sources"), ()),
            target_barge_in_latency_ms=_optional_int(data.get("target_barge_in_latency_ms")),
            supports_input_append=_flag(data.get("supports_input_append"), True),
            supports_multi_session=_flag(data.get("supports_multi_session")),
            response_lifecycle=_text(data.get("response_lifecycle")),
            supports_image_input=_flag(data.get("supports_image_input")),
            supports_text_only_turn=_flag(data.get("supports_text_only_turn")),
            supports_turn_commit_only=_flag(data.get("supports_turn_commit_only")),
            supports_concurrent_turn_requests=_flag(data.get("supports_concurrent_turn_requests")),
            raw=dict(data),
        )

    @property
    def turn_based(self) -> bool:
        """`implementation_level: turn_based_duplex` (or our older `chat_fallback`)."""
        return self.implementation_level in ("turn_based_duplex", "chat_fallback")

    @property
    def supports_tools(self) -> bool:
        """Whether the server's model calls functions (`supports_tools`, protocol.md §11)."""
        return self.raw.get("supports_tools") is True

    @property
    def audio_required(self) -> bool:
        """Every unit must carry audio (frame-only VISION units are illegal)."""
        return UnitKind.VISION not in self.input_unit_kinds

    @property
    def video_required(self) -> bool:
        """Every unit must carry frames (AURA-style)."""
        return "video" in self.required_input_modalities

    def allows(self, kind: UnitKind) -> bool:
        """Whether a unit of this kind may be sent."""
        return kind in self.input_unit_kinds

    def to_dict(self) -> dict[str, Any]:
        """The wire form, with every field present."""
        order = [k for k in UnitKind if k in self.input_unit_kinds]
        raw = {k: v for k, v in self.raw.items() if k != "response_lifecycle"}
        return {
            **raw,
            "implementation_level": self.implementation_level,
            "chunk_period_ms": self.chunk_period_ms,
            "first_unit_ms": self.first_unit_ms,
            "required_input_modalities": list(self.required_input_modalities),
            "optional_input_modalities": list(self.optional_input_modalities),
            "input_unit_kinds": [k.value for k in order],
            "max_frames_per_append": self.max_frames_per_append,
            "max_frame_b64_chars": self.max_frame_b64_chars,
            "supports_session_resume": self.supports_session_resume,
            "supports_barge_in": self.supports_barge_in,
            "supports_playback_ack": self.supports_playback_ack,
            "supports_session_lease": self.supports_session_lease,
            "supports_audio_truncate": self.supports_audio_truncate,
            "supports_client_commit": self.supports_client_commit,
            "input_modes": list(self.input_modes),
            "signal_sources": list(self.signal_sources),
            "target_barge_in_latency_ms": self.target_barge_in_latency_ms,
            "supports_input_append": self.supports_input_append,
            "supports_multi_session": self.supports_multi_session,
            "supports_image_input": self.supports_image_input,
            "supports_text_only_turn": self.supports_text_only_turn,
            "supports_turn_commit_only": self.supports_turn_commit_only,
            "supports_concurrent_turn_requests": self.supports_concurrent_turn_requests,
            **(
                {"response_lifecycle": self.response_lifecycle}
                if self.response_lifecycle is not None
                else {}
            ),
        }
