"""The `session` object of `session.created` / `session.updated` (protocol.md §2.1).

It joins the session's configuration (`settings.SessionSettings`) with what only the running
session knows: its id, state, epoch, capabilities, playback totals and live turn state.
"""

from __future__ import annotations

from typing import Any

from duplex_client.protocol.objects import (
    AudioFormat,
    AudioInfo,
    AudioInputInfo,
    AudioOutputInfo,
    PlaybackTotals,
    SessionObject,
)
from duplex_client.protocol.requests import G711_FORMATS
from duplex_client.server.live_state import LiveState
from duplex_client.server.settings import SessionSettings


def build_session_object(
    settings: SessionSettings,
    *,
    session_id: str,
    state: str,
    epoch: int,
    capabilities: dict[str, Any],
    playback: PlaybackTotals,
    live: LiveState,
) -> SessionObject:
    """The `session` object for these settings and this state (no `ref_audio`)."""
    cap = settings.max_output_tokens
    return SessionObject(
        id=session_id,
        state=state,
        turn_state=live.turn_state,
        epoch=epoch,
        turn_id=live.turn_id,
        active_request_id=live.active_request_id,
        active_response_id=live.active_response_id,
        active_response_turn_id=live.active_response_turn_id,
        model=settings.model,
        modalities=list(settings.modalities),
        output_modalities=list(settings.modalities),
        input_audio_format=settings.input_format,
        sample_rate_hz=settings.input_rate,
        audio=AudioInfo(
            input=AudioInputInfo(
                format=AudioFormat(
                    type=_format_type(settings.input_format), rate=settings.input_rate
                ),
                sample_rate_hz=settings.input_rate,
                turn_detection=settings.turn_detection,
                noise_reduction=settings.noise_reduction,
                channels=settings.input_channels,
            ),
            output=AudioOutputInfo(
                format=AudioFormat(rate=settings.output_rate),
                sample_rate_hz=settings.output_rate,
                voice=settings.voice,
            ),
        ),
        turn_detection=settings.turn_detection,
        overlap_policy=settings.overlap_policy,
        overlap_short_ack_ms=settings.overlap_short_ack_ms,
        overlap_barge_in_ms=settings.overlap_barge_in_ms,
        overlap_silence_rms=settings.overlap_silence_rms,
        input_audio_transcription=settings.input_audio_transcription,
        input_audio_noise_reduction=settings.noise_reduction,
        playback_commit_policy=settings.playback_commit_policy,
        instructions=settings.instructions,
        voice=settings.voice,
        temperature=settings.temperature,
        max_response_output_tokens=cap,
        max_tokens=cap if isinstance(cap, int) else None,
        speed=settings.speed,
        tracing=settings.tracing,
        idle_timeout_s=settings.idle_timeout_s,
        extra_body=dict(settings.extra_body),
        capabilities=capabilities,
        playback=playback,
        tools=[dict(t) for t in settings.tools],
        tool_choice=settings.tool_choice,
        extras=dict(settings.extras),
    )


def _format_type(input_format: str) -> str:
    """The `audio.input.format.type` of an input encoding (`audio/pcm` for both PCMs)."""
    return f"audio/{input_format}" if input_format in G711_FORMATS else "audio/pcm"
