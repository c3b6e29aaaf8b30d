"""What a server profile fixes: advertised capabilities and the session defaults it applies."""

from __future__ import annotations

from dataclasses import dataclass, field

from duplex_client.families import family
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
    #: The output rate when the handshake names none (the family's).
    default_output_rate: int = 24000
    #: The event-name generation the server speaks unless told (`ServerConfig.event_names`).
    event_names: str = "ga"
    #: Whether sessions may be resumed (`supports_session_resume`; the server also allows it).
    resumable: bool = True
    #: Whether the model can be interrupted (`supports_barge_in`).
    barge_in: bool = True
    #: `continuous_stream`: one response for the session, drained at `session.close`.
    response_lifecycle: str | None = None
    #: Function calling (session `tools`, `function_call` items); advertised as `supports_tools`.
    supports_tools: bool = False
    #: Whether turns are committed by the client (False: the model answers without commits).
    supports_client_commit: bool = True
    #: Who signals turns (empty: derived from the lane, `turn_signal_sources`).
    signal_sources: tuple[str, ...] = ()
    #: Images arrive as `conversation.item.create` `input_image` items (`supports_image_input`).
    supports_image_input: bool = False
    #: Whether the session may ask for `extra_body.auto_response` (Qwen3-Omni refuses it).
    auto_response_allowed: bool = True
    #: Whether the session may carry a reference voice (Qwen3-Omni refuses one).
    ref_audio_allowed: bool = True
    #: The one rate `pcm_f32le` input is taken at (None: any). Qwen3-Omni's buffer takes
    #: 16 kHz float only; PCM16 at any rate is resampled to it before it gets there.
    float_input_rate_hz: int | None = None
    #: `extra_body` keys the server owns (upstream's `private_runtime_config_keys`): refused.
    private_runtime_keys: frozenset[str] = frozenset()
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
            # vLLM-Omni 0.30.0's names (`engine/duplex/config.py`), as our server serves them
            supports_image_input=self.supports_image_input,
            supports_text_only_turn=False,
            supports_turn_commit_only=self.implementation_level == TURN_BASED,
            supports_concurrent_turn_requests=False,
            raw={
                "supports_tools": self.supports_tools,
                # a DuplexCapabilities field 0.30.0's `as_dict` does not render; ours says false
                "supports_chat_completions": False,
                **self.extra_capabilities,
            },
        )


#: `implementation_level` of a model that decides listen/speak itself, and of one whose turns
#: end at commits (vLLM-Omni 0.30.0 `DuplexCapabilities.as_dict`: `turn_based_duplex`; our
#: older name for it was `chat_fallback`).
MODEL_NATIVE = "model_native_duplex"
TURN_BASED = "turn_based_duplex"

#: The input a handshake gets when neither it nor the capabilities name one (protocol.md §2.1).
_PROTOCOL_INPUT = ("pcm16", 16000)


def family_profile(name: str) -> Profile:
    """The profile of family `name` with every client-facing value from its table entry.

    Server-only choices (error codes, fixed persona, signal sources) are left at their
    defaults for the profile module to set.
    """
    f = family(name)
    native_input = (f.input_format, f.input_rate_hz)
    return Profile(
        name=f.name,
        implementation_level=MODEL_NATIVE if f.model_owned_turns else TURN_BASED,
        required_modalities=f.required_modalities,
        optional_modalities=f.optional_modalities,
        first_unit_ms=f.first_unit_ms,
        chunk_period_ms=f.chunk_period_ms,
        has_server_vad=f.server_vad,
        supports_audio_truncate=f.audio_truncate,
        default_input_format=f.input_format,
        default_input_rate=f.input_rate_hz,
        default_output_rate=f.output_rate_hz,
        event_names=f.event_names,
        resumable=f.session_resume,
        barge_in=f.barge_in,
        # A turn-based server states no lifecycle; the client reads its absence as turns.
        response_lifecycle=f.lifecycle if f.lifecycle == "continuous_stream" else None,
        supports_tools=f.tools,
        supports_image_input=f.image_items,
        # A continuous stream keeps the protocol's default flag: its lifecycle, not this
        # flag, tells clients to send no commits (`takes_commits`, protocol.md §9.2).
        supports_client_commit=f.client_commits or f.lifecycle == "continuous_stream",
        extra_capabilities=(
            {"input_audio_format": f.input_format, "input_sample_rate_hz": f.input_rate_hz}
            if native_input != _PROTOCOL_INPUT
            else {}
        ),
    )
