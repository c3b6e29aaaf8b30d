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
    #: Whether turns are committed by the client (False: the model answers without commits).
    supports_client_commit: bool = True
    extra_capabilities: dict[str, object] = field(default_factory=dict)

    @property
    def signal_sources(self) -> tuple[str, ...]:
        """Who signals turns: the client's events, the overlap policy and, if native, the model."""
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
            supports_session_resume=resumable,
            supports_barge_in=True,
            supports_playback_ack=True,
            supports_session_lease=resumable,
            supports_audio_truncate=True,
            supports_client_commit=self.supports_client_commit,
            input_modes=("append_audio_chunk",),
            signal_sources=self.signal_sources,
            target_barge_in_latency_ms=self.chunk_period_ms,
            raw={
                "supports_input_append": True,
                "supports_multi_session": limits.max_sessions > 1,
                **self.extra_capabilities,
            },
        )
