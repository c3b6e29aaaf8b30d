"""Nemotron VoiceChat-style: 80 ms units in one continuous stream, ended by `session.end`."""

from __future__ import annotations

from duplex_client.server.profiles.base import Profile

NEMOTRON = Profile(
    name="nemotron",
    implementation_level="model_native_duplex",
    required_modalities=("audio",),
    optional_modalities=(),
    first_unit_ms=80,
    chunk_period_ms=80,
    barge_in=False,
    supports_audio_truncate=False,
    response_lifecycle="continuous_stream",
    supports_tools=True,
    signal_sources=("model_native", "client_event"),
)
