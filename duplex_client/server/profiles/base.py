"""What a server profile fixes: advertised capabilities and the session defaults it applies."""

from __future__ import annotations

from dataclasses import dataclass, field

from duplex_client.protocol.capabilities import (
    DEFAULT_CHUNK_PERIOD_MS,
    DEFAULT_FIRST_UNIT_MS,
    Capabilities,
    derive_unit_kinds,
)
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.limits import Limits


@dataclass(frozen=True, slots=True)
class Profile:
    """One model family's behaviour as our server emulates it."""

    name: str
    implementation_level: str
    required_modalities: tuple[str, ...]
    optional_modalities: tuple[str, ...]
    first_unit_ms: int = DEFAULT_FIRST_UNIT_MS
    chunk_period_ms: int = DEFAULT_CHUNK_PERIOD_MS
    has_server_vad: bool = False
    ref_audio_required: bool = False
    #: Code for an illegal unit kind (ours: `bad_event`; other servers: `invalid_video_frames`).
    illegal_unit_code: str = ErrorCode.BAD_EVENT
    default_playback_commit_policy: str = "commit_all_on_done"
    default_overlap_policy: str = "listen_only"
    #: The persona (`instructions`) and the voice are fixed at open (PersonaPlex-style).
    fixed_persona: bool = False
    fixed_voice: bool = False
    #: `conversation.item.truncate` and truncating acks cut the stored assistant item.
    supports_audio_truncate: bool = True
    #: The session's input format and rate when the handshake names none (its native one).
    default_input_format: str = "pcm16"
    default_input_rate: int = 16000
    #: Whether sessions may be resumed (`supports_session_resume`; the server also allows it).
    resumable: bool = True
    #: Whether the model can be interrupted (`supports_barge_in`).
    barge_in: bool = True
    #: `continuous_stream`: input ends with `session.end`, answered by `stream_drained`.
    response_lifecycle: str | None = None
    #: Function calling (session `tools`, `function_call` items); advertised as `supports_tools`.
    supports_tools: bool = False
    #: Whether turns are committed by the client (False: the model answers without commits).
    supports_client_commit: bool = True
    #: Who signals turns (empty: derived from the lane, `turn_signal_sources`).
    signal_sources: tuple[str, ...] = ()
    extra_capabilities: dict[str, object] = field(default_factory=dict)

    def turn_signal_sources(self) -> tuple[str, ...]:
        """Who signals turns (`signal_sources`): as set, else the client's events, the overlap
        policy and, in a model-native lane, the model."""
        if self.signal_sources:
            return self.signal_sources
        native = ("model_native",) if self.implementation_level == "model_native_duplex" else ()
        return ("client_event", "server_policy", *native)

    def capabilities(self, limits: Limits, *, resumable: bool = True) -> Capabilities:
        """The `session.capabilities` this profile advertises under these limits."""
        return Capabilities(
            implementation_level=self.implementation_level,
            chunk_period_ms=self.chunk_period_ms,
            first_unit_ms=self.first_unit_ms,
            required_input_modalities=self.required_modalities,
            optional_input_modalities=self.optional_modalities,
            input_unit_kinds=derive_unit_kinds(self.required_modalities, self.optional_modalities),
            max_frames_per_append=limits.max_frames_per_append,
            max_frame_b64_chars=limits.max_frame_b64_chars,
            supports_session_resume=resumable and self.resumable,
            supports_barge_in=self.barge_in,
            supports_playback_ack=True,
            supports_session_lease=resumable and self.resumable,
            supports_audio_truncate=self.supports_audio_truncate,
            supports_client_commit=self.supports_client_commit,
            input_modes=("append_audio_chunk",),
            signal_sources=self.turn_signal_sources(),
            target_barge_in_latency_ms=self.chunk_period_ms,
            supports_input_append=True,
            supports_multi_session=limits.max_sessions > 1,
            response_lifecycle=self.response_lifecycle,
            raw={
                "supports_tools": self.supports_tools,
                **self.extra_capabilities,
            },
        )
