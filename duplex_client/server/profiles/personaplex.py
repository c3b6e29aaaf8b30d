"""PersonaPlex-style: continuous speech in, speech out on an 80 ms grid; 24 kHz float input."""

from __future__ import annotations

from duplex_client.server.profiles.base import Profile

PERSONAPLEX = Profile(
    name="personaplex",
    implementation_level="model_native_duplex",
    required_modalities=("audio",),
    optional_modalities=(),
    first_unit_ms=80,
    chunk_period_ms=80,
    default_input_format="pcm_f32le",
    default_input_rate=24000,
    resumable=False,
    barge_in=False,
    fixed_persona=True,
    fixed_voice=True,
    supports_audio_truncate=False,
    supports_client_commit=False,
    signal_sources=("model_native",),
    extra_capabilities={"input_audio_format": "pcm_f32le", "input_sample_rate_hz": 24000},
)
